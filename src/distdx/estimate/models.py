"""Typed records of the estimator: the model's shape (``ModelShape``), the run being planned
(``Setup``), the figures (``Figures``), a proposed change (``Suggestion``) and the whole answer
(``Estimate``). All are frozen; :meth:`Estimate.to_dict` is the ``--format json`` document.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Mapping


def number_text(value: int) -> str:
    """An integer as an error message shows it: written out up to 30 digits, described past that."""
    return str(value) if abs(value) < 10**30 else f"a {len(str(abs(value)))}-digit number"

MODES = ("train", "infer")
TRAIN_DTYPES = ("fp32", "fp16", "bf16")
INFER_DTYPES = TRAIN_DTYPES + ("int8", "int4")
OPTIMIZERS = ("adam", "adamw", "adam8bit", "sgd", "sgd-momentum", "adafactor")
OFFLOAD_DEVICES = ("none", "cpu", "nvme")
CHECKPOINTING = ("none", "selective", "selective-op", "full")
ATTENTION = ("flash", "sdpa", "eager")
LOSSES = ("full", "chunked", "fused", "none")


@dataclass(frozen=True)
class ModelShape:
    """What the formulas need to know about the model.

    ``fields_used`` names the config.json fields read (or the command-line options); ``assumed``
    lists the dimensions that were not given and were derived (see docs/estimate.md)."""

    params: int
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    vocab: int
    largest_layer_params: int
    source: str
    model_type: str | None = None
    fields_used: Mapping[str, object] = field(default_factory=dict)
    assumed: tuple[str, ...] = ()
    # mixture of experts (0 for dense models): routed experts per MoE layer, experts each token goes to, the
    # routed expert's MLP width, the shared experts' total MLP width, how many layers are MoE, the parameters
    # of all routed experts (what expert parallelism splits)
    experts: int = 0
    experts_per_token: int = 0
    expert_ffn: int = 0
    shared_ffn: int = 0
    moe_layers: int = 0
    expert_params: int = 0
    v_head_dim: int | None = None  # multi-head latent attention (DeepSeek): values are narrower than q/k heads

    def to_dict(self) -> dict:
        data = asdict(self)
        data["fields_used"] = dict(self.fields_used)
        data["assumed"] = list(self.assumed)
        return data


@dataclass(frozen=True)
class Setup:
    """The run being planned. Parallel sizes are resolved: ``tp * pp * cp * dp == gpus_per_node * nodes``
    (see :func:`distdx.estimate.engine.resolve_parallel`)."""

    mode: str = "train"
    dtype: str = "bf16"
    optimizer: str = "adamw"
    zero_stage: int = 0
    offload_optimizer: str = "none"
    offload_params: str = "none"
    zero_init: bool = True
    tp: int = 1
    pp: int = 1
    cp: int = 1
    dp: int = 1
    ep: int = 1  # expert parallel: routed experts split over ep ranks taken from the dp x cp group
    gpus_per_node: int = 1
    nodes: int = 1
    micro_batch: int = 1
    seq_len: int = 2048
    checkpointing: str = "none"  # selective: Megatron's (attention core); selective-op: torchtitan's per-op SAC
    attention: str = "flash"  # flash | sdpa (no s x s scores stored) | eager (scores, softmax, dropout stored)
    sequence_parallel: bool = False
    buffer_factor: float = 1.5  # DeepSpeed's additional_buffer_factor for CPU memory
    kv_dtype: str | None = None  # inference: dtype of the KV cache (default: 16-bit, or fp32 for fp32)
    loss: str = "full"  # full | chunked | fused cross-entropy over the vocabulary; none: a small head (classifier)
    amp: bool = False  # torch autocast: fp32 weights and gradients, 16-bit weight copies (fp16/bf16 only)
    quant_group: int = 128  # inference int4: values per scale/zero-point group
    reshard_after_forward: bool = True  # ZeRO-3/FSDP: False keeps gathered weights between forward and backward

    @property
    def flash_attention(self) -> bool:
        """Whether the s x s attention scores are never stored (flash or sdpa); kept for --format json."""
        return self.attention != "eager"

    @property
    def world_size(self) -> int:
        return self.gpus_per_node * self.nodes

    @property
    def shard(self) -> int:
        """The group ZeRO partitions model states over: data parallel x context parallel."""
        return self.dp * self.cp

    def with_changes(self, **changes: object) -> "Setup":
        return replace(self, **changes)

    def to_dict(self) -> dict:
        return {**asdict(self), "flash_attention": self.flash_attention, "world_size": self.world_size}


@dataclass(frozen=True)
class Figures:
    """Bytes. ``model_states`` and ``activations`` map component -> bytes and both carry a ``total``;
    their sum is the allocated peak. ``runtime`` holds what comes on top (allocator reserve, CUDA context,
    NCCL buffers); ``per_gpu`` is the figure to compare with the GPU's memory, what nvidia-smi shows.
    ``ranges`` maps ``allocated_peak`` / ``reserved`` / ``total`` to (low, high) from the uncertain terms
    (terms.yaml). ``per_node_cpu`` is host memory per node, ``per_node_nvme`` what offload puts on NVMe."""

    model_states: Mapping[str, int]
    activations: Mapping[str, int]
    per_gpu: int
    per_node_cpu: int
    per_node_nvme: int = 0
    runtime: Mapping[str, int] = field(default_factory=dict)
    ranges: Mapping[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def allocated_peak(self) -> int:
        return int(self.model_states["total"]) + int(self.activations["total"])

    @property
    def reserved(self) -> int:
        return self.allocated_peak + int(self.runtime.get("allocator_reserve", 0))

    def kind(self, name: str) -> int:
        """``total`` (per_gpu), ``reserved`` or ``allocated_peak``."""
        return self.per_gpu if name == "total" else getattr(self, name)

    def low(self, name: str) -> int:
        return self.ranges.get(name, (self.kind(name),) * 2)[0]

    def high(self, name: str) -> int:
        return self.ranges.get(name, (self.kind(name),) * 2)[1]

    def to_dict(self) -> dict:
        return {"model_states": dict(self.model_states), "activations": dict(self.activations),
                "runtime": dict(self.runtime), "allocated_peak": self.allocated_peak, "reserved": self.reserved,
                "total": self.per_gpu, "range": {k: list(v) for k, v in self.ranges.items()}}


@dataclass(frozen=True)
class Suggestion:
    """A configuration that fits, the changes that lead to it, their assumed cost and its figures."""

    changes: tuple[str, ...]
    cost: float  # assumed extra step time, as a fraction (0.33 = a third slower); see costs.yaml
    cost_reasons: tuple[str, ...]
    setup: Setup
    figures: Figures

    def to_dict(self) -> dict:
        return {"changes": list(self.changes), "cost": round(self.cost, 4), "cost_reasons": list(self.cost_reasons),
                "setup": self.setup.to_dict(), "per_gpu": self.figures.to_dict(),
                "per_node_cpu": self.figures.per_node_cpu, "per_node_nvme": self.figures.per_node_nvme}


@dataclass(frozen=True)
class Estimate:
    """The answer of :func:`distdx.estimate.estimate`. ``fits`` is None when no GPU memory was
    stated or detected; ``suggestions`` is empty when it fits (or nothing in the search space fits,
    then ``notes`` says so)."""

    model: ModelShape
    setup: Setup
    figures: Figures
    gpu_memory: int | None = None
    gpu_memory_source: str | None = None  # "stated" | "detected: <GPU name>"
    cpu_memory: int | None = None  # host memory per node, when stated
    fits: bool | None = None
    suggestions: tuple[Suggestion, ...] = ()
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()  # terms the layout relies on that no measurement backs

    def to_dict(self) -> dict:
        return {
            "inputs": {"model": self.model.to_dict(), "setup": self.setup.to_dict(),
                       "gpu_memory": self.gpu_memory, "gpu_memory_source": self.gpu_memory_source,
                       "cpu_memory": self.cpu_memory},
            "per_gpu": self.figures.to_dict(),
            "per_node_cpu": self.figures.per_node_cpu,
            "per_node_nvme": self.figures.per_node_nvme,
            "fits": self.fits,
            "suggestions": [s.to_dict() for s in self.suggestions],
            "notes": list(self.notes),
            "warnings": list(self.warnings),
        }
