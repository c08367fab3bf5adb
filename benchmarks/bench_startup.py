"""Wall time of `distdx diagnose` on a small log: what a user waits for at the terminal.

Runs the real CLI on the bundled ZeRO-3 OOM example (and on a one-line log) several times, with the
knowledge cache (`distdx.knowledge.cache`) warm and with it off (`DISTDX_NO_CACHE=1`, as every run
was before the cache), and prints the medians side by side. Target: <= 0.25 s warm.

    python benchmarks/bench_startup.py [--runs 7]
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


def wall(args: list[str], env: dict[str, str], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        one_line = Path(tmp) / "one.log"
        one_line.write_text("[rank1]: RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1275, unhandled system error\n")
        warm = {**os.environ, "DISTDX_CACHE_DIR": str(Path(tmp) / "cache")}
        cold = {**os.environ, "DISTDX_NO_CACHE": "1"}
        print("| input | no cache (as before) | warm cache |")
        print("|---|---|---|")
        for name, path in (("examples/logs/deepspeed-zero3-oom.log", ROOT / "examples/logs/deepspeed-zero3-oom.log"),
                           ("a one-line log", one_line)):
            cmd = [sys.executable, "-m", "distdx", "diagnose", str(path)]
            subprocess.run(cmd, env=warm, stdout=subprocess.DEVNULL, check=False)  # fills the cache
            print(f"| {name} | {wall(cmd, cold, args.runs):.2f} s | {wall(cmd, warm, args.runs):.2f} s |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
