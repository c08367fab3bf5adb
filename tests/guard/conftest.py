"""Launch a scenario under torchrun (2 ranks, gloo, CPU) through `distdx run`'s runner."""

from __future__ import annotations

import dataclasses
import socket
import sys
import time
from pathlib import Path

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclasses.dataclass
class Launch:
    result: object
    events: list
    started: float

    def errors(self):
        return [e for e in self.events if e.severity != "info"]

    def first(self, kind):
        found = [e for e in self.events if e.kind == kind]
        assert found, f"no {kind} event; got {[(e.kind, e.message) for e in self.events]}"
        return found[0]


@pytest.fixture
def launch(tmp_path):
    pytest.importorskip("torch", reason="the scenarios are torch programs")
    from distdx.guard import read_events
    from distdx.runner import execute, plan_run

    def run(script: Path, *, env=None, guard_options=None, timeout_s=90.0, diagnose=False, guard=True) -> Launch:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
               "--master-addr", "127.0.0.1", "--master-port", str(free_port()), str(script)]
        plan = plan_run(cmd, out_dir=tmp_path / "out", guard=guard,
                        guard_options={"interval_s": "0.25", **(guard_options or {})})
        plan = dataclasses.replace(plan, env={**plan.env, "OMP_NUM_THREADS": "1", **(env or {})})
        started = time.time()
        result = execute(plan, echo=None, diagnose=diagnose, timeout_s=timeout_s, grace_s=5.0)
        events = read_events(tmp_path / "out" / "guard") if (tmp_path / "out" / "guard").is_dir() else []
        return Launch(result, events, started)

    return run
