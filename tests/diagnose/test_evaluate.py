import json
import random

from sklearn.metrics import cohen_kappa_score

from distdx.diagnose.evaluate import case_input, cohen_kappa, evaluate, proportion_interval


def test_kappa_equals_sklearn_on_random_labels():
    rng = random.Random(7)
    for _ in range(50):
        labels = [f"L{i}" for i in range(rng.randint(2, 6))]
        a = [rng.choice(labels) for _ in range(rng.randint(5, 60))]
        b = [x if rng.random() < 0.6 else rng.choice(labels) for x in a]
        ours = cohen_kappa(list(zip(a, b)))
        if len(set(a) | set(b)) == 1:
            continue
        assert abs(ours - cohen_kappa_score(a, b)) < 1e-9


def test_proportion_interval_is_wilsons_as_scipy_computes_it():
    from scipy.stats import binomtest

    for right, n in ((0, 10), (98, 159), (159, 159), (1, 2), (139, 159), (40, 148)):
        expected = binomtest(right, n).proportion_ci(method="wilson")
        lo, hi = proportion_interval(right, n)
        assert abs(lo - expected.low) < 1e-9 and abs(hi - expected.high) < 1e-9
    assert proportion_interval(0, 0) == (0.0, 1.0)


def test_case_input_is_context_blank_line_log():
    assert case_input({"context": " ran it ", "log": "boom"}) == "ran it\n\nboom"


def test_evaluate_reports_every_dimension_and_baseline(tmp_path):
    cases = tmp_path / "cases.jsonl"
    rows = [
        {"id": "c1", "url": "u1", "context": "pip install deepspeed fails", "log": "error: command '/usr/local/cuda/bin/nvcc' failed with exit code 1",
         "labels": {"stage": "S1", "symptom": "1.1", "root_cause": "R1.2", "fix_pattern": "F2"}},
        {"id": "c2", "url": "u2", "context": "training hangs", "log": "",
         "labels": {"stage": "S4", "symptom": "4.11", "root_cause": "unknown", "fix_pattern": "unknown"}},
    ]
    cases.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    report = evaluate(cases)
    out = report.to_dict()
    assert out["cases"] == 2 and out["leave_one_out"] is True
    assert out["dimensions"]["stage"]["n"] == 2
    assert out["dimensions"]["root_cause"]["n"] == 1  # "unknown" gold labels are not scored
    assert out["dimensions"]["stage"]["majority_top1"] == 0.5
    assert sum(sum(row.values()) for row in out["stage_confusion"].values()) == 2
