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
from distdx.estimate.terms import Bound

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
    if setup.dtype == "fp32" or setup.amp:
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


def _replicated(shape: ModelShape, setup: Setup) -> int | float:
    """Parameters a rank holds whole (not ZeRO-partitioned): its model-parallel share, with the routed experts
    further split over the expert-parallel group. ZeRO partitions (over dp x cp for the rest, over dp x cp / ep
    for experts) come to the same params / (tp * pp * dp * cp) per GPU with or without expert parallelism."""
    if setup.ep == 1:
        return _local(shape.params, setup)
    return _local(shape.params - shape.expert_params, setup) + shape.expert_params / (setup.ep * setup.tp * setup.pp)


def _largest(shape: ModelShape, setup: Setup) -> int | float:
    """The largest module ZeRO-3 gathers (DeepSpeed's largest_layer_params), split by tensor parallelism; when it
    is a layer's fused routed experts, expert parallelism splits it too (the embedding may then be the largest)."""
    largest: int | float = shape.largest_layer_params
    if setup.ep > 1 and shape.moe_layers and largest == shape.expert_params // shape.moe_layers:
        largest = max(largest / setup.ep, shape.vocab * shape.hidden)
    return _local(largest, setup) if setup.tp > 1 else largest


AMP_WEIGHT_COPY = 2  # bytes per parameter: the fp16/bf16 copy autocast makes of each weight, saved for backward


def model_states(shape: ModelShape, setup: Setup, term: Bound | None = None) -> ModelStates:
    """Model states per GPU and per node (see docs/estimate.md, "Model states").

    ``total_gpus`` of DeepSpeed is the group ZeRO shards over (dp x cp); ``num_nodes`` and
    ``num_gpus_per_node`` are the job's. Every GPU-side expression keeps DeepSpeed's order of
    operations, so that the totals are the same integers.

    Two layouts DeepSpeed's estimators do not cover come on top: torch autocast (``amp``, no ZeRO) keeps fp32
    weights and gradients (4 + 4) and the 16-bit copies of the weights it made in forward (2, saved for backward:
    10 bytes per parameter before the optimizer); FSDP/ZeRO-3 with pipeline parallelism keeps the stage's weights
    and gradients unsharded across micro-batches (``fsdp_pp_unsharded`` bytes per parameter of the stage), as it
    keeps its gathered weights (not the gradients) without pipeline parallelism when told not to reshard after
    forward. With expert parallelism a rank holds whole only its share of the routed experts
    (:func:`_replicated`)."""
    term = term or Bound()
    b = state_bytes(setup, shape)
    total_params = _local(shape.params, setup)
    whole = _replicated(shape, setup)
    largest = _largest(shape, setup)
    n = setup.shard
    gpn, nodes, abf = setup.gpus_per_node, setup.nodes, setup.buffer_factor
    gpus_factor = 1 / nodes
    offload_opt = setup.offload_optimizer != "none"
    offload_par = setup.offload_params != "none"
    stage = setup.zero_stage
    gpu: dict[str, int]
    if stage == 0:
        gpu = {"params": int(b.param * whole), "gradients": int(b.grad * whole),
               "master_weights": int(b.master * whole), "optimizer_states": int(b.optimizer * whole)}
        gpu["total"] = int((b.param + b.grad + b.master + b.optimizer) * whole)
        if setup.amp:
            gpu["amp_weight_copies"] = int(AMP_WEIGHT_COPY * whole)
            gpu["total"] += gpu["amp_weight_copies"]
        cpu = total_params * 4 * gpn * abf
    elif stage in (1, 2):
        replicated_grads = stage == 1
        if offload_opt:
            gpu = {"params": int(b.param * whole)}
            if replicated_grads:
                gpu["gradients"] = int(b.grad * whole)
            gpu["total"] = sum(gpu.values())
            cpu = total_params * max(4 * n, b.offloaded) * abf
        else:
            k = b.partitioned - (b.grad if replicated_grads else 0)
            gpu = {"params": int(b.param * whole),
                   "gradients": int(b.grad * whole) if replicated_grads else int(b.grad * total_params / n),
                   "fp32_gradients": int(b.fp32_grad * total_params / n),
                   "master_weights": int(b.master * total_params / n),
                   "optimizer_states": int(b.optimizer * total_params / n)}
            fixed = b.param * whole + (b.grad * whole if replicated_grads else 0)
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
        if setup.pp > 1:
            gpu["pp_unsharded"] = int(term("fsdp_pp_unsharded") * whole)
            gpu["total"] += gpu["pp_unsharded"]
        elif not setup.reshard_after_forward:
            # gradients are still reduce-scattered every backward; only the gathered 16-bit weights stay
            gpu["unsharded_weights"] = int(b.param * whole)
            gpu["total"] += gpu["unsharded_weights"]
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


# Eager attention keeps per score the softmax output (2), the dropout mask (1) and the dropout output (2):
# Korthikanti's 5 bytes. Autocast runs softmax, and so the dropout after it, in fp32: 4 + 1 + 4.
AMP_SCORE_BYTES = 9
GATED_FAMILIES = ("llama", "mistral", "qwen2", "qwen3", "mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v3")


def _layer_elements(shape: ModelShape, term: Bound) -> tuple[float, float, float]:
    """Values saved per token by one (average) layer with nothing recomputed: (replicated under tensor
    parallelism without sequence parallelism, split by tensor parallelism, the matmul outputs).

    - GPT-style blocks (gpt2, gpt_neox, opt, a bare --params): Korthikanti et al. 2022, section 4.1, 34 bytes per
      token and hidden unit in 16 bit = 17h values, of which 5h (layer norms, dropout masks) are replicated
      across tensor-parallel ranks; the MLP part (12h of it for f = 4h) scales with f.
    - Llama-style blocks (gated MLP, grouped-query attention, no dropout): the two RMSNorm inputs and outputs (4h,
      replicated), q and the attention output (heads*head_dim each; v_head_dim for DeepSeek's latent attention),
      k and v (kv_heads*head_dim each), and for a dense MLP the gate and up projections, SiLU(gate) and their
      product (4f).
    - Mixture-of-experts layers: each token's experts_per_token routed experts keep 4*expert_ffn values each (times
      ``expert_imbalance``: the busiest expert-parallel rank gets more than its share of tokens), shared experts
      4*shared_ffn, and the token dispatch keeps the permuted inputs and outputs (2*experts_per_token*h).
    The matmul outputs are what torchtitan's per-op selective checkpointing chooses from."""
    h, f = shape.hidden, shape.ffn
    if not (shape.model_type and shape.model_type.lower() in GATED_FAMILIES):
        return 5 * h, 4 * h + 2 * f, 3 * h + h + f + h
    q = shape.heads * shape.head_dim
    out = shape.heads * (shape.v_head_dim or shape.head_dim)
    kv = shape.kv_heads * (shape.head_dim + (shape.v_head_dim or shape.head_dim))
    attention, attention_mm = q + out + kv, q + kv + h
    dense, dense_mm = 4 * f, 2 * f + h
    if not shape.moe_layers:
        return 4 * h, attention + dense, attention_mm + dense_mm
    k, ef = shape.experts_per_token, shape.expert_ffn
    routed = k * 4 * ef * term("expert_imbalance")
    moe = routed + 4 * shape.shared_ffn + 2 * k * h
    moe_mm = k * (2 * ef + h) * term("expert_imbalance") + 2 * shape.shared_ffn + (h if shape.shared_ffn else 0)
    share = shape.moe_layers / shape.layers
    return (4 * h, attention + share * moe + (1 - share) * dense,
            attention_mm + share * moe_mm + (1 - share) * dense_mm)


def activation_bytes_per_layer(shape: ModelShape, setup: Setup, checkpointing: str | None = None,
                               term: Bound | None = None) -> dict[str, float]:
    """Activation bytes one transformer layer keeps for the backward pass, per micro-batch and GPU.

    - none: every saved value (:func:`_layer_elements`), the replicated part split by tensor parallelism only with
      sequence parallelism; plus, with eager attention, the s x s scores, softmax and dropout mask (5*a*s*s*b
      bytes / t, Korthikanti et al.), which flash and sdpa kernels never store
    - selective (Megatron): the attention core is recomputed, so the scores term disappears
    - selective-op (torchtitan's per-op SAC): the layer input and attention output are kept and every second
      matmul output; the rest is recomputed
    - full: only the layer's input, s*b*h values

    Context parallel splits the sequence: s -> s/cp. Values are 2 bytes, 4 in fp32, and between the two under
    torch autocast, where layer-norm outputs and the residual stream stay fp32 (``amp_activation_factor``: 42 of
    Korthikanti's 34 bytes per token and hidden unit); ``activation_factor`` covers tensors the counts leave out."""
    term = term or Bound()
    ckpt = checkpointing or setup.checkpointing
    s = setup.seq_len / setup.cp
    b, h, a, t = setup.micro_batch, shape.hidden, shape.heads, setup.tp
    sp = setup.sequence_parallel or t == 1
    value = 4 if (setup.dtype == "fp32" and not setup.amp) else 2
    scale = value * (term("amp_activation_factor") if setup.amp else 1)
    tokens = s * b
    if ckpt == "full":
        return {"stored": tokens * h / (t if sp else 1) * scale, "attention_scores": 0.0}
    replicated, split, matmuls = _layer_elements(shape, term)
    if ckpt == "selective-op":
        elements = (2 * h + matmuls / 2) / t
    else:
        elements = replicated / (t if sp else 1) + split / t
    stored = tokens * elements * scale * term("activation_factor")
    eager = setup.attention == "eager" and ckpt == "none"
    per_score = AMP_SCORE_BYTES if setup.amp else 5 * value / 2
    scores = per_score * a * s * s * b / t if eager else 0.0
    return {"stored": stored, "attention_scores": scores}


def loss_bytes(shape: ModelShape, setup: Setup, term: Bound | None = None) -> float:
    """The output layer's loss at its peak, on the GPU that holds the head: tokens x vocabulary logits, split by
    tensor parallelism (Megatron's vocab-parallel cross-entropy, torchtitan's loss parallel), times the bytes per
    logit of the loss implementation (``logit_bytes`` for a plain cross-entropy over upcast logits,
    ``chunked_loss``, ``fused_loss``); none for a small head (classifiers)."""
    term = term or Bound()
    if setup.loss == "none":
        return 0.0
    per_logit = term({"full": "logit_bytes", "chunked": "chunked_loss", "fused": "fused_loss"}[setup.loss])
    return setup.seq_len / setup.cp * setup.micro_batch * shape.vocab / setup.tp * per_logit


def activations(shape: ModelShape, setup: Setup, term: Bound | None = None) -> dict[str, int]:
    """Activation memory of the GPU that holds the most.

    Under 1F1B the first pipeline stage keeps pp micro-batches of its ceil(L/pp) layers in flight (Korthikanti
    et al., section 4.2.3); the last stage keeps one micro-batch of its layers plus the loss. Without pipeline
    parallelism that is all L layers plus the loss. Full recompute adds the one layer being recomputed, twice
    (its saved tensors and their gradients). The embedding output (s*b*h per micro-batch in flight) and the
    output layer's input (4*s*b*h/t) come on top."""
    term = term or Bound()
    per_layer = activation_bytes_per_layer(shape, setup, term=term)
    one = per_layer["stored"] + per_layer["attention_scores"]
    stage_layers = math.ceil(shape.layers / setup.pp)
    s = setup.seq_len / setup.cp
    b, h, t = setup.micro_batch, shape.hidden, setup.tp
    sp_div = t if (setup.sequence_parallel or t == 1) else 1
    loss = loss_bytes(shape, setup, term)
    first = stage_layers * setup.pp * one + s * b * h * setup.pp / sp_div
    last = stage_layers * one + 4 * s * b * h / t + loss
    out: dict[str, int] = {"per_layer": int(one)}
    if setup.pp == 1 or first <= last:
        out.update(layers=int(stage_layers * one), embedding_output=int(s * b * h / sp_div + 4 * s * b * h / t),
                   loss=int(loss))
    else:
        out.update(layers=int(stage_layers * setup.pp * one), embedding_output=int(s * b * h * setup.pp / sp_div),
                   loss=0)
    if setup.checkpointing == "full":
        # the recomputed layer's saved tensors, and the gradients of as many values while its backward runs
        live = activation_bytes_per_layer(shape, setup, checkpointing="none", term=term)
        out["recompute_layer"] = int(2 * (live["stored"] + live["attention_scores"]))
    out["total"] = out["layers"] + out.get("recompute_layer", 0) + out["embedding_output"] + out["loss"]
    return out


WEIGHT_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2, "int8": 1, "int4": 0.5}


def weight_bytes(shape: ModelShape, setup: Setup) -> dict[str, int]:
    """Inference weights per GPU. In 16/32 bit: params * bytes / (tp * pp). Quantised (int8, int4 weight-only, as
    torchao's ``int8_weight_only`` / ``int4_weight_only`` and bitsandbytes do it) the linear layers hold 1 or 0.5
    byte per weight plus their scales: one 16-bit scale per output row for int8, a 16-bit scale and zero point per
    ``quant_group`` weights for int4; the embedding (V*h) and the norms stay 16-bit. The LM head is quantised as
    a linear layer (torchao); bitsandbytes keeps it in 16 bits, a difference of V*h bytes or so. With expert
    parallelism each rank holds its share of the routed experts."""
    mp = setup.tp * setup.pp
    held = _replicated(shape, setup)  # params / (tp * pp), with the routed experts split over ep
    if setup.dtype not in ("int8", "int4"):
        w = int(held * WEIGHT_BYTES[setup.dtype])
        return {"weights": w, "total": w}
    kept = (shape.vocab * shape.hidden + (2 * shape.layers + 1) * shape.hidden) / mp
    scales = 2 / shape.hidden if setup.dtype == "int8" else 4 / setup.quant_group
    quantised = int(max(0.0, held - kept) * (WEIGHT_BYTES[setup.dtype] + scales))
    sixteen = int(kept * 2)
    return {"quantised_weights": quantised, "weights_16bit": sixteen, "total": quantised + sixteen}


def inference(shape: ModelShape, setup: Setup) -> tuple[dict[str, int], dict[str, int], int]:
    """(weights, activations {kv_cache, workspace}, per-node CPU) per GPU for inference.

    - weights: :func:`weight_bytes`
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
    weights = weight_bytes(shape, setup)
    kv_per_rank = max(1, math.ceil(shape.kv_heads / t))
    kv = int(2 * math.ceil(shape.layers / setup.pp) * kv_per_rank * shape.head_dim * s * b * kvb)
    layer = b * s * (2 * shape.hidden + 2 * shape.ffn / t) * act_b
    if setup.attention == "eager":
        layer += b * shape.heads / t * s * s * act_b
    logits = b * s * shape.vocab / t * 4
    workspace = int(max(layer, logits))
    cpu = int(shape.params * wb / (t * setup.pp) * setup.gpus_per_node)
    return (weights,
            {"kv_cache": kv, "workspace": workspace, "total": kv + workspace}, cpu)
