"""Text and Markdown renderings of an :class:`~distdx.estimate.models.Estimate` (GiB = 2**30 bytes)."""

from __future__ import annotations

from distdx.estimate.models import Estimate, Figures, Setup

_LABELS = {
    "params": "weights", "gradients": "gradients", "fp32_gradients": "fp32 gradient partition",
    "master_weights": "fp32 master weights", "optimizer_states": "optimizer states",
    "gathered_layer": "gathered layer (ZeRO-3)", "weights": "weights",
    "per_layer": "per layer", "layers": "all layers in flight", "recompute_layer": "layer being recomputed",
    "embedding_output": "embedding + output layer", "kv_cache": "KV cache", "workspace": "workspace",
    "loss": "loss over the vocabulary", "amp_weight_copies": "16-bit weight copies (autocast)",
    "pp_unsharded": "unsharded stage weights + gradients (FSDP + PP)",
    "unsharded_weights": "gathered weights kept (no reshard after forward)", "quantised_weights": "quantised weights",
    "weights_16bit": "16-bit weights (embedding, norms)", "allocator_reserve": "allocator reserve",
    "cuda_context": "CUDA context", "nccl_buffers": "NCCL buffers",
}


def _g(n: int | float) -> str:
    return f"{n / 2**30:,.2f}"


def _setup_line(s: Setup) -> str:
    if s.mode == "infer":
        return (f"inference, {s.dtype}, batch {s.micro_batch}, seq {s.seq_len}, tp {s.tp} pp {s.pp}, "
                f"{s.gpus_per_node} GPU(s)/node x {s.nodes} node(s), attention {s.attention}")
    offload = []
    if s.offload_optimizer != "none":
        offload.append(f"optimizer->{s.offload_optimizer}")
    if s.offload_params != "none":
        offload.append(f"weights->{s.offload_params}")
    return (f"training, {s.dtype}{' mixed precision' if s.dtype != 'fp32' else ''}, {s.optimizer}, ZeRO {s.zero_stage}"
            f"{', offload ' + ' '.join(offload) if offload else ''}, tp {s.tp} pp {s.pp} cp {s.cp} dp {s.dp}"
            f"{f' ep {s.ep}' if s.ep > 1 else ''} "
            f"({s.gpus_per_node} GPU(s)/node x {s.nodes} node(s)), micro batch {s.micro_batch}, seq {s.seq_len}, "
            f"checkpointing {s.checkpointing}, attention {s.attention}, loss {s.loss}{', amp' if s.amp else ''}"
            f"{', sequence parallel' if s.sequence_parallel else ''}")


def _rows(fig: Figures, mode: str) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    rows.append(("model states" if mode == "train" else "weights", _g(fig.model_states["total"])))
    for k, v in fig.model_states.items():
        if k != "total" and mode == "train":
            rows.append(("  " + _LABELS.get(k, k), _g(v)))
    rows.append(("activations" if mode == "train" else "KV cache + workspace", _g(fig.activations["total"])))
    for k, v in fig.activations.items():
        if k not in ("total", "per_layer"):
            rows.append(("  " + _LABELS.get(k, k), _g(v)))
    rows.append(("allocated peak", f"{_g(fig.allocated_peak)}  ({_g(fig.low('allocated_peak'))}-"
                                    f"{_g(fig.high('allocated_peak'))})"))
    for k, v in fig.runtime.items():
        rows.append(("  + " + _LABELS.get(k, k), _g(v)))
    rows.append(("reserved (PyTorch)", f"{_g(fig.reserved)}  ({_g(fig.low('reserved'))}-{_g(fig.high('reserved'))})"))
    rows.append(("total per GPU (nvidia-smi)", f"{_g(fig.per_gpu)}  ({_g(fig.low('total'))}-{_g(fig.high('total'))})"))
    rows.append(("CPU memory per node", _g(fig.per_node_cpu)))
    if fig.per_node_nvme:
        rows.append(("NVMe per node", _g(fig.per_node_nvme)))
    return rows


def _verdict(e: Estimate) -> str:
    if e.fits is None:
        return "fit: not judged (no GPU memory stated with --gpu-memory or detected)"
    where = f"{_g(e.gpu_memory or 0)} GiB per GPU ({e.gpu_memory_source})"
    if e.fits:
        return f"fits in {where}" + (f" and {_g(e.cpu_memory)} GiB of host memory per node" if e.cpu_memory else "")
    if e.gpu_memory is not None and e.figures.per_gpu <= e.gpu_memory and e.cpu_memory is not None:
        return (f"DOES NOT FIT: the GPUs have room ({where}) but host memory per node needs "
                f"{_g(e.figures.per_node_cpu)} GiB, over the stated {_g(e.cpu_memory)} GiB")
    return f"DOES NOT FIT in {where}"


def _model_line(e: Estimate) -> str:
    m = e.model
    fields = ", ".join(f"{k}={v}" for k, v in m.fields_used.items())
    moe = (f", {m.experts} experts (top {m.experts_per_token}, {m.expert_params / 1e9:.1f} B in experts)"
           if m.experts else "")
    return (f"{m.params:,} parameters ({m.params / 1e9:.2f} B) from {m.source}; layers {m.layers}, hidden {m.hidden}, "
            f"heads {m.heads} (kv {m.kv_heads}), ffn {m.ffn}, vocab {m.vocab}, largest layer "
            f"{m.largest_layer_params:,}{moe}\n  fields used: {fields}")


def render_text(e: Estimate) -> str:
    lines = [f"model: {_model_line(e)}", f"setup: {_setup_line(e.setup)}", ""]
    rows = _rows(e.figures, e.setup.mode)
    width = max(len(r[0]) for r in rows)
    lines.append(f"{'':<{width}}  {'GiB':>10}")
    lines += [f"{name:<{width}}  {value:>10}" for name, value in rows]
    lines += ["", _verdict(e)]
    for i, s in enumerate(e.suggestions, 1):
        lines.append(f"\nsuggestion {i} (assumed cost +{s.cost:.0%} step time): " + "; ".join(s.changes))
        states, acts = ("model states", "activations") if e.setup.mode == "train" else ("weights", "KV cache + workspace")
        lines.append(f"  -> {_g(s.figures.per_gpu)} GiB per GPU (range {_g(s.figures.low('total'))}-"
                     f"{_g(s.figures.high('total'))}; {states} {_g(s.figures.model_states['total'])}, "
                     f"{acts} {_g(s.figures.activations['total'])}), CPU {_g(s.figures.per_node_cpu)} GiB per node"
                     + (f", NVMe {_g(s.figures.per_node_nvme)} GiB per node" if s.figures.per_node_nvme else ""))
        lines += [f"     cost: {r}" for r in s.cost_reasons]
    for note in e.notes:
        lines.append(f"note: {note}")
    for warning in e.warnings:
        lines.append(f"warning: {warning}")
    return "\n".join(lines)


def render_markdown(e: Estimate) -> str:
    lines = ["### distdx estimate", "", f"- **model**: {_model_line(e).replace(chr(10) + '  ', '; ')}",
             f"- **setup**: {_setup_line(e.setup)}", "", "| | GiB |", "|---|---:|"]
    lines += [f"| {name.strip() if not name.startswith('  ') else '&nbsp;&nbsp;' + name.strip()} | {value} |"
              for name, value in _rows(e.figures, e.setup.mode)]
    lines += ["", f"**{_verdict(e)}**"]
    if e.suggestions:
        lines += ["", "| # | changes | assumed cost | GiB per GPU | range | CPU GiB per node |",
                  "|---|---|---:|---:|---:|---:|"]
        lines += [f"| {i} | {'; '.join(s.changes)} | +{s.cost:.0%} | {_g(s.figures.per_gpu)} | "
                  f"{_g(s.figures.low('total'))}-{_g(s.figures.high('total'))} | {_g(s.figures.per_node_cpu)} |"
                  for i, s in enumerate(e.suggestions, 1)]
    lines += [f"\n> {note}" for note in e.notes]
    lines += [f"\n> **warning**: {warning}" for warning in e.warnings]
    return "\n".join(lines)
