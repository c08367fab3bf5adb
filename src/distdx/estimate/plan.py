"""Resolve and validate the parallel layout and options of a run, and compute its figures.

Every rule that rejects a combination raises :class:`~distdx.errors.DistdxError` naming the
options, their values and the remedy; the suggester uses :func:`problem` to skip the same
combinations silently.
"""

from __future__ import annotations

from distdx.errors import DistdxError
from distdx.estimate import formulas
from distdx.estimate.models import (ATTENTION, CHECKPOINTING, INFER_DTYPES, LOSSES, MODES, OFFLOAD_DEVICES, OPTIMIZERS,
                                    TRAIN_DTYPES, Figures, ModelShape, Setup, number_text)
from distdx.estimate.terms import Bound


MAX_GPUS = 10**7  # two orders above the largest clusters: past it a size is a typo, and float maths overflows


def _positive(name: str, value: int | None) -> None:
    if value is not None and not 1 <= value <= MAX_GPUS:
        raise DistdxError("DX-ESTIMATE-004", f"{name} is {number_text(value)}",
                          why=f"parallel sizes and GPU/node counts are from 1 to {MAX_GPUS:,}",
                          hint=f"give {name} the job's real size")


def resolve_parallel(*, world_size: int | None = None, gpus_per_node: int | None = None, nodes: int | None = None,
                     tp: int = 1, pp: int = 1, cp: int = 1, dp: int | None = None) -> dict[str, int]:
    """Work out world size, GPUs per node, nodes and data-parallel size; tp * pp * cp * dp = world size.

    The world size comes from ``world_size``, else ``gpus_per_node * nodes``, else ``tp*pp*cp*dp``
    (dp defaults to 1) on one node."""
    for name, value in (("--world-size", world_size), ("--gpus-per-node", gpus_per_node), ("--nodes", nodes),
                        ("--tp", tp), ("--pp", pp), ("--cp", cp), ("--dp", dp)):
        _positive(name, value)
    model_parallel = tp * pp * cp
    if world_size is None:
        if gpus_per_node is None and nodes is None:
            world_size = model_parallel * (dp or 1)
            gpus_per_node, nodes = world_size, 1
        else:
            gpus_per_node = gpus_per_node or (model_parallel * (dp or 1) if nodes is None else 1)
            nodes = nodes or 1
            world_size = gpus_per_node * nodes
    elif gpus_per_node is not None and nodes is not None:
        if gpus_per_node * nodes != world_size:
            raise DistdxError("DX-ESTIMATE-004", f"--world-size {world_size} is not --gpus-per-node {gpus_per_node} "
                              f"x --nodes {nodes} = {gpus_per_node * nodes}",
                              why="the world size is the number of GPUs in the job",
                              hint="drop --world-size, or make the three agree")
    elif nodes is not None:
        if world_size % nodes:
            raise DistdxError("DX-ESTIMATE-004", f"--world-size {world_size} does not split over --nodes {nodes}",
                              why="every node runs the same number of GPUs",
                              hint="give a world size that is a multiple of the number of nodes")
        gpus_per_node = world_size // nodes
    elif gpus_per_node is not None:
        if world_size % gpus_per_node:
            raise DistdxError("DX-ESTIMATE-004", f"--world-size {world_size} is not a multiple of "
                              f"--gpus-per-node {gpus_per_node}", why="every node runs the same number of GPUs",
                              hint="give a world size that is a multiple of --gpus-per-node")
        nodes = world_size // gpus_per_node
    else:
        gpus_per_node, nodes = world_size, 1
    if world_size % model_parallel:
        raise DistdxError("DX-ESTIMATE-004", f"world size {world_size} is not divisible by tp x pp x cp = "
                          f"{tp} x {pp} x {cp} = {model_parallel}",
                          why="the GPUs are laid out as tp x pp x cp x dp; data parallel gets what is left",
                          hint=f"use a world size that is a multiple of {model_parallel}, or smaller tp/pp/cp")
    derived_dp = world_size // model_parallel
    if dp is not None and dp != derived_dp:
        raise DistdxError("DX-ESTIMATE-004", f"--dp {dp} does not match the world size: {world_size} GPUs / "
                          f"(tp {tp} x pp {pp} x cp {cp}) = {derived_dp}",
                          why="tp x pp x cp x dp must equal the world size",
                          hint=f"drop --dp (it is derived: {derived_dp}) or change --world-size/--nodes")
    return {"world_size": world_size, "gpus_per_node": gpus_per_node, "nodes": nodes, "dp": derived_dp}


def problem(shape: ModelShape, setup: Setup) -> DistdxError | None:
    """The first rule the combination breaks, or None."""
    def err(message: str, why: str, hint: str) -> DistdxError:
        return DistdxError("DX-ESTIMATE-005", message, why=why, hint=hint)

    if setup.mode not in MODES:
        return err(f"mode {setup.mode!r} is unknown", f"modes: {', '.join(MODES)}", "use train or infer")
    dtypes = TRAIN_DTYPES if setup.mode == "train" else INFER_DTYPES
    if setup.dtype not in dtypes:
        return err(f"--dtype {setup.dtype} is not available for {setup.mode}", f"choose one of {', '.join(dtypes)}",
                   "int8/int4 weights are for inference (--mode infer)")
    if setup.kv_dtype is not None and setup.kv_dtype not in INFER_DTYPES:
        return err(f"--kv-dtype {setup.kv_dtype} is unknown", f"choose one of {', '.join(INFER_DTYPES)}",
                   "use bf16 or fp16")
    if setup.optimizer not in OPTIMIZERS:
        return err(f"--optimizer {setup.optimizer} is unknown", f"choose one of {', '.join(OPTIMIZERS)}",
                   "use adamw for Adam-like optimizers")
    if setup.checkpointing not in CHECKPOINTING:
        return err(f"--checkpointing {setup.checkpointing} is unknown", f"choose one of {', '.join(CHECKPOINTING)}",
                   "use none, selective or full")
    for flag, value, allowed in (("--attention", setup.attention, ATTENTION), ("--loss", setup.loss, LOSSES)):
        if value not in allowed:
            return err(f"{flag} {value} is unknown", f"choose one of {', '.join(allowed)}", f"use {allowed[0]}")
    if setup.amp and (setup.mode != "train" or setup.dtype == "fp32" or setup.zero_stage != 0):
        return err("--amp goes with --mode train, --dtype fp16/bf16 and --zero 0",
                   "torch autocast keeps fp32 weights and casts them to 16 bits; DeepSpeed's ZeRO mixed precision "
                   "(--dtype fp16/bf16 with --zero) keeps 16-bit weights and fp32 master copies instead",
                   "drop --amp with ZeRO or fp32, or use --zero 0")
    if not 1 <= setup.quant_group <= 2**20:
        return DistdxError("DX-ESTIMATE-004", f"--quant-group {setup.quant_group} is out of range",
                           why="int4 weights share one scale per group of 32 to 1024 values in practice",
                           hint="use the group size of the quantisation recipe (torchao: 32-256, default 128)")
    for name, value in (("--offload-optimizer", setup.offload_optimizer), ("--offload-params", setup.offload_params)):
        if value not in OFFLOAD_DEVICES:
            return err(f"{name} {value} is unknown", f"choose one of {', '.join(OFFLOAD_DEVICES)}", "use cpu or nvme")
    if not (1 <= setup.micro_batch <= MAX_GPUS and 1 <= setup.seq_len <= 10**9):
        return DistdxError("DX-ESTIMATE-004", f"micro batch {setup.micro_batch} / sequence length {setup.seq_len}",
                           why="both must be at least 1 (and no larger than any run uses)",
                           hint="give --micro-batch and --seq-len the run's real values")
    if not 0 < setup.buffer_factor <= 100:
        return DistdxError("DX-ESTIMATE-004", f"--buffer-factor {setup.buffer_factor} is out of range",
                           why="it multiplies host memory (DeepSpeed's additional_buffer_factor, default 1.5)",
                           hint="use a factor between 1 and a few")
    if setup.zero_stage not in (0, 1, 2, 3):
        return err(f"--zero {setup.zero_stage} is not a ZeRO stage", "ZeRO has stages 0 to 3", "use 0, 1, 2 or 3")
    if setup.mode == "train":
        if setup.offload_optimizer != "none" and setup.zero_stage == 0:
            return err(f"--offload-optimizer {setup.offload_optimizer} needs ZeRO",
                       "DeepSpeed offloads the optimizer with ZeRO stages 1, 2 and 3 only",
                       "add --zero 2 (or 1, 3)")
        if setup.offload_params != "none" and setup.zero_stage != 3:
            return err(f"--offload-params {setup.offload_params} needs ZeRO stage 3",
                       "DeepSpeed's offload_param is valid only with stage 3 (it offloads partitioned weights)",
                       "use --zero 3, or offload the optimizer only")
        if setup.offload_params != "none" and setup.offload_optimizer == "none":
            return err("--offload-params without --offload-optimizer",
                       "DeepSpeed's estimators (and ZeRO-Infinity's usual set-up) offload the optimizer whenever "
                       "they offload the weights; weights on the host with the optimizer on the GPU has no "
                       "accounting here", "add --offload-optimizer cpu (or nvme)")
        if "nvme" in (setup.offload_optimizer, setup.offload_params) and setup.zero_stage != 3:
            return err("NVMe offload needs ZeRO stage 3",
                       "only ZeRO-3 (ZeRO-Infinity) swaps optimizer states to NVMe; at stages 1 and 2 DeepSpeed "
                       "keeps them in host memory", "use --zero 3, or --offload-optimizer cpu")
        if setup.pp > 1 and setup.zero_stage == 2:
            return err(f"ZeRO stage 2 with pipeline parallelism (--pp {setup.pp})",
                       "DeepSpeed's PipelineEngine asserts: ZeRO-2 is incompatible with pipeline parallelism (stage 3 "
                       "is estimated as FSDP with pipeline parallelism, torchtitan's 3D/4D layouts)",
                       "use --zero 1 or --zero 3 with --pp, or drop pipeline parallelism")
    if setup.ep > 1:
        if not shape.experts:
            return err(f"--ep {setup.ep} for a dense model", "expert parallelism splits the routed experts of a "
                       "mixture-of-experts model; this model has none", "drop --ep")
        if shape.experts % setup.ep or setup.shard % setup.ep:
            return DistdxError("DX-ESTIMATE-004", f"--ep {setup.ep} does not divide the {shape.experts} experts and "
                               f"the dp x cp = {setup.shard} ranks", why="expert parallelism gives each rank a whole "
                               "number of experts and is carved out of the data (and context) parallel ranks",
                               hint="use an expert-parallel size that divides both")
    if not setup.reshard_after_forward and setup.zero_stage != 3:
        return err("--no-reshard-after-forward needs ZeRO stage 3 (FSDP)", "only ZeRO-3/FSDP gathers the weights "
                   "layer by layer", "add --zero 3, or drop --no-reshard-after-forward")
    if setup.sequence_parallel and setup.tp == 1:
        return err("--sequence-parallel with --tp 1", "Megatron's sequence parallelism splits the tensor-parallel "
                   "group's LayerNorm and dropout work; without tensor parallelism there is nothing to split",
                   "add --tp 2 or more, or drop --sequence-parallel")
    if shape.heads % setup.tp:
        return DistdxError("DX-ESTIMATE-004", f"--tp {setup.tp} does not divide the {shape.heads} attention heads",
                           why="tensor parallelism gives each rank a whole number of heads",
                           hint="use a tensor-parallel size that divides the number of heads")
    if setup.pp > shape.layers:
        return DistdxError("DX-ESTIMATE-004", f"--pp {setup.pp} is more than the {shape.layers} layers",
                           why="each pipeline stage holds at least one layer",
                           hint="use a pipeline-parallel size no larger than the number of layers")
    if setup.seq_len % setup.cp:
        return DistdxError("DX-ESTIMATE-004", f"--cp {setup.cp} does not divide --seq-len {setup.seq_len}",
                           why="context parallelism gives each rank an equal slice of the sequence",
                           hint="use a sequence length that is a multiple of the context-parallel size")
    if setup.ep < 1:
        return DistdxError("DX-ESTIMATE-004", f"--ep {setup.ep}", why="parallel sizes are at least 1",
                           hint="give --ep the job's expert-parallel size")
    if setup.tp * setup.pp * setup.cp * setup.dp != setup.world_size:
        return DistdxError("DX-ESTIMATE-004", f"tp {setup.tp} x pp {setup.pp} x cp {setup.cp} x dp {setup.dp} is "
                           f"not the world size {setup.world_size}", why="every GPU belongs to one of each group",
                           hint="let distdx derive dp (see resolve_parallel)")
    return None


def validate(shape: ModelShape, setup: Setup) -> None:
    e = problem(shape, setup)
    if e is not None:
        raise e


def _allocated(shape: ModelShape, setup: Setup, term: Bound) -> tuple[dict, dict, int, int]:
    """(model states or weights, activations, per-node CPU, per-node NVMe) with the terms at one bound."""
    if setup.mode == "infer":
        weights, acts, cpu = formulas.inference(shape, setup)
        return weights, acts, cpu, 0
    states = formulas.model_states(shape, setup, term)
    return states.gpu, formulas.activations(shape, setup, term), states.cpu, states.nvme


def _runtime(allocated: int, setup: Setup, term: Bound) -> dict[str, int]:
    """What a GPU holds beyond the allocated peak: the caching allocator's reserve (in PyTorch's reserved
    figure), the CUDA context and NCCL's buffers (outside PyTorch's allocator, in what nvidia-smi shows)."""
    reserve = allocated * term("allocator_reserve")
    if setup.mode == "infer" and setup.dtype in ("int8", "int4"):
        reserve += term("quantised_load_reserve")
    out = {"allocator_reserve": int(reserve), "cuda_context": int(term("cuda_context"))}
    if setup.world_size > 1:
        out["nccl_buffers"] = int(term("nccl_buffers"))
    return out


def _at(shape: ModelShape, setup: Setup, term: Bound) -> tuple[tuple, dict[str, int]]:
    """(the parts of the figures, {allocated_peak, reserved, total}) with the terms at one bound."""
    states, acts, cpu, nvme = _allocated(shape, setup, term)
    allocated = int(states["total"]) + int(acts["total"])
    runtime = _runtime(allocated, setup, term)
    return (states, acts, cpu, nvme, runtime), {"allocated_peak": allocated,
                                                "reserved": allocated + runtime["allocator_reserve"],
                                                "total": allocated + sum(runtime.values())}


def figures_and_terms(shape: ModelShape, setup: Setup) -> tuple[Figures, frozenset[str]]:
    """The figures of a valid combination with their ranges (every uncertain term at its low, then its high
    end), and the names of the uncertain terms they use."""
    term = Bound("value")
    (states, acts, cpu, nvme, runtime), value = _at(shape, setup, term)
    ends = [value] + [_at(shape, setup, Bound(bound))[1] for bound in ("low", "high")]
    ranges = {k: (min(e[k] for e in ends), max(e[k] for e in ends)) for k in value}
    return Figures(model_states=states, activations=acts, per_gpu=value["total"], per_node_cpu=cpu,
                   per_node_nvme=nvme, runtime=runtime, ranges=ranges), frozenset(term.used)


def figures(shape: ModelShape, setup: Setup) -> Figures:
    """Per-GPU and per-node figures of a valid combination (``per_gpu``: what nvidia-smi would show)."""
    return figures_and_terms(shape, setup)[0]
