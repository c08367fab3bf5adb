"""`distdx estimate` against published per-GPU memory measurements, beside DeepSpeed's and accelerate's estimators.

Run: ``python benchmarks/bench_estimate.py [--markdown] [--set tune|report|all]`` (``--write-backing`` re-derives
terms.yaml's ``backed_by`` lists after the measurements or the terms change). For every point of
``benchmarks/estimate_measurements.yaml`` it prints measured / estimated for

- distdx: the figure of the kind the source measured (``reserved`` and ``allocated`` readings are compared with
  ``per_gpu.reserved`` / ``per_gpu.allocated_peak``, ``nvidia-smi`` readings with ``per_gpu.total``), with its range;
- DeepSpeed: ``estimate_zero2_model_states_mem_needs`` (stages 0-2) or ``estimate_zero3_model_states_mem_needs``
  (stage 3) from the installed deepspeed, called with the parameters one model-parallel rank holds and the GPUs
  ZeRO shards over; it does not apply to inference ("n/a");
- accelerate: ``accelerate estimate-memory``'s rule, the model's size in the dtype for inference and the peak of
  ``estimate_training_usage`` (the largest of model, gradients, optimizer, step) for training, unsharded;

then, per split (``tune``: the points constants were tuned on; ``report``: the points kept back), the median
|ratio - 1|, the lowest ratio and how many points fall below 0.85.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

from distdx.estimate import Setup, estimate, parse_bytes, resolve_parallel, shape_from_config, shape_from_params
from distdx.estimate.models import ModelShape
from distdx.estimate.plan import figures_and_terms

ROOT = Path(__file__).resolve().parent
MEASUREMENTS = ROOT / "estimate_measurements.yaml"
TERMS = ROOT.parent / "src" / "distdx" / "estimate" / "terms.yaml"
CONFIGS = ROOT / "estimate_configs"
LOW = 0.85


@dataclass(frozen=True)
class Point:
    id: str
    split: str
    kind: str
    measured: int
    shape: ModelShape
    setup: Setup
    row: str
    source: str


def load(path: Path = MEASUREMENTS) -> list[Point]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    points = []
    for p in data["points"]:
        model = p["model"]
        if "config" in model:
            shape = shape_from_config(CONFIGS / model["config"])
        else:
            m = model["params"]
            shape = shape_from_params(m["params"], layers=m["layers"], hidden=m["hidden"], heads=m["heads"],
                                      ffn=m["ffn"], vocab=m["vocab"])
        fields = dict(p["setup"])
        layout = resolve_parallel(gpus_per_node=fields.pop("gpus_per_node"), nodes=fields.pop("nodes"),
                                  tp=fields.get("tp", 1), pp=fields.get("pp", 1), cp=fields.get("cp", 1))
        setup = Setup(**fields, dp=layout["dp"], gpus_per_node=layout["gpus_per_node"], nodes=layout["nodes"])
        points.append(Point(p["id"], p["split"], p["kind"], parse_bytes(p["measured"], "measured"), shape, setup,
                            p["row"], p["source"]))
    return points


# the terms outside PyTorch's allocator show only in nvidia-smi readings; the allocator reserve not in allocated ones
_SEEN_BY = {"cuda_context": ("nvidia-smi",), "nccl_buffers": ("nvidia-smi",),
            "allocator_reserve": ("nvidia-smi", "reserved")}


def backing(points: list[Point]) -> dict[str, list[str]]:
    """term -> ids of the tune points whose layout uses it in the figure they measured (terms.yaml's backed_by)."""
    out: dict[str, list[str]] = {}
    for p in points:
        if p.split != "tune":
            continue
        _, used = figures_and_terms(p.shape, p.setup)
        for name in sorted(used):
            if p.kind in _SEEN_BY.get(name, (p.kind,)):
                out.setdefault(name, []).append(p.id)
    return out


def write_backing(points: list[Point], path: Path = TERMS) -> None:
    """Rewrite every ``backed_by`` list of terms.yaml from :func:`backing` (the rest of the file is kept)."""
    back = backing(points)
    out: list[str] = []
    term = None
    skipping = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if skipping and line.startswith("      - "):
            continue
        skipping = False
        m = re.match(r"^  (\w+):$", line)
        if m:
            term = m.group(1)
        if line.startswith("    backed_by:"):
            ids = back.get(term or "", [])
            out.append("    backed_by:" + ("" if ids else " []"))
            out += [f"      - {i}" for i in ids]
            skipping = True
            continue
        out.append(line)
    path.write_text("\n".join(out) + "\n", encoding="utf-8")


def distdx_figure(point: Point) -> tuple[int, int, int, tuple[str, ...]]:
    """(figure, low, high, warnings) of the kind the point measured."""
    e = estimate(point.shape, point.setup)
    f = e.figures
    key = {"nvidia-smi": "total", "reserved": "reserved", "allocated": "allocated_peak"}[point.kind]
    return f.kind(key), f.low(key), f.high(key), e.warnings


def deepspeed_figure(point: Point) -> int | None:
    if point.setup.mode != "train":
        return None
    from deepspeed.runtime.zero import stage3, stage_1_and_2

    s = point.setup
    params = int(point.shape.params / (s.tp * s.pp))
    if s.zero_stage == 3:
        largest = point.shape.largest_layer_params // s.tp
        _, gpu, _ = stage3.estimate_zero3_model_states_mem_needs(params, largest, num_gpus_per_node=s.shard,
                                                                   cpu_offload=False, cpu_offload_params=False)
    else:
        _, gpu = stage_1_and_2.estimate_zero2_model_states_mem_needs(params, num_gpus_per_node=s.shard,
                                                                     cpu_offload=False)
    return gpu


def accelerate_figure(point: Point) -> int:
    from accelerate.commands.estimate import estimate_training_usage

    fp32 = point.shape.params * 4
    s = point.setup
    if s.mode == "infer":
        return int(fp32 / {"fp32": 1, "fp16": 2, "bf16": 2, "int8": 4, "int4": 8}[s.dtype])
    precision = "float32" if s.dtype == "fp32" else ("float16" if s.dtype == "fp16" else "bfloat16")
    return max(estimate_training_usage(fp32, precision).values())


def _summary(ratios: list[float]) -> str:
    if not ratios:
        return "-"
    errors = [abs(r - 1) for r in ratios]
    return (f"median |r-1| {statistics.median(errors):.3f}, min {min(ratios):.2f}, "
            f"{sum(r < LOW for r in ratios)} below {LOW}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=("tune", "report", "all"), default="all")
    parser.add_argument("--markdown", action="store_true", help="a Markdown table (for the README)")
    parser.add_argument("--write-backing", action="store_true",
                        help="rewrite terms.yaml's backed_by lists from the tune points' layouts, then exit")
    args = parser.parse_args(argv)
    if args.write_backing:
        write_backing(load())
        return 0
    points = [p for p in load() if args.set in ("all", p.split)]
    rows = []
    ratios: dict[str, dict[str, list[float]]] = {}
    for p in points:
        fig, low, high, warnings = distdx_figure(p)
        ds = deepspeed_figure(p)
        acc = accelerate_figure(p)
        r = {"distdx": fig / p.measured, "deepspeed": ds / p.measured if ds is not None else None,
             "accelerate": acc / p.measured}
        for name, value in r.items():
            if value is not None:
                ratios.setdefault(p.split, {}).setdefault(name, []).append(value)
        rows.append((p, fig, low, high, r, warnings))
    g = 2**30
    if args.markdown:
        print("| point | split | kind | measured GiB | distdx GiB (range) | distdx | DeepSpeed | accelerate |")
        print("|---|---|---|---:|---:|---:|---:|---:|")
    else:
        print(f"{'point':<34} {'split':<6} {'kind':<10} {'measured':>9} {'distdx (low-high)':>22} "
              f"{'distdx':>7} {'DS':>6} {'acc':>6}")
    for p, fig, low, high, r, warnings in rows:
        ds = f"{r['deepspeed']:.2f}" if r["deepspeed"] is not None else "n/a"
        rng = f"{fig / g:.1f} ({low / g:.1f}-{high / g:.1f})"
        if args.markdown:
            print(f"| [{p.id}]({p.source}) | {p.split} | {p.kind} | {p.measured / g:.1f} | {rng} | "
                  f"{r['distdx']:.2f} | {ds} | {r['accelerate']:.2f} |")
        else:
            print(f"{p.id:<34} {p.split:<6} {p.kind:<10} {p.measured / g:>9.1f} {rng:>22} {r['distdx']:>7.2f} "
                  f"{ds:>6} {r['accelerate']:>6.2f}" + ("  [unbacked term]" if warnings else ""))
    print()
    for split in ("tune", "report"):
        if split not in ratios:
            continue
        for name in ("distdx", "deepspeed", "accelerate"):
            values = ratios[split].get(name, [])
            print(f"{split:<6} {name:<10} n={len(values):<3} {_summary(values)}")
    all_distdx = [r for split in ratios.values() for r in split["distdx"]]
    print(f"{'all':<6} {'distdx':<10} n={len(all_distdx):<3} {_summary(all_distdx)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
