"""Side by side: DeepSpeed's own config validation and `distdx lint` on the corpus in tests/lint/corpus.

Run: ``python benchmarks/lint_vs_deepspeed.py [--markdown] [--differences]`` (``--differences``: only the
configs DeepSpeed accepts and lint reports an error on, or the other way round). For every DeepSpeed config of the corpus it
runs ``deepspeed.runtime.config.DeepSpeedConfig(path, mpu=...)`` in a subprocess (CPU, one gloo process, the
data-parallel size from the corpus manifest given through an ``mpu`` object, the same way Megatron-DeepSpeed
passes it) and records accepted/rejected with DeepSpeed's message, then runs lint with the same world size.
DeepSpeedConfig is the validation ``deepspeed.initialize()`` performs before it builds the engine; checks
DeepSpeed makes only later while building the optimizer or the NVMe swapper are not part of its verdict here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "lint" / "corpus"

_WORKER = r"""
import json, logging, os, sys
os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=sys.argv[1], RANK="0", WORLD_SIZE="1", LOCAL_RANK="0")
import deepspeed
from deepspeed.runtime.config import DeepSpeedConfig
from deepspeed.utils import logger
logger.setLevel(logging.ERROR)
deepspeed.init_distributed(dist_backend="gloo", verbose=False)

class DataParallelOnly:
    def __init__(self, n): self.n = n
    def get_data_parallel_world_size(self): return self.n

out = {}
for path, world in json.load(sys.stdin):
    try:
        DeepSpeedConfig(path, mpu=DataParallelOnly(world))
        out[path] = [True, ""]
    except BaseException as e:
        out[path] = [False, (type(e).__name__ + ": " + " ".join(str(e).split()))[:300]]
print("@@RESULT@@" + json.dumps(out))
"""


@dataclass(frozen=True)
class Entry:
    path: Path
    family: str
    broken: bool
    world_size: int | None
    hf: bool | None
    expect: tuple[str, ...]
    source: str
    note: str


def manifest() -> list[Entry]:
    data = yaml.safe_load((CORPUS / "manifest.yaml").read_text())
    out = []
    for rel, spec in data["files"].items():
        spec = spec or {}
        family, kind = rel.split("/")[:2]
        out.append(Entry(CORPUS / rel, family, kind == "broken", spec.get("world_size"), spec.get("hf"),
                         tuple(spec.get("expect", ())), str(spec.get("source", "")), str(spec.get("note", ""))))
    return out


def deepspeed_verdicts(items: list[tuple[Path, int]], timeout: int = 300) -> dict[str, tuple[bool, str]]:
    """{path: (accepted, message)} from DeepSpeedConfig, run in one subprocess."""
    payload = json.dumps([[str(p), w] for p, w in items])
    env = {**os.environ, "DS_ACCELERATOR": "cpu", "DS_BUILD_OPS": "0", "PYTHONWARNINGS": "ignore"}
    port = str(29500 + os.getpid() % 1000)
    proc = subprocess.run([sys.executable, "-c", _WORKER, port], input=payload, capture_output=True, text=True,
                          timeout=timeout, env=env)
    marker = [line for line in proc.stdout.splitlines() if line.startswith("@@RESULT@@")]
    if not marker:
        raise RuntimeError(f"deepspeed worker failed (rc={proc.returncode}): {proc.stderr[-2000:]}")
    return {k: (v[0], v[1]) for k, v in json.loads(marker[0][len("@@RESULT@@"):]).items()}


def lint_verdict(entry: Entry):
    sys.path.insert(0, str(ROOT / "src"))
    from distdx.lint import LintOptions, lint

    return lint([str(entry.path)], options=LintOptions(world_size=entry.world_size, hf=entry.hf))


def table(markdown: bool = False, only_differences: bool = False) -> tuple[str, dict]:
    """The side-by-side table and its counts; ``only_differences`` keeps the rows where the verdicts differ."""
    entries = [e for e in manifest() if e.family == "deepspeed" and e.hf is not True]
    start = time.perf_counter()
    ds = deepspeed_verdicts([(e.path, e.world_size or 1) for e in entries])
    ds_seconds = time.perf_counter() - start
    rows, stats = [], {"configs": len(entries), "ds_rejected": 0, "lint_error": 0, "ds_rejected_lint_error": 0,
                       "ds_accepted_lint_error": 0, "valid_lint_error": 0}
    start = time.perf_counter()
    for e in entries:
        accepted, message = ds[str(e.path)]
        report = lint_verdict(e)
        errors = sorted({f.code for f in report.findings if f.severity == "error"})
        stats["ds_rejected"] += not accepted
        stats["lint_error"] += bool(errors)
        stats["ds_rejected_lint_error"] += (not accepted) and bool(errors)
        stats["ds_accepted_lint_error"] += accepted and bool(errors)
        stats["valid_lint_error"] += (not e.broken) and bool(errors)
        name = e.path.relative_to(CORPUS / "deepspeed").as_posix()
        ds_cell = "accepted" if accepted else f"rejected: {message[:90]}"
        lint_cell = ("error " + ", ".join(errors)) if errors else "ok"
        if not only_differences or accepted == bool(errors):
            rows.append((name, str(e.world_size or 1), ds_cell, lint_cell))
    stats["lint_seconds"] = round(time.perf_counter() - start, 2)
    stats["deepspeed_seconds"] = round(ds_seconds, 2)
    if markdown:
        lines = ["| config | world | DeepSpeed 0.19.8 | distdx lint |", "|---|---|---|---|"]
        lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
    else:
        widths = [max(len(r[i]) for r in rows + [("config", "world", "deepspeed", "lint")]) for i in range(4)]
        widths[2] = min(widths[2], 100)
        lines = ["  ".join(h.ljust(w) for h, w in zip(("config", "world", "deepspeed", "lint"), widths))]
        lines += ["  ".join(c[:100].ljust(w) for c, w in zip(row, widths)) for row in rows]
    lines.append("")
    lines.append(f"{stats['configs']} configs: DeepSpeed rejects {stats['ds_rejected']}, lint reports an error on "
                 f"{stats['lint_error']} (all {stats['ds_rejected_lint_error']} DeepSpeed rejects, plus "
                 f"{stats['ds_accepted_lint_error']} DeepSpeed accepts silently); errors on valid configs: "
                 f"{stats['valid_lint_error']}. DeepSpeed subprocess {stats['deepspeed_seconds']} s, lint "
                 f"{stats['lint_seconds']} s.")
    return "\n".join(lines), stats


if __name__ == "__main__":
    text, _ = table(markdown="--markdown" in sys.argv, only_differences="--differences" in sys.argv)
    print(text)
