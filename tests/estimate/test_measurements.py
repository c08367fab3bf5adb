"""The published measurements of benchmarks/estimate_measurements.yaml: the frozen split, the backing of every
uncertain term, and the targets of issue 16 on both halves (the benchmark prints the same figures)."""

from __future__ import annotations

import hashlib
import statistics

import pytest

from distdx.estimate.terms import terms

from tests.benchmarks import load_benchmark

bench = load_benchmark("bench_estimate")

POINTS = bench.load()


def test_at_least_thirty_points_each_with_its_source_and_kind() -> None:
    assert len(POINTS) >= 30
    assert len({p.id for p in POINTS}) == len(POINTS)
    for p in POINTS:
        assert p.source.startswith("https://") and p.row
        assert p.kind in ("nvidia-smi", "reserved", "allocated")


def test_the_split_is_the_hash_rule_decided_before_any_error_was_seen() -> None:
    for p in POINTS:
        expected = "tune" if int(hashlib.sha256(p.id.encode()).hexdigest(), 16) % 2 == 0 else "report"
        assert p.split == expected, p.id
    assert {p.split for p in POINTS} == {"tune", "report"}


def test_backed_by_lists_are_what_the_tune_points_use() -> None:
    back = bench.backing(POINTS)
    for name, term in terms().items():
        assert list(term.backed_by) == back.get(name, []), f"{name}: run bench_estimate.py --write-backing"


@pytest.mark.parametrize("split", ["tune", "report"])
def test_issue_16_targets_hold_on_both_halves(split: str) -> None:
    ratios = []
    for p in POINTS:
        if p.split != split:
            continue
        figure, low, high, _ = bench.distdx_figure(p)
        assert low <= figure <= high
        ratios.append(figure / p.measured)
    assert statistics.median(abs(r - 1) for r in ratios) <= 0.10
    assert min(ratios) >= 0.85, [round(r, 2) for r in ratios]
