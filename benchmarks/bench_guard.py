"""Benchmark of the distdx runtime guard.

(a) Detection: each runtime fault scenario of the lab (src/distdx/lab/scenarios) runs under
    torchrun (2 ranks, gloo, CPU) three ways: plain, with TORCH_DISTRIBUTED_DEBUG=DETAIL, and with
    `distdx run --guard`. For each: seconds from launch to the first error line (plain, DETAIL),
    whether DETAIL's own collective check fired, and for the guard the seconds from launch to its
    first event of the expected kind and whether that event names the right rank and step. The
    process group's collective timeout is --pg-timeout (default 60 s), so a plain hang ends there.
    For the scenarios that stall (a rank stops, skips a call, runs out of data or dies while its
    peers wait), `stall_to_report_s` is the time from the log line the program prints at the stall
    (its timestamp in the run's timestamped log) to the guard's first event of the expected kind.
    Two more scenarios have no fault at all, a legitimately slow step of --slow-s seconds on rank 0
    while rank 1 waits (a checkpoint saved to a slow file system, an evaluation pass; the guard's
    tests/guard/scenarios/train.py): `false_alarms` counts their warning and error events.
(b) Overhead: a small unmodified 2-rank DDP loop (MLP, DataLoader, SGD, one logging all_reduce per
    step) on gloo, with and without the guard, interleaved over --repeats runs; each run reports
    the median step time of rank 0 after warm-up. Overhead = median of the guard runs' medians
    over the plain runs' medians, minus one; the spread is each side's min..max.

    python benchmarks/bench_guard.py [--part detection|overhead|all] [--json OUT.json]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import socket
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from distdx.guard import read_events  # noqa: E402
from distdx.runner import execute, plan_run  # noqa: E402

LAB = ROOT / "src" / "distdx" / "lab" / "scenarios"
TRAIN = ROOT / "tests" / "guard" / "scenarios" / "train.py"


@dataclasses.dataclass(frozen=True)
class Scenario:
    name: str
    script: Path
    env: dict
    kinds: tuple[str, ...]  # guard event kinds that count as catching it; () for a scenario without fault
    rank: int | None  # the rank at fault (None: any)
    step: int | None  # the step of the fault (None: not checked)
    stall: str | None = None  # the log text the program prints when its peers start to wait (a stall)
    modes: tuple[str, ...] = ("plain", "detail", "guard")


def scenarios(timeout_s: float, slow_s: float) -> list[Scenario]:
    t = {"LAB_TIMEOUT_S": str(timeout_s), "PG_TIMEOUT_S": str(timeout_s), "DS_ACCELERATOR": "cpu"}
    # the slow step must not reach the job's own collective timeout: that would be a real failure
    slow_timeout = str(max(timeout_s, 3 * slow_s))
    slow = {**t, "PG_TIMEOUT_S": slow_timeout, "FAULT_RANK": "0", "SLOW_S": str(slow_s)}
    return [
        Scenario("collective-shape-mismatch", LAB / "collective_shape_mismatch.py", t, ("collective_mismatch",), 1, 0),
        Scenario("rank-skips-collective", LAB / "rank_skips_collective.py", t, ("collective_diverged", "collective_skipped"), 1, 2,
                 stall="rank 1 step 1: grad sum"),
        Scenario("stalled-rank", LAB / "stalled_rank.py", t, ("hang",), 1, 2, stall="rank 1 step 2: waiting for"),
        Scenario("stalled-rank-ddp", TRAIN, {**t, "FAULT": "lag"}, ("hang",), 1, 3, stall="rank 1 step 3: stalled"),
        Scenario("rank-dependent-model", LAB / "rank_dependent_model.py", t, ("model_mismatch",), 1, None),
        Scenario("uneven-batches", LAB / "uneven_batches.py", t, ("uneven_batches",), 0, 2, stall="rank 1 step 1: loss"),
        Scenario("nan-at-step", LAB / "nan_at_step.py", {**t, "LAB_FAULT_STEP": "3"}, ("nonfinite_loss", "exception"), 1, 3),
        Scenario("loss-scale-overflow", LAB / "loss_scale_overflow.py", t, ("loss_scale_collapse",), None, None),
        Scenario("rank-killed", LAB / "rank_killed.py", {**t, "LAB_FAULT_STEP": "3"}, ("rank_lost",), 1, 3,
                 stall="rank 1 step 2: loss"),
        Scenario("slow-checkpoint-save", TRAIN, {**slow, "FAULT": "checkpoint"}, (), None, None, modes=("guard",)),
        Scenario("slow-evaluation", TRAIN, {**slow, "FAULT": "evaluation"}, (), None, None, modes=("guard",)),
    ]


STALLING = {sc.name for sc in scenarios(60.0, 30.0) if sc.stall}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(script: Path, env: dict, out: Path, *, guard: bool, limit_s: float, nproc: int = 2):
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(nproc),
           "--master-addr", "127.0.0.1", "--master-port", str(free_port()), str(script)]
    plan = plan_run(cmd, out_dir=out, guard=guard)
    plan = dataclasses.replace(plan, env={**plan.env, **env})
    started = time.time()
    result = execute(plan, echo=None, diagnose=False, timeout_s=limit_s, grace_s=5.0)
    return started, result


ERROR_LINE = re.compile(r"Traceback|Error|error:|EnforceNotMet|SIGABRT|SIGSEGV|Signal \d+|exitcode")


def logged_at(result, matches) -> float | None:
    """The time of the first line of the run's timestamped log for which ``matches(text)`` holds."""
    with open(result.timestamped_log, encoding="utf-8", errors="replace") as f:
        for line in f:
            stamp, _, text = line.partition(" ")
            if matches(text):
                return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp()
    return None


def first_error_s(result, started: float) -> float | None:
    t = logged_at(result, lambda text: ERROR_LINE.search(text) and "[distdx-guard]" not in text)
    return None if t is None else round(t - started, 2)


def run_detection(timeout_s: float, slow_s: float, work: Path, only: str | None = None) -> list[dict]:
    rows = []
    for sc in scenarios(timeout_s, slow_s):
        if only and sc.name not in only.split(","):
            continue
        row: dict = {"scenario": sc.name, "fault": bool(sc.kinds)}
        for mode in sc.modes:
            env = dict(sc.env)
            if mode == "detail":
                env["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"
            out = work / f"{sc.name}-{mode}"
            started, result = launch(sc.script, env, out, guard=mode == "guard", limit_s=timeout_s + 45)
            text = Path(result.output_log).read_text(encoding="utf-8", errors="replace")
            entry = {
                "exit_code": result.exit_code,
                "duration_s": round(result.duration_s, 2),
                "first_error_s": first_error_s(result, started),
                "timed_out": result.timed_out,
            }
            if mode == "detail":
                entry["detail_check_fired"] = bool(re.search(r"Detected mismatch between collectives", text))
                entry["segfault"] = "SIGSEGV" in text
            if mode == "guard":
                events = read_events(out / "guard") if (out / "guard").is_dir() else []
                hits = [e for e in events if e.kind in sc.kinds]
                first = hits[0] if hits else None
                stalled_at = logged_at(result, lambda text: sc.stall in text) if sc.stall else None
                row["stall_to_report_s"] = (round(first.time - stalled_at, 2)
                                            if first is not None and stalled_at is not None else None)
                row["false_alarms"] = None if sc.kinds else sum(e.severity != "info" for e in events)
                entry.update(
                    caught=first is not None,
                    kind=first.kind if first else None,
                    detect_s=round(first.time - started, 2) if first else None,
                    rank=first.rank if first else None,
                    step=first.step if first else None,
                    right_rank=bool(first) and (sc.rank is None or first.rank == sc.rank),
                    right_step=bool(first) and (sc.step is None or first.step == sc.step),
                    message=first.message if first else None,
                )
            if mode == "guard" and not sc.kinds:
                entry["alarms"] = [e.message for e in events if e.severity != "info"]
            row[mode] = entry
            print(f"  {sc.name:<26} {mode:<6} {json.dumps(entry)[:220]}", file=sys.stderr, flush=True)
        rows.append(row)
    return rows


LOOP = r'''
import json, os, statistics, time
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
width = int(os.environ.get("WIDTH", "512"))
model = DDP(torch.nn.Sequential(torch.nn.Linear(128, width), torch.nn.ReLU(), torch.nn.Linear(width, width),
                                torch.nn.ReLU(), torch.nn.Linear(width, 10)))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
steps, warmup = int(os.environ["STEPS"]), int(os.environ["WARMUP"])
data = TensorDataset(torch.randn(64 * (steps + warmup), 128), torch.randint(0, 10, (64 * (steps + warmup),)))
times = []
t = time.perf_counter()
for i, (x, y) in enumerate(DataLoader(data, batch_size=64)):
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    logged = loss.detach().clone()
    dist.all_reduce(logged)
    now = time.perf_counter()
    if i >= warmup:
        times.append(now - t)
    t = now
if rank == 0:
    print("STEPTIMES " + json.dumps({"median_ms": statistics.median(times) * 1e3, "mean_ms": statistics.fmean(times) * 1e3,
                                      "steps": len(times)}), flush=True)
dist.destroy_process_group()
'''


COSTS = r'''
import json, os, sys, time
import torch, torch.distributed as dist
import distdx.guard as guard
from distdx.guard import runtime

guard.install(out_dir=sys.argv[1], echo=False)
dist.init_process_group("gloo", rank=0, world_size=1)  # MASTER_ADDR/PORT: a real TCPStore
s = runtime.session()
width = int(os.environ.get("WIDTH", "512"))
model = torch.nn.Sequential(torch.nn.Linear(128, width), torch.nn.ReLU(), torch.nn.Linear(width, width),
                            torch.nn.ReLU(), torch.nn.Linear(width, 10))
for p in model.parameters():
    p.grad = torch.randn_like(p)
params = list(model.parameters())
loss = torch.tensor(0.5, requires_grad=True)
t = torch.ones(1)
raw_all_reduce = dist.distributed_c10d.all_reduce.__wrapped__


def us(f, n):
    best = float("inf")
    for _ in range(5):  # the least disturbed of five rounds
        start = time.perf_counter()
        for _ in range(n):
            f()
        best = min(best, (time.perf_counter() - start) / n * 1e6)
    return best


out = {
    "all_reduce_raw_us": us(lambda: raw_all_reduce(t), 2000),
    "all_reduce_guarded_us": us(lambda: dist.all_reduce(t), 2000),
    "loss_check_us": us(lambda: s.check_loss(loss), 2000),
    "grad_check_us": us(lambda: s.check_grads(params), 200),
    "heartbeat_publish_us": us(s.publish, 500),
    "grad_every": s.config.grad_every,
    "sync_publish_s": s.config.sync_publish_s,
}
print("COSTS " + json.dumps(out), flush=True)
guard.uninstall()
dist.destroy_process_group()
'''


def run_costs(work: Path, step_ms: float | None) -> dict:
    """Per-call costs of the guard in one process (a world of one on a real TCPStore), and the
    per-step overhead they add up to on the overhead loop (one all_reduce per step)."""
    import subprocess

    script = work / "costs.py"
    script.write_text(COSTS)
    env = {**os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port()), "OMP_NUM_THREADS": "1",
           "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.run([sys.executable, str(script), str(work / "costs-guard")], env=env, capture_output=True,
                          text=True, timeout=300)
    m = re.search(r"COSTS (\{.*\})", proc.stdout)
    if not m:
        raise SystemExit(f"cost measurement failed:\n{proc.stdout}\n{proc.stderr}")
    c = {k: round(v, 2) if isinstance(v, float) else v for k, v in json.loads(m.group(1)).items()}
    per_step = (c["all_reduce_guarded_us"] - c["all_reduce_raw_us"]) + c["loss_check_us"] + c["grad_check_us"] / c["grad_every"]
    if step_ms:
        per_step += c["heartbeat_publish_us"] * min(1.0, step_ms / 1e3 / c["sync_publish_s"])
        c["step_ms"] = step_ms
        c["estimated_overhead_pct"] = round(per_step / (step_ms * 1e3) * 100, 2)
    c["guard_us_per_step"] = round(per_step, 1)
    return c


def run_overhead(repeats: int, steps: int, warmup: int, work: Path) -> dict:
    script = work / "ddp_loop.py"
    script.write_text(LOOP)
    runs: dict[str, list[float]] = {"plain": [], "guard": []}
    exit_failures = {"plain": 0, "guard": 0}
    for r in range(repeats):
        for mode in (("plain", "guard") if r % 2 == 0 else ("guard", "plain")):
            out = work / f"overhead-{mode}-{r}"
            _, result = launch(script, {"STEPS": str(steps), "WARMUP": str(warmup)}, out, guard=mode == "guard", limit_s=600)
            text = Path(result.output_log).read_text(encoding="utf-8", errors="replace")
            m = re.search(r"STEPTIMES (\{.*\})", text)
            if not m:
                raise SystemExit(f"overhead run {mode} {r} failed (exit {result.exit_code}); its output ends:\n{text[-3000:]}")
            if result.exit_code != 0:
                # the step times were measured and printed; torch's own teardown aborts now and then
                # ("terminate called without an active exception"), with or without the guard
                exit_failures[mode] += 1
                print(f"  overhead {mode:<5} run {r}: exit {result.exit_code} after its step times were printed",
                      file=sys.stderr, flush=True)
            runs[mode].append(json.loads(m.group(1))["median_ms"])
            print(f"  overhead {mode:<5} run {r}: median step {runs[mode][-1]:.3f} ms", file=sys.stderr, flush=True)
    plain, guard = statistics.median(runs["plain"]), statistics.median(runs["guard"])
    # runs r of both modes ran back to back: their ratio cancels most of the machine's drift
    ratios = sorted(g / p for g, p in zip(runs["guard"], runs["plain"]))
    return {
        "paired_overhead_pct_median": round((statistics.median(ratios) - 1) * 100, 2),
        "paired_overhead_pct_range": [round((ratios[0] - 1) * 100, 2), round((ratios[-1] - 1) * 100, 2)],
        "best_run_overhead_pct": round((min(runs["guard"]) / min(runs["plain"]) - 1) * 100, 2),
        "steps_per_run": steps,
        "warmup": warmup,
        "repeats": repeats,
        "plain_median_ms": round(plain, 3),
        "guard_median_ms": round(guard, 3),
        "plain_runs_ms": [round(v, 3) for v in runs["plain"]],
        "guard_runs_ms": [round(v, 3) for v in runs["guard"]],
        "overhead_pct": round((guard / plain - 1) * 100, 2),
        "failed_exits": exit_failures,
    }


def render(report: dict) -> str:
    out = []
    if "detection" in report:
        out += [
            f"Detection (2 ranks, gloo, collective timeout {report['pg_timeout_s']:.0f} s; seconds from launch)",
            "",
            "| scenario | plain: first error | DETAIL: first error (its check) | guard: caught at (same run's first error) | right rank / step |",
            "|---|---|---|---|---|",
        ]
        for row in report["detection"]:
            if "plain" not in row:
                continue
            p, d, g = row["plain"], row["detail"], row["guard"]
            dnote = "fired" if d.get("detail_check_fired") else ("SIGSEGV" if d.get("segfault") else "no")
            out.append(
                f"| {row['scenario']} | {p['first_error_s']} s (exit {p['exit_code']}) | {d['first_error_s']} s ({dnote}) "
                f"| {'yes' if g['caught'] else 'no'}: {g['detect_s']} s ({g['first_error_s']} s), {g['kind']} "
                f"| {'yes' if g['right_rank'] else 'no'} / {'yes' if g['right_step'] else 'no'} |"
            )
        out += ["", "| scenario | guard named the stall, seconds after it | false alarms (no-fault scenarios) |", "|---|---|---|"]
        for row in report["detection"]:
            if row["scenario"] in STALLING:
                named = "not named" if row["stall_to_report_s"] is None else f"{row['stall_to_report_s']} s"
            else:
                named = "-"
            alarms = "-" if row["false_alarms"] is None else str(row["false_alarms"])
            out.append(f"| {row['scenario']} | {named} | {alarms} |")
    if "overhead" in report:
        o = report["overhead"]
        out += [
            "",
            f"Overhead (2-rank DDP loop on gloo, {o['steps_per_run']} timed steps x {o['repeats']} runs each, interleaved):",
            f"  plain median step {o['plain_median_ms']} ms (runs {min(o['plain_runs_ms'])}..{max(o['plain_runs_ms'])})",
            f"  guard median step {o['guard_median_ms']} ms (runs {min(o['guard_runs_ms'])}..{max(o['guard_runs_ms'])})",
            f"  overhead of the medians {o['overhead_pct']:+.2f} %; paired (back-to-back runs) median "
            f"{o['paired_overhead_pct_median']:+.2f} % (range {o['paired_overhead_pct_range'][0]:+.2f}..{o['paired_overhead_pct_range'][1]:+.2f} %); "
            f"best run vs best run {o['best_run_overhead_pct']:+.2f} %",
            f"  runs that exited non-zero after printing their step times: plain {o.get('failed_exits', {}).get('plain', 0)}, "
            f"guard {o.get('failed_exits', {}).get('guard', 0)}",
        ]
    if "costs" in report:
        c = report["costs"]
        out += [
            "",
            "Guard costs per call (one process, real TCPStore, best of 5 rounds):",
            f"  all_reduce of 1 float: {c['all_reduce_raw_us']} us plain, {c['all_reduce_guarded_us']} us guarded; "
            f"loss check {c['loss_check_us']} us; gradient check {c['grad_check_us']} us (every {c['grad_every']} steps); "
            f"heartbeat publish {c['heartbeat_publish_us']} us (at most every {c['sync_publish_s']} s on the main thread)",
            f"  = {c['guard_us_per_step']} us per step of the overhead loop"
            + (f", {c['estimated_overhead_pct']} % of its {c['step_ms']} ms median step" if "estimated_overhead_pct" in c else ""),
        ]
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", choices=("detection", "overhead", "costs", "all"), default="all")
    ap.add_argument("--pg-timeout", type=float, default=60.0, help="the jobs' collective timeout, seconds")
    ap.add_argument("--repeats", type=int, default=6)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--slow-s", type=float, default=30.0, help="length of the legitimately slow step, seconds")
    ap.add_argument("--only", help="comma-separated scenario names of the detection part (default: all)")
    ap.add_argument("--json", help="also write the report as JSON here")
    ap.add_argument("--render", metavar="REPORT.json", help="only print the tables of an earlier --json report")
    args = ap.parse_args()
    if args.render:
        print(render(json.loads(Path(args.render).read_text())))
        return 0
    report: dict = {"pg_timeout_s": args.pg_timeout, "host_cpus": os.cpu_count()}
    with tempfile.TemporaryDirectory(prefix="bench-guard-") as tmp:
        work = Path(tmp)
        if args.part in ("detection", "all"):
            report["detection"] = run_detection(args.pg_timeout, args.slow_s, work, args.only)
        if args.part in ("overhead", "all"):
            report["overhead"] = run_overhead(args.repeats, args.steps, args.warmup, work)
        if args.part in ("overhead", "costs", "all"):
            report["costs"] = run_costs(work, report.get("overhead", {}).get("plain_median_ms"))
    print(render(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
