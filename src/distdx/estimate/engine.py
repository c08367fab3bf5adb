"""The entry point: :func:`estimate` puts the figures, the verdict and the suggestions together."""

from __future__ import annotations

from distdx.estimate.models import Estimate, ModelShape, Setup
from distdx.estimate.plan import figures_and_terms, validate
from distdx.estimate.terms import terms
from distdx.estimate.suggest import suggest


def detect_gpu_memory(environment: object | None = None) -> tuple[int, str] | None:
    """(bytes, description) of the smallest GPU on this machine, read through distdx.doctor's probe;
    None when no GPU can be read. ``environment`` (a doctor ``Environment``) stands in for the probe."""
    if environment is None:
        from distdx.doctor.probe import probe

        environment = probe(probe_port=False)
    gpus = getattr(environment, "gpus", None)
    if not gpus:
        return None
    smallest = min(gpus, key=lambda g: g.memory_total_mib)
    count = len(gpus)
    return smallest.memory_total_mib * 2**20, f"detected: {count} x {smallest.name}" if count > 1 else \
        f"detected: {smallest.name}"


def estimate(shape: ModelShape, setup: Setup, *, gpu_memory: int | None = None, gpu_memory_source: str | None = None,
             cpu_memory: int | None = None, allow_tp: bool = False, allow_flash: bool = True) -> Estimate:
    """Figures for ``setup``; with a GPU memory size, whether it fits and, if not, the cheapest changes
    that do (see :mod:`distdx.estimate.suggest`)."""
    validate(shape, setup)
    fig, used = figures_and_terms(shape, setup)
    notes: list[str] = []
    warnings = tuple(f"this layout relies on {name} ({terms()[name].why}), which no published measurement in "
                     "benchmarks/estimate_measurements.yaml backs: trust the range, not the figure"
                     for name in sorted(used) if not terms()[name].backed_by)
    if shape.assumed:
        notes.append("not given, so assumed (see docs/estimate.md): " + ", ".join(
            f"{name}={getattr(shape, name)}" for name in shape.assumed))
    if setup.mode == "train" and setup.pp > 1 and shape.layers % setup.pp:
        notes.append(f"{shape.layers} layers over {setup.pp} pipeline stages: the fullest stage holds "
                     f"{-(-shape.layers // setup.pp)}")
    if setup.mode == "train" and setup.pp > 1 and setup.zero_stage == 3:
        notes.append("ZeRO-3 with pipeline parallelism is estimated as FSDP does it (torchtitan): DeepSpeed's "
                     "PipelineEngine refuses stage 3")
    if setup.mode == "train" and setup.tp * setup.pp > 1:
        notes.append("with tensor/pipeline parallelism every rank is counted with params/(tp*pp); the ranks that "
                     "also hold the embedding or LM head hold a little more")
    fits: bool | None = None
    suggestions = ()
    if gpu_memory is None:
        notes.append("no GPU memory stated (--gpu-memory) or detected: fit not judged")
    else:
        fits = fig.per_gpu <= gpu_memory and (cpu_memory is None or fig.per_node_cpu <= cpu_memory)
        if not fits:
            suggestions = suggest(shape, setup, gpu_memory, cpu_memory=cpu_memory, allow_tp=allow_tp,
                                  allow_flash=allow_flash)
            if not suggestions:
                notes.append("no combination of ZeRO stage, offload, flash attention, checkpointing, micro batch"
                             + (" and tensor parallelism" if allow_tp else "") + " fits: add GPUs or nodes"
                             + ("" if allow_tp else ", or allow tensor parallelism (--allow-tp)"))
    return Estimate(model=shape, setup=setup, figures=fig, gpu_memory=gpu_memory,
                    gpu_memory_source=gpu_memory_source if gpu_memory is not None else None,
                    cpu_memory=cpu_memory, fits=fits,
                    suggestions=suggestions, notes=tuple(notes), warnings=warnings)
