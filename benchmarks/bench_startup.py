"""Wall time of `distdx diagnose` on a small log: what a user waits for at the terminal.

Runs the real CLI on the bundled ZeRO-3 OOM example (and on a one-line log) several times, with the
knowledge cache (`distdx.paths.cached`) warm and with it off (`DISTDX_NO_CACHE=1`, as every run
was before the cache), and prints the medians side by side. Target: <= 0.25 s warm. With --against
another distdx source tree (e.g. a worktree of the previous commit), its warm-cache wall time is a
third column, measured in the same loop (runs alternate between the trees).

    python benchmarks/bench_startup.py [--runs 7] [--against OTHER/src]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def wall(args: list[str], envs: list[dict[str, str]], runs: int) -> list[float]:
    """Median wall time of ``args`` under each environment, the runs of all of them interleaved."""
    times: list[list[float]] = [[] for _ in envs]
    for _ in range(runs):
        for i, env in enumerate(envs):
            started = time.perf_counter()
            subprocess.run(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
            times[i].append(time.perf_counter() - started)
    return [statistics.median(t) for t in times]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--against", metavar="SRC", help="another distdx source tree to time beside this one")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        one_line = Path(tmp) / "one.log"
        one_line.write_text("[rank1]: RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1275, unhandled system error\n")
        this = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        envs = [{**this, "DISTDX_NO_CACHE": "1"}, {**this, "DISTDX_CACHE_DIR": str(Path(tmp) / "cache")}]
        header = "| input | no cache (as before) | warm cache |"
        if args.against:
            envs.append({**os.environ, "PYTHONPATH": str(Path(args.against).resolve()),
                         "DISTDX_CACHE_DIR": str(Path(tmp) / "cache-against")})
            header += f" {args.against}, warm cache |"
        print(header)
        print("|---" * (header.count("|") - 1) + "|")
        for name, path in (("examples/logs/deepspeed-zero3-oom.log", ROOT / "examples/logs/deepspeed-zero3-oom.log"),
                           ("a one-line log", one_line)):
            cmd = [sys.executable, "-m", "distdx", "diagnose", str(path)]
            for env in envs[1:]:
                subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, check=False)  # fills the cache
            print(f"| {name} | " + " | ".join(f"{t:.2f} s" for t in wall(cmd, envs, args.runs)) + " |")
        print(f"(medians of {args.runs} runs; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
