"""The closed loop on one lab scenario: DeepSpeed rejects the shipped config, `distdx fix` repairs it from
the diagnosis of the run's log, and the same program then trains (benchmarks/bench_fix.py runs them all)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

pytest.importorskip("deepspeed", reason="the scenario runs DeepSpeed code (deepspeed is in the dev venv)")

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("bench_fix", ROOT / "benchmarks" / "bench_fix.py")
bench = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("bench_fix", bench)
_spec.loader.exec_module(bench)


@pytest.mark.slow
def test_a_rejected_config_is_repaired_end_to_end(capsys) -> None:
    assert bench.closed_loop(["bad-deepspeed-config"]) == 1
    out = capsys.readouterr().out
    assert "LINT-DS-010[safe]" in out and "baseline (as shipped): 0/1" in out
