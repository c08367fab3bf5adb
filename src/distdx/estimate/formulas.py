"""The formulas, one function per quantity; docs/estimate.md derives each one and cites it.

Model states follow DeepSpeed's estimators (``estimate_zero2_model_states_mem_needs`` in
deepspeed/runtime/zero/stage_1_and_2.py and ``estimate_zero3_model_states_mem_needs`` in
stage3.py) term for term, written with per-parameter byte counts so that other precisions and
optimizers fit the same accounting; with the defaults (16-bit mixed precision, Adam, tp = pp = 1)
the expressions are DeepSpeed's own and give the same integers. Activations follow Korthikanti
et al., "Reducing Activation Recomputation in Large Transformer Models" (2022). Inference is
weights + KV cache + one forward pass's workspace.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from distdx.estimate.models import ModelShape, Setup

FP32 = 4


@dataclass(frozen=True)
class StateBytes:
    """Bytes per parameter of each model state (ZeRO paper, section 3.1: 2Ψ + 2Ψ + KΨ)."""

    param: int  # working copy of the weights (2 in 16-bit mixed precision, 4 in fp32)
    grad: int  # working gradients
    fp32_grad: int  # fp32 gradient partition DeepSpeed's ZeRO optimizer keeps for the step (mixed precision)
    master: int  # fp32 master weights (mixed precision)
    optimizer: float  # optimizer states

    @property
    def partitioned(self) -> float:
        """What DeepSpeed's ZeRO-2 estimator partitions: 18 = 2 + 4 + 4 + 8 for mixed-precision Adam."""
        return self.grad + self.fp32_grad + self.master + self.optimizer

    @property
    def offloaded(self) -> float:
        """What optimizer offload keeps in host memory: fp32 weights, fp32 grads, states (16 for Adam)."""
        return FP32 + FP32 + self.optimizer

    @property
    def zero3_partitioned(self) -> float:
        """ZeRO-3's partition: weights + one fp32 gradient + master + states (18 for mixed Adam)."""
        return self.param + FP32 + self.master + self.optimizer


def optimizer_state_bytes(optimizer: str, shape: ModelShape) -> float:
    """Bytes of optimizer state per parameter.

    adam/adamw: two fp32 moments (8). adam8bit: two 8-bit moments (2; the per-block scales,
    one fp32 per 2048 values in bitsandbytes, are left out). sgd: none. sgd-momentum: one fp32
    buffer (4). adafactor: a factored second moment, one fp32 row and column statistic per matrix
    (4 * (1/h + 1/f) per parameter for the h x f matrices), no first moment (beta1 = None, the
    Hugging Face default)."""
    if optimizer in ("adam", "adamw"):
        return 8
    if optimizer == "adam8bit":
        return 2
    if optimizer == "sgd":
        return 0
    if optimizer == "sgd-momentum":
        return 4
    return FP32 * (1 / shape.hidden + 1 / shape.ffn)


def state_bytes(setup: Setup, shape: ModelShape) -> StateBytes:
    s = optimizer_state_bytes(setup.optimizer, shape)
    s = int(s) if float(s).is_integer() else s
    if setup.dtype == "fp32":
        return StateBytes(param=4, grad=4, fp32_grad=0, master=0, optimizer=s)
    return StateBytes(param=2, grad=2, fp32_grad=4 if setup.zero_stage >= 1 else 0, master=4, optimizer=s)


@dataclass(frozen=True)
class ModelStates:
    gpu: dict[str, int]  # component -> bytes per GPU, with "total"
    cpu: int  # bytes per node
    nvme: int  # bytes per node


def _local(n: int, setup: Setup) -> int | float:
    """Parameters held by one model-parallel rank (tensor x pipeline parallel split them)."""
    mp = setup.tp * setup.pp
    return n if mp == 1 else n / mp


def model_states(shape: ModelShape, setup: Setup) -> ModelStates:
    """Model states per GPU and per node (see docs/estimate.md, "Model states").

    ``total_gpus`` of DeepSpeed is the group ZeRO shards over (dp x cp); ``num_nodes`` and
    ``num_gpus_per_node`` are the job's. Every GPU-side expression keeps DeepSpeed's order of
    operations, so that the totals are the same integers."""
    b = state_bytes(setup, shape)
    total_params = _local(shape.params, setup)
    largest = _local(shape.largest_layer_params, setup) if setup.tp > 1 else shape.largest_layer_params
    n = setup.shard
    gpn, nodes, abf = setup.gpus_per_node, setup.nodes, setup.buffer_factor
    gpus_factor = 1 / nodes
    offload_opt = setup.offload_optimizer != "none"
    offload_par = setup.offload_params != "none"
    stage = setup.zero_stage
    gpu: dict[str, int]
    if stage == 0:
        gpu = {"params": int(b.param * total_params), "gradients": int(b.grad * total_params),
               "master_weights": int(b.master * total_params), "optimizer_states": int(b.optimizer * total_params)}
        gpu["total"] = int((b.param + b.grad + b.master + b.optimizer) * total_params)
        cpu = total_params * 4 * gpn * abf
    elif stage in (1, 2):
        replicated_grads = stage == 1
        if offload_opt:
            gpu = {"params": int(b.param * total_params)}
            if replicated_grads:
                gpu["gradients"] = int(b.grad * total_params)
            gpu["total"] = sum(gpu.values())
            cpu = total_params * max(4 * n, b.offloaded) * abf
        else:
            k = b.partitioned - (b.grad if replicated_grads else 0)
            gpu = {"params": int(b.param * total_params),
                   "gradients": int(b.grad * total_params) if replicated_grads else int(b.grad * total_params / n),
                   "fp32_gradients": int(b.fp32_grad * total_params / n),
                   "master_weights": int(b.master * total_params / n),
                   "optimizer_states": int(b.optimizer * total_params / n)}
            fixed = b.param * total_params + (b.grad * total_params if replicated_grads else 0)
            gpu["total"] = int(fixed + int(k * total_params / n))
            cpu = total_params * 4 * gpn * abf
    else:
        largest_layer_memory = 4 * largest
        gather = {"gathered_layer": int(largest_layer_memory)}
        if offload_opt and offload_par:
            gpu = {**gather, "total": int(largest_layer_memory)}
            k = (b.param if setup.dtype != "fp32" else 0) + b.offloaded
        elif offload_opt:
            gpu = {**gather, "params": int(b.param * total_params / n)}
            gpu["total"] = int(largest_layer_memory + int(b.param * total_params / n))
            k = b.offloaded
        else:
            gpu = {**gather, "params": int(b.param * total_params / n),
                   "fp32_gradients": int(FP32 * total_params / n),
                   "master_weights": int(b.master * total_params / n),
                   "optimizer_states": int(b.optimizer * total_params / n)}
            gpu["total"] = int(largest_layer_memory + int(b.zero3_partitioned * total_params / n))
        if offload_opt:
            if setup.zero_init:
                cpu = shape.params * k * gpus_factor * abf
            else:
                cpu = shape.params * max(4 * gpn, k * gpus_factor) * abf
        elif setup.zero_init:
            cpu = largest * 4 * gpn * abf
        else:
            cpu = total_params * 4 * gpn * abf
    nvme = 0
    if setup.offload_optimizer == "nvme" or setup.offload_params == "nvme":
        # DeepSpeed's estimators stop at CPU offload. With NVMe (ZeRO-Infinity) the states that
        # CPU offload would hold go to the node's drives, and host memory keeps pinned staging
        # buffers of about one gathered layer per GPU.
        nvme = int(cpu)
        cpu = largest * 4 * gpn * abf
    return ModelStates(gpu=gpu, cpu=int(cpu), nvme=nvme)


def activation_bytes_per_layer(shape: ModelShape, setup: Setup, checkpointing: str | None = None) -> dict[str, float]:
    """Activation bytes one transformer layer keeps for the backward pass, per micro-batch
    (Korthikanti et al. 2022, section 4, in bytes for 16-bit activations):

    - no parallelism:                     s*b*h*(34 + 5*a*s/h)
    - tensor parallel t:                  s*b*h*(10 + 24/t + 5*a*s/(h*t))
    - tensor + sequence parallel:         s*b*h/t*(34 + 5*a*s/h)
    - selective recompute (attention core recomputed, or never stored with flash attention):
      the 5*a*s/h term disappears
    - full recompute: only the layer's input, 2*s*b*h (/t with sequence parallel)

    Context parallel splits the sequence: s -> s/cp. fp32 activations double the figure."""
    ckpt = checkpointing or setup.checkpointing
    s = setup.seq_len / setup.cp
    b, h, a, t = setup.micro_batch, shape.hidden, shape.heads, setup.tp
    sp = setup.sequence_parallel or t == 1
    scale = 2 if setup.dtype == "fp32" else 1
    if ckpt == "full":
        stored = 2 * s * b * h / (t if sp else 1)
        return {"stored": stored * scale, "attention_scores": 0.0}
    linear = 34 * s * b * h / t if sp else s * b * h * (10 + 24 / t)
    scores = 0.0 if (ckpt == "selective" or setup.flash_attention) else 5 * a * s * s * b / t
    return {"stored": linear * scale, "attention_scores": scores * scale}


def activations(shape: ModelShape, setup: Setup) -> dict[str, int]:
    """Activation memory of the GPU that holds the most: the first pipeline stage under 1F1B, which
    keeps pp micro-batches of its L/pp layers in flight, i.e. L layers' worth (Korthikanti et al.,
    section 4.2.3). Full recompute adds the one layer being recomputed. Embedding dropout masks
    (s*b*h*pp/t) and, without pipeline parallelism, the output layer and loss (4*s*b*h/t*(1 + v/h))."""
    per_layer = activation_bytes_per_layer(shape, setup)
    layers = shape.layers
    out: dict[str, int] = {"per_layer": int(per_layer["stored"] + per_layer["attention_scores"]),
                           "layers": int(layers * (per_layer["stored"] + per_layer["attention_scores"]))}
    if setup.checkpointing == "full":
        live = activation_bytes_per_layer(shape, setup, checkpointing="none")
        if setup.flash_attention:
            live["attention_scores"] = 0.0
        out["recompute_layer"] = int(live["stored"] + live["attention_scores"])
    s = setup.seq_len / setup.cp
    b, h, t = setup.micro_batch, shape.hidden, setup.tp
    sp_div = t if (setup.sequence_parallel or t == 1) else 1
    out["embedding_output"] = int(s * b * h * setup.pp / sp_div
                                  + (4 * s * b * h / t * (1 + shape.vocab / h) if setup.pp == 1 else 0))
    out["total"] = out["layers"] + out.get("recompute_layer", 0) + out["embedding_output"]
    return out


WEIGHT_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2, "int8": 1, "int4": 0.5}


def inference(shape: ModelShape, setup: Setup) -> tuple[dict[str, int], dict[str, int], int]:
    """(weights, activations {kv_cache, workspace}, per-node CPU) per GPU for inference.

    - weights: params * bytes / (tp * pp)
    - KV cache: 2 * layers/pp * kv_heads/tp * head_dim * seq * batch * bytes (K and V; a key/value
      head is replicated when tp exceeds the number of kv heads)
    - workspace: the largest transient of a prefill pass, the larger of one layer's buffers
      (b*s*(2h + 2f/tp) values, plus the b*a/tp*s^2 attention scores without flash attention)
      and the logits b*s*V/tp in fp32
    - CPU per node: each process reads its shard of the checkpoint before moving it to its GPU."""
    wb = WEIGHT_BYTES[setup.dtype]
    kvb = WEIGHT_BYTES[setup.kv_dtype or ("fp32" if setup.dtype == "fp32" else "bf16")]
    act_b = 4 if setup.dtype == "fp32" else 2
    t, s, b = setup.tp, setup.seq_len, setup.micro_batch
    weights = int(shape.params * wb / (t * setup.pp))
    kv_per_rank = max(1, math.ceil(shape.kv_heads / t))
    kv = int(2 * math.ceil(shape.layers / setup.pp) * kv_per_rank * shape.head_dim * s * b * kvb)
    layer = b * s * (2 * shape.hidden + 2 * shape.ffn / t) * act_b
    if not setup.flash_attention:
        layer += b * shape.heads / t * s * s * act_b
    logits = b * s * shape.vocab / t * 4
    workspace = int(max(layer, logits))
    cpu = int(shape.params * wb / (t * setup.pp) * setup.gpus_per_node)
    return ({"weights": weights, "total": weights},
            {"kv_cache": kv, "workspace": workspace, "total": kv + workspace}, cpu)
