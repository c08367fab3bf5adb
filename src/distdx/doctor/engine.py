"""Run the catalogue's checks over an :class:`Environment` and collect a :class:`DoctorReport`."""

from __future__ import annotations

import time

from distdx.doctor.catalogue import catalogue
from distdx.doctor.checks import REGISTRY, CheckOptions
from distdx.doctor.models import CheckResult, CheckSpec, DoctorReport, Environment, Verdict
from distdx.errors import DistdxError


def select(only: list[str] | tuple[str, ...] | None = None) -> tuple[CheckSpec, ...]:
    """The catalogue entries whose code equals or starts with one of ``only`` (all when empty)."""
    specs = tuple(s for s in catalogue() if s.status != "deprecated")  # a deprecated code keeps its entry, not its run
    if not only:
        return specs
    wanted = [o.strip().upper() for o in only if o.strip()]
    chosen = tuple(s for s in specs if any(s.code == w or s.code.startswith(w) for w in wanted))
    if not chosen:
        raise DistdxError("DX-DOCTOR-002", f"no check matches {', '.join(only)}",
                          why="--only takes check codes (DOC-NCCL-004) or prefixes (DOC-NCCL)",
                          hint="run `distdx doctor --list` for the catalogue")
    return chosen


def judge(spec: CheckSpec, env: Environment, options: CheckOptions) -> CheckResult:
    fn = REGISTRY.get(spec.code)
    if fn is None:
        raise DistdxError("DX-DOCTOR-003", f"{spec.code} is in checks.yaml but has no function",
                          hint="register one with @check in distdx/doctor/checks.py")
    try:
        verdict = fn(env, options)
    except Exception as e:  # one broken check must not hide the others
        verdict = Verdict("skip", f"check could not run: {type(e).__name__}: {e}")
    return CheckResult(
        code=spec.code, title=spec.title, status=verdict.status, severity=spec.severity,
        message=verdict.message, fix=spec.fix if verdict.status in ("warn", "fail") else None,
        symptom=spec.symptom, root_cause=spec.root_cause, fix_pattern=spec.fix_pattern,
        details=dict(verdict.details),
    )


def run_checks(env: Environment, *, only: list[str] | tuple[str, ...] | None = None,
               options: CheckOptions | None = None, facts: dict | None = None) -> DoctorReport:
    start = time.perf_counter()
    options = options or CheckOptions()
    results = tuple(judge(spec, env, options) for spec in select(only))
    return DoctorReport(checks=results, facts=facts or {}, elapsed_s=time.perf_counter() - start)


def doctor(*, only: list[str] | tuple[str, ...] | None = None, options: CheckOptions | None = None,
           disk_path: str = ".", probe_port: bool | None = None, deepspeed_ops: bool = False) -> DoctorReport:
    """Probe this machine and judge it: the library entry point of `distdx doctor`."""
    from distdx.doctor.probe import facts, probe

    start = time.perf_counter()
    select(only)  # a bad --only fails before any probing
    env = probe(disk_path=disk_path, probe_port=probe_port, deepspeed_ops=deepspeed_ops)
    report = run_checks(env, only=only, options=options, facts=facts(env))
    return DoctorReport(checks=report.checks, facts=report.facts, elapsed_s=time.perf_counter() - start)
