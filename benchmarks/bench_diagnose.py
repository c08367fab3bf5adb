"""Time `distdx diagnose` on a 1 GB log of 512 interleaved ranks, beside `grep -c error`.

Generates the log once (cached under .bench/, git-ignored), runs the diagnosis in a child
process, checks that it names the buried failure (rank 317, not the torchelastic "Root Cause"),
and prints MB/s, the child's peak RSS and the ratio to grep. Then times the bad-input cases at
full size: a 200 MB single-line file and a directory of 10,000 small files.

    python benchmarks/bench_diagnose.py [--size-mb 1024] [--skip-bad-input] [--runs 5] [--against OTHER/src]
Targets: >= 350 MB/s and <= 256 MB peak memory for the whole diagnosis ("Diagnosis at scale"), on
the 400 MB log (--size-mb 400) as on the default one. With --runs N each figure is the median of N
runs; --against times another distdx source tree (e.g. a worktree of the previous commit) on the
same log, interleaved with this one, as the baseline column.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from gen_log import generate  # noqa: E402

BENCH = ROOT / ".bench"
FALLBACK = (
    "import json, sys\n"
    "from distdx.logs import read_logs\n"
    "p = read_logs(sys.argv[1:])\n"
    "ff = p.first_failure\n"
    "print(json.dumps({'first_failure': ff and {'rank': ff.rank, 'host': ff.host, 'line': ff.line.lineno, 'text': ff.text}}))\n"
)


def diagnose_cmd(paths: list[str]) -> tuple[list[str], str]:
    """The CLI when `distdx diagnose` exists, else the log layer alone."""
    try:
        import distdx.cli.diagnose_cmd  # noqa: F401

        return [sys.executable, "-m", "distdx", "diagnose", *paths, "--format", "json"], "distdx diagnose --format json"
    except ModuleNotFoundError:
        return [sys.executable, "-c", FALLBACK, *paths], "read_logs (distdx diagnose not available)"


def run_child(cmd: list[str], timeout: int = 600, src: Path = ROOT / "src",
              env: dict[str, str] | None = None) -> tuple[float, int, str, str, int, float]:
    """(seconds, peak RSS of this child in KiB, stdout, stderr, exit code, CPU seconds of the
    child and its own children such as grep); each run in its own wrapper so RUSAGE_CHILDREN's
    maximum is this command's alone."""
    wrapper = (
        "import resource, subprocess, sys, time, json\n"
        "t = time.perf_counter()\n"
        "p = subprocess.run(sys.argv[1:], capture_output=True)\n"
        "dt = time.perf_counter() - t\n"
        "ru = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
        "rss, cpu = ru.ru_maxrss, ru.ru_utime + ru.ru_stime\n"
        "sys.stderr.buffer.write(p.stderr)\n"
        "sys.stdout.buffer.write(p.stdout)\n"
        "sys.stderr.write('\\n@@' + json.dumps([dt, rss, p.returncode, cpu]))\n"
    )
    p = subprocess.run([sys.executable, "-c", wrapper, *cmd], capture_output=True, timeout=timeout, text=True,
                       errors="replace", env=dict(os.environ, **(env or {}), PYTHONPATH=str(src)))
    err, _, meta = p.stderr.rpartition("\n@@")
    dt, rss, rc, cpu = json.loads(meta)
    return dt, rss, p.stdout, err, rc, cpu


def first_rank(out: str) -> int | None:
    try:
        doc = json.loads(out)
    except ValueError:
        return None
    ff = doc.get("first_failure") or {}
    return ff.get("rank")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--skip-bad-input", action="store_true")
    ap.add_argument("--runs", type=int, default=1, help="time each command this many times; figures are medians")
    ap.add_argument("--against", metavar="SRC", help="another distdx source tree to time on the same log")
    args = ap.parse_args()
    BENCH.mkdir(exist_ok=True)
    log = BENCH / f"bench-{args.size_mb}m.log"
    if not log.exists():
        t = time.perf_counter()
        info = generate(str(log) + ".tmp", args.size_mb)
        os.replace(str(log) + ".tmp", log)
        print(f"generated {log} ({info['bytes'] / 1e6:.0f} MB) in {time.perf_counter() - t:.0f}s")
    size = log.stat().st_size
    subprocess.run(["cat", str(log)], stdout=subprocess.DEVNULL, check=False)  # warm the page cache for both

    cmd, what = diagnose_cmd([str(log)])
    logs_cmd = [sys.executable, "-c", FALLBACK, str(log)]
    trees = {"this": ROOT / "src"}
    envs: dict[str, dict[str, str]] = {"this": {}}
    if args.against:
        trees["against"] = Path(args.against).resolve()
        # its own knowledge cache: two versions in one folder would replace each other's entries
        envs["against"] = {"DISTDX_CACHE_DIR": str(BENCH / "cache-against")}
        tiny = BENCH / "warm-up.log"
        tiny.write_text("RuntimeError: CUDA out of memory.\n")
        for name in trees:  # fill each tree's knowledge cache before timing
            run_child(diagnose_cmd([str(tiny)])[0], src=trees[name], env=envs[name])
    timed: dict[str, list[tuple[float, int, str, str, int, float]]] = {name: [] for name in trees}
    layer, grepped = [], []
    for i in range(args.runs):  # interleaved, so that other work on the machine slows both alike
        for name in (trees if i % 2 == 0 else list(trees)[::-1]):
            timed[name].append(run_child(cmd, src=trees[name], env=envs[name]))
        layer.append(run_child(logs_cmd))
        grepped.append(run_child(["grep", "-c", "error", str(log)]))

    def median(runs: list[tuple[float, int, str, str, int, float]]) -> tuple[float, int, str, str, int, float]:
        wall = statistics.median(r[0] for r in runs)
        pick = min(runs, key=lambda r: abs(r[0] - wall))
        return wall, max(r[1] for r in runs), pick[2], pick[3], pick[4], statistics.median(r[5] for r in runs)

    dt, rss, out, err, rc, cpu = median(timed["this"])
    ldt, lrss, lout, _, _, lcpu = median(layer)
    gdt, _, gout, _, _, gcpu = median(grepped)
    rank = first_rank(out)
    ok = rank == 317
    mbps = size / dt / 1e6
    runs = f" (median of {args.runs} runs, peak RSS the largest)" if args.runs > 1 else ""
    print(f"input            : {size / 1e6:.0f} MB, 512 ranks, failure on rank 317 (torchelastic names rank 312)")
    print(f"timed            : {what}{runs}")
    print(f"diagnose         : {dt:.2f} s  {mbps:.0f} MB/s  peak RSS {rss / 1024:.0f} MB  exit {rc}  CPU {cpu:.2f} s")
    if args.against:
        adt, arss, aout, _, arc, acpu = median(timed["against"])
        print(f"  against        : {adt:.2f} s  {size / adt / 1e6:.0f} MB/s  peak RSS {arss / 1024:.0f} MB  exit {arc}  "
              f"CPU {acpu:.2f} s  ({args.against}; first failure rank {first_rank(aout)}; "
              f"{'same' if aout == out else 'DIFFERENT'} output)")
    print(f"  logs layer     : {ldt:.2f} s  {size / ldt / 1e6:.0f} MB/s  peak RSS {lrss / 1024:.0f} MB  CPU {lcpu:.2f} s"
          f"  (read_logs alone, first failure rank {first_rank(lout)})")
    print(f"grep -c error    : {gdt:.2f} s  {size / gdt / 1e6:.0f} MB/s  CPU {gcpu:.2f} s  ({gout.strip()} lines)")
    print(f"load average     : {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (other work on the machine slows every figure)")
    print(f"ratio to grep    : {dt / gdt:.1f}x slower")
    print(f"first failure    : rank {rank} -> {'RIGHT' if ok else 'WRONG'}")
    print(f"targets          : >= 350 MB/s {'met' if mbps >= 350 else 'MISSED'}; <= 256 MB {'met' if rss / 1024 <= 256 else 'MISSED'}")
    if rc not in (0, 1):
        print(err[-2000:])
    failed = not ok or mbps < 350 or rss / 1024 > 256

    if not args.skip_bad_input:
        one = BENCH / "one-line-200m.log"
        if not one.exists():
            with open(one, "wb") as fh:
                block = b"0123456789abcdef" * 65536
                for _ in range(200):
                    fh.write(block)
                fh.write(b" RuntimeError: the end of a 200 MB line\n")
        many = BENCH / "many-files"
        if not many.exists():
            many.mkdir()
            for i in range(10_000):
                (many / f"rank{i}.log").write_text(
                    "".join(f"[rank{i}]:[2024-05-01 12:00:{s:02d},000] step={s} loss=2.0\n" for s in range(20))
                    + ("ValueError: bad sample in shard 7\n" if i == 4321 else "")
                )
        for label, path in (("200 MB single line", one), ("10,000-file directory", many)):
            cmd, _ = diagnose_cmd([str(path)])
            dt, rss, out, err, rc, cpu = run_child(cmd)
            tb = "Traceback" in err
            print(f"{label:<22}: {dt:.2f} s  CPU {cpu:.2f} s  peak RSS {rss / 1024:.0f} MB  exit {rc}  "
                  f"{'TRACEBACK!' if tb else 'no traceback'}  first failure rank {first_rank(out)}")
            failed |= tb
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
