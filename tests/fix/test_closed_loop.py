"""The closed loop on one lab scenario: DeepSpeed rejects the shipped config, `distdx fix` repairs it from
the diagnosis of the run's log, and the same program then trains (benchmarks/bench_fix.py runs them all)."""

from __future__ import annotations

import pytest

from tests.benchmarks import load_benchmark

pytest.importorskip("deepspeed", reason="the scenario runs DeepSpeed code (deepspeed is in the dev venv)")

bench = load_benchmark("bench_fix")


@pytest.mark.slow
def test_a_rejected_config_is_repaired_end_to_end(capsys) -> None:
    assert bench.closed_loop(["bad-deepspeed-config"]) == 1
    out = capsys.readouterr().out
    assert "LINT-DS-010[safe]" in out and "baseline (as shipped): 0/1" in out
