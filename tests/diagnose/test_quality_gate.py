"""The diagnosis quality gate, on labelled data kept in the repository (no ../shared needed).

Today's figures are pinned with a tolerance of two points: a change that makes diagnosis worse on
real issues by more than that fails here, and one that makes it better should raise the pins
(`python benchmarks/bench_accuracy.py` prints them).

- dev: corpus/dev.jsonl (the 137 shared cases), leave-one-out over the index;
- corpus test: the frozen test split of corpus/cases.jsonl, never indexed.
"""

from pathlib import Path

import pytest

from distdx.diagnose.evaluate import evaluate

ROOT = Path(__file__).resolve().parents[2]
TOLERANCE = 0.02
PINNED = {  # (file, split): {dimension: (top-1, top-3)}
    ("corpus/dev.jsonl", None): {"stage": (0.971, 0.993), "symptom": (0.912, 0.956),
                                 "root_cause": (0.816, 0.941), "fix_pattern": (0.672, 0.970)},
    ("corpus/cases.jsonl", "test"): {"stage": (0.883, 0.994), "symptom": (0.632, 0.834),
                                     "root_cause": (0.472, 0.767), "fix_pattern": (0.606, 0.919)},
}
RULE_COVERAGE = {("corpus/dev.jsonl", None): 0.956, ("corpus/cases.jsonl", "test"): 0.718}  # a rule fired


@pytest.mark.parametrize("source", list(PINNED), ids=["dev", "corpus-test"])
def test_diagnosis_stays_at_todays_figures(source):
    path, split = source
    report = evaluate(ROOT / path, split=split)
    for dim, (top1, top3) in PINNED[source].items():
        got = report.dimensions[dim]
        assert got.top1 >= top1 - TOLERANCE, f"{dim} top-1 {got.top1:.3f} < pinned {top1}"
        assert got.top3 >= top3 - TOLERANCE, f"{dim} top-3 {got.top3:.3f} < pinned {top3}"
        assert got.top1 > got.majority_top1
    assert report.rule_coverage >= RULE_COVERAGE[source] - TOLERANCE, f"rule coverage {report.rule_coverage:.3f}"
