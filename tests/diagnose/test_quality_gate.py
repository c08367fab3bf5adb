"""The knowledge base and engine on the shared labelled cases, leave-one-out: the floors of issue 2.

A fall below these floors means a rule or engine change made diagnosis worse on real issues.
"""

from pathlib import Path

import pytest

from distdx.diagnose.evaluate import evaluate

CASES = Path(__file__).resolve().parents[2].parent / "shared" / "cases" / "dev.jsonl"


@pytest.mark.skipif(not CASES.exists(), reason="../shared/cases/dev.jsonl is not beside this checkout")
def test_dev_cases_leave_one_out_meet_the_floors():
    report = evaluate(CASES)
    dims = report.dimensions
    assert report.cases >= 100
    assert dims["stage"].top1 >= 0.80
    assert dims["symptom"].top3 >= 0.75
    assert dims["root_cause"].top3 >= 0.60
    assert dims["fix_pattern"].top1 >= 0.60
    for dim in dims.values():
        assert dim.top1 > dim.majority_top1
