"""`distdx doctor --distributed`: the doctor as a job, run by torchrun, srun or deepspeed.

Every rank probes its own node and runs the checks, then all ranks run a collective smoke test
on the job's backend (NCCL when CUDA is there, gloo otherwise): ``all_reduce``, ``all_gather``
and ``broadcast`` with known answers, and a timed ``all_reduce`` for a bandwidth figure (bus
bandwidth as nccl-tests counts it, 2(n-1)/n x size / time). Reports go to rank 0 with
``gather_object``; rank 0 compares them and names the rank (and node) that differs.
torch is imported here, and only here.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from datetime import timedelta

from distdx.doctor.checks import CheckOptions
from distdx.doctor.compare import Comparison, compare_reports
from distdx.doctor.engine import run_checks
from distdx.doctor.models import DoctorReport
from distdx.errors import DistdxError

_JOB_VARS = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


@dataclass(frozen=True)
class SmokeResult:
    backend: str
    all_reduce_ok: bool
    all_gather_ok: bool
    broadcast_ok: bool
    bus_bandwidth_gbps: float | None
    payload_bytes: int
    errors: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.all_reduce_ok and self.all_gather_ok and self.broadcast_ok and not self.errors


@dataclass(frozen=True)
class RankReport:
    rank: int
    local_rank: int
    hostname: str
    report: DoctorReport
    smoke: SmokeResult

    @property
    def member(self) -> str:
        return f"rank {self.rank} ({self.hostname})"


@dataclass(frozen=True)
class ClusterReport:
    world_size: int
    backend: str
    ranks: tuple[RankReport, ...]
    comparison: Comparison
    elapsed_s: float = 0.0
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def failed(self) -> bool:
        return any(r.report.failed or not r.smoke.ok for r in self.ranks)

    @property
    def odd_ranks(self) -> tuple[int, ...]:
        by_member = {r.member: r.rank for r in self.ranks}
        return tuple(by_member[m] for m in self.comparison.odd_members if m in by_member)

    def to_dict(self) -> dict:
        return {
            "world_size": self.world_size, "backend": self.backend, "ok": not self.failed,
            "odd_ranks": list(self.odd_ranks), "comparison": self.comparison.to_dict(),
            "ranks": [{"rank": r.rank, "local_rank": r.local_rank, "hostname": r.hostname,
                       "smoke": {**r.smoke.__dict__, "errors": list(r.smoke.errors), "ok": r.smoke.ok},
                       "report": r.report.to_dict()} for r in self.ranks],
            "elapsed_s": round(self.elapsed_s, 3),
        }


def in_launched_job(environ: dict[str, str] | None = None) -> bool:
    environ = dict(os.environ if environ is None else environ)
    return all(v in environ for v in _JOB_VARS)


def adopt_slurm_ranks(environ) -> None:  # type: ignore[no-untyped-def]
    """Under plain ``srun`` the ranks come as SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID; torch wants RANK..."""
    for torch_var, slurm_var in (("RANK", "SLURM_PROCID"), ("WORLD_SIZE", "SLURM_NTASKS"),
                                 ("LOCAL_RANK", "SLURM_LOCALID")):
        if torch_var not in environ and slurm_var in environ:
            environ[torch_var] = environ[slurm_var]


def _smoke(dist, torch, backend: str, device,  # type: ignore[no-untyped-def]
           payload_mb: float, iters: int) -> SmokeResult:
    rank, world = dist.get_rank(), dist.get_world_size()
    errors: list[str] = []

    def attempt(name: str, fn) -> bool:  # type: ignore[no-untyped-def]
        try:
            return bool(fn())
        except Exception as e:  # a broken collective is the finding, not a crash
            errors.append(f"{name}: {type(e).__name__}: {e}")
            return False

    def all_reduce() -> bool:
        t = torch.full((1024,), float(rank + 1), device=device)
        dist.all_reduce(t)
        return bool(torch.all(t == world * (world + 1) / 2).item())

    def all_gather() -> bool:
        parts = [torch.zeros(4, device=device) for _ in range(world)]
        dist.all_gather(parts, torch.full((4,), float(rank), device=device))
        return all(bool(torch.all(p == i).item()) for i, p in enumerate(parts))

    def broadcast() -> bool:
        t = torch.arange(256, dtype=torch.float32, device=device) if rank == 0 else torch.zeros(256, device=device)
        dist.broadcast(t, src=0)
        return bool(torch.equal(t.cpu(), torch.arange(256, dtype=torch.float32)))

    ar, ag, bc = attempt("all_reduce", all_reduce), attempt("all_gather", all_gather), attempt("broadcast", broadcast)
    numel = max(1, int(payload_mb * 2**20) // 4)
    bandwidth = None
    try:
        buf = torch.ones(numel, dtype=torch.float32, device=device)
        dist.all_reduce(buf)  # warm-up: connections and buffers
        if device.type == "cuda":
            torch.cuda.synchronize()
        dist.barrier()
        start = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(buf)
        if device.type == "cuda":
            torch.cuda.synchronize()
        elapsed = (time.perf_counter() - start) / iters
        size = numel * 4
        bandwidth = (size / elapsed) * (2 * (world - 1) / world) / 1e9 if world > 1 else size / elapsed / 1e9
    except Exception as e:
        errors.append(f"bandwidth all_reduce: {type(e).__name__}: {e}")
    return SmokeResult(backend=backend, all_reduce_ok=ar, all_gather_ok=ag, broadcast_ok=bc,
                       bus_bandwidth_gbps=None if bandwidth is None else round(bandwidth, 3),
                       payload_bytes=numel * 4, errors=tuple(errors))


def run_distributed(*, only: list[str] | None = None, options: CheckOptions | None = None,
                    backend: str | None = None, payload_mb: float = 8.0, iters: int = 5,
                    timeout_s: float = 120.0, disk_path: str = ".") -> tuple[ClusterReport | None, bool]:
    """Run on every rank of a launched job. Returns (the cluster report on rank 0 else None, job failed)."""
    adopt_slurm_ranks(os.environ)
    if not in_launched_job():
        raise DistdxError(
            "DX-DOCTOR-004", "--distributed must run inside a launched job",
            why=f"it needs {', '.join(_JOB_VARS)} from a launcher to form the process group",
            hint="torchrun --nproc_per_node 2 -m distdx doctor --distributed; under srun export MASTER_ADDR "
                 "and MASTER_PORT first (SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID give the ranks)")
    import torch
    import torch.distributed as dist

    from distdx.doctor.probe import facts, probe

    start = time.perf_counter()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    backend = backend or ("nccl" if torch.cuda.is_available() else "gloo")
    device = torch.device("cpu")
    if backend == "nccl":
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    dist.init_process_group(backend=backend, timeout=timedelta(seconds=timeout_s))
    try:
        rank, world = dist.get_rank(), dist.get_world_size()
        env = probe(disk_path=disk_path, probe_port=False)
        report = run_checks(env, only=only, options=options, facts=facts(env))
        smoke = _smoke(dist, torch, backend, device, payload_mb, iters)
        mine = RankReport(rank=rank, local_rank=local_rank, hostname=env.hostname, report=report, smoke=smoke)
        gathered: list[RankReport] | None = [None] * world if rank == 0 else None  # type: ignore[list-item]
        dist.gather_object(mine, gathered, dst=0)
        cluster = None
        verdict = [False]
        if rank == 0:
            ranks = tuple(sorted(gathered or (), key=lambda r: r.rank))
            comparison = compare_reports({r.member: r.report for r in ranks})
            cluster = ClusterReport(world_size=world, backend=backend, ranks=ranks, comparison=comparison,
                                    elapsed_s=time.perf_counter() - start)
            verdict = [cluster.failed]
        dist.broadcast_object_list(verdict, src=0)
        return cluster, bool(verdict[0])
    finally:
        dist.destroy_process_group()
