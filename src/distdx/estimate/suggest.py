"""The suggester: when a run does not fit, the cheapest change that does.

The search space is every combination of a higher ZeRO stage, optimizer and weight offload,
flash attention, stronger activation checkpointing, a smaller micro batch and, when allowed, a
larger tensor-parallel size (within a node; data parallel shrinks to keep the world size). Each
change has an assumed cost (``costs.yaml``: extra step time as a fraction); costs add up. The
combinations that fit are ordered by cost, then by the number of changes, then by memory per GPU.
Nothing is changed that the user did not leave open: stages only go up, offload is only added,
checkpointing only gets stronger, the micro batch only shrinks.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterator, Mapping


from distdx.errors import DistdxError
from distdx.estimate.models import CHECKPOINTING, ModelShape, Setup, Suggestion
from distdx.estimate.plan import figures, problem
from distdx.yamlio import bundled_yaml

MAX_SUGGESTIONS = 3


@dataclass(frozen=True)
class Cost:
    cost: float
    why: str


@dataclass(frozen=True)
class CostModel:
    flash_attention: Cost
    zero_stage: Mapping[int, Cost]
    offload_optimizer: Mapping[str, Cost]
    offload_params: Mapping[str, Cost]
    checkpointing: Mapping[str, Cost]
    loss: Mapping[str, Cost]
    micro_batch_halving: Cost
    tensor_parallel_doubling: Cost


def _cost(data: object, where: str) -> Cost:
    if not isinstance(data, dict) or not isinstance(data.get("cost"), (int, float)) or not data.get("why"):
        raise DistdxError("DX-ESTIMATE-006", f"costs.yaml: {where} needs a numeric cost and a why",
                          hint="fix src/distdx/estimate/costs.yaml", exit_code=3)
    return Cost(float(data["cost"]), str(data["why"]))


@lru_cache(maxsize=1)
def cost_model() -> CostModel:
    """The cost model of ``costs.yaml`` (version 1)."""
    data = bundled_yaml("distdx.estimate", "costs.yaml")
    if not isinstance(data, dict) or data.get("version") != 1:
        raise DistdxError("DX-ESTIMATE-006", "costs.yaml is not version 1", hint="fix the packaged costs.yaml",
                          exit_code=3)
    return CostModel(
        flash_attention=_cost(data["flash_attention"], "flash_attention"),
        zero_stage={int(k): _cost(v, f"zero_stage.{k}") for k, v in data["zero_stage"].items()},
        offload_optimizer={k: _cost(v, f"offload_optimizer.{k}") for k, v in data["offload_optimizer"].items()},
        offload_params={k: _cost(v, f"offload_params.{k}") for k, v in data["offload_params"].items()},
        checkpointing={k: _cost(v, f"checkpointing.{k}") for k, v in data["checkpointing"].items()},
        loss={k: _cost(v, f"loss.{k}") for k, v in data["loss"].items()},
        micro_batch_halving=_cost(data["micro_batch_halving"], "micro_batch_halving"),
        tensor_parallel_doubling=_cost(data["tensor_parallel_doubling"], "tensor_parallel_doubling"),
    )


def _halvings(n: int) -> list[int]:
    out = [n]
    while out[-1] > 1:
        out.append(out[-1] // 2)
    return out


def _candidates(shape: ModelShape, setup: Setup, allow_tp: bool, allow_flash: bool) -> Iterator[Setup]:
    train = setup.mode == "train"
    stages = range(setup.zero_stage, 4) if train else [setup.zero_stage]
    opt = [setup.offload_optimizer] + ([d for d in ("cpu", "nvme") if d != setup.offload_optimizer]
                                       if train and setup.offload_optimizer == "none" else [])
    if train and setup.offload_optimizer == "cpu":
        opt.append("nvme")
    par = [setup.offload_params] + (["cpu", "nvme"] if train and setup.offload_params == "none" else
                                    ["nvme"] if train and setup.offload_params == "cpu" else [])
    ckpt = CHECKPOINTING[CHECKPOINTING.index(setup.checkpointing):] if train else (setup.checkpointing,)
    flash = (setup.attention, "flash") if allow_flash and setup.attention == "eager" else (setup.attention,)
    losses = (setup.loss, "chunked") if train and setup.loss == "full" else (setup.loss,)
    micro = _halvings(setup.micro_batch)
    tps = [setup.tp]
    if allow_tp:
        t = setup.tp * 2
        while t <= setup.gpus_per_node and setup.world_size % (t * setup.pp * setup.cp) == 0 and shape.heads % t == 0:
            tps.append(t)
            t *= 2
    for stage, o, p, c, f, mb, tp, loss in itertools.product(stages, opt, par, ckpt, flash, micro, tps, losses):
        dp = setup.world_size // (tp * setup.pp * setup.cp)
        yield setup.with_changes(zero_stage=stage, offload_optimizer=o, offload_params=p, checkpointing=c,
                                 attention=f, micro_batch=mb, tp=tp, dp=dp, loss=loss)


def describe(before: Setup, after: Setup, costs: CostModel | None = None) -> tuple[tuple[str, ...], float, tuple[str, ...]]:
    """(changes in words, summed cost, the reason for each cost) from ``before`` to ``after``."""
    costs = costs or cost_model()
    changes: list[str] = []
    reasons: list[str] = []
    total = 0.0

    def add(text: str, c: Cost) -> None:
        nonlocal total
        changes.append(text)
        reasons.append(f"{text}: +{c.cost:.0%} ({c.why})")
        total += c.cost

    if after.flash_attention and not before.flash_attention:
        add("use flash attention", costs.flash_attention)
    if after.zero_stage != before.zero_stage:
        previous = costs.zero_stage[before.zero_stage].cost if before.zero_stage in costs.zero_stage else 0.0
        c = Cost(costs.zero_stage[after.zero_stage].cost - previous, costs.zero_stage[after.zero_stage].why)
        add(f"ZeRO stage {before.zero_stage} -> {after.zero_stage}", c)
    if after.offload_optimizer != before.offload_optimizer:
        c = costs.offload_optimizer[after.offload_optimizer]
        if before.offload_optimizer != "none":
            c = Cost(c.cost - costs.offload_optimizer[before.offload_optimizer].cost, c.why)
        add(f"offload the optimizer to {after.offload_optimizer}", c)
    if after.offload_params != before.offload_params:
        c = costs.offload_params[after.offload_params]
        if before.offload_params != "none":
            c = Cost(c.cost - costs.offload_params[before.offload_params].cost, c.why)
        add(f"offload the weights to {after.offload_params}", c)
    if after.checkpointing != before.checkpointing:
        c = costs.checkpointing[after.checkpointing]
        if before.checkpointing != "none":
            c = Cost(c.cost - costs.checkpointing[before.checkpointing].cost, c.why)
        add(f"activation checkpointing {before.checkpointing} -> {after.checkpointing}", c)
    if after.loss != before.loss:
        add(f"{after.loss} cross-entropy", costs.loss[after.loss])
    if after.micro_batch != before.micro_batch:
        halvings = (before.micro_batch // after.micro_batch).bit_length() - 1
        base = costs.micro_batch_halving
        ratio = before.micro_batch // after.micro_batch
        keep = (f"gradient accumulation x{ratio} keeps the global batch" if before.mode == "train" else
                f"{ratio} passes serve the same requests")
        add(f"{'micro batch' if before.mode == 'train' else 'batch'} {before.micro_batch} -> {after.micro_batch} "
            f"({keep})", Cost(base.cost * halvings, base.why))
    if after.tp != before.tp:
        doublings = (after.tp // before.tp).bit_length() - 1
        base = costs.tensor_parallel_doubling
        add(f"tensor parallel {before.tp} -> {after.tp} (data parallel {before.dp} -> {after.dp})",
            Cost(base.cost * doublings, base.why))
    return tuple(changes), total, tuple(reasons)


def suggest(shape: ModelShape, setup: Setup, gpu_memory: int, *, cpu_memory: int | None = None,
            allow_tp: bool = False, allow_flash: bool = True, limit: int = MAX_SUGGESTIONS) -> tuple[Suggestion, ...]:
    """The cheapest configurations that fit in ``gpu_memory`` per GPU (and ``cpu_memory`` per node when
    given), at most ``limit``; empty when none in the search space fits. ``allow_flash`` False keeps
    flash attention out of the search (GPUs or stacks without a kernel for it)."""
    costs = cost_model()
    found: list[tuple[float, int, int, Suggestion]] = []
    seen: set[Setup] = set()
    for candidate in _candidates(shape, setup, allow_tp, allow_flash):
        if candidate == setup or candidate in seen or problem(shape, candidate) is not None:
            continue
        seen.add(candidate)
        fig = figures(shape, candidate)
        if fig.per_gpu > gpu_memory or (cpu_memory is not None and fig.per_node_cpu > cpu_memory):
            continue
        changes, cost, reasons = describe(setup, candidate, costs)
        cost = round(cost, 6)
        found.append((cost, len(changes), fig.per_gpu,
                      Suggestion(changes=changes, cost=cost, cost_reasons=reasons, setup=candidate, figures=fig)))
    found.sort(key=lambda item: item[:3])
    chosen: list[Suggestion] = []
    chosen_keys: list[frozenset[str]] = []
    for *_, suggestion in found:
        keys = _changed(setup, suggestion.setup)
        # touching the same settings as a cheaper suggestion that fits (and maybe more) only adds cost:
        # ZeRO 3 after ZeRO 1 fits, micro batch 1 after micro batch 2 fits
        if any(keys >= earlier for earlier in chosen_keys):
            continue
        chosen.append(suggestion)
        chosen_keys.append(keys)
        if len(chosen) == limit:
            break
    return tuple(chosen)


_SEARCHED = ("zero_stage", "offload_optimizer", "offload_params", "checkpointing", "attention", "micro_batch", "tp",
             "loss")


def _changed(before: Setup, after: Setup) -> frozenset[str]:
    return frozenset(name for name in _SEARCHED if getattr(after, name) != getattr(before, name))
