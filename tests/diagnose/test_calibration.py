"""Scores to probabilities: the fit, the bundled table, and what a diagnosis carries."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from distdx.diagnose.calibration import calibration, expected_calibration_error, fit

ROOT = Path(__file__).resolve().parents[2]


def test_fit_is_monotone_pooled_and_smoothed():
    pairs = [(0.1, False)] * 30 + [(0.2, True)] * 5 + [(0.25, False)] * 25 + [(0.8, True)] * 40
    table = fit(pairs, min_block=20)
    probs = [p for _, p, _ in table]
    assert probs == sorted(probs) and all(n >= 20 for _, _, n in table)
    assert 0 < probs[0] < 0.2 and 0.9 < probs[-1] < 1  # smoothed: never exactly 0 or 1
    assert expected_calibration_error([(p, r) for (s, r) in pairs for u, p, _ in [next(b for b in table if s <= b[0])]]) < 0.1


def test_bundled_table_rises_and_says_where_it_was_fitted():
    cal = calibration()
    assert "train" in cal.fitted_on and "test" not in cal.fitted_on
    for rows in cal.tables.values():
        assert [p for _, p in rows] == sorted(p for _, p in rows)
    assert cal.tier(cal.confident) == "confident" and cal.tier(0.5) == "likely" and cal.tier(0.2) == "weak"


def test_a_diagnosis_carries_probabilities_and_a_tier():
    run = subprocess.run([sys.executable, "-m", "distdx", "diagnose", str(ROOT / "examples/logs/deepspeed-zero3-oom.log"),
                          "--format", "json"], capture_output=True, text=True, timeout=120)
    out = json.loads(run.stdout)
    assert out["tier"] in ("confident", "likely", "weak")
    for dim in ("stage", "symptom", "root_cause", "fix_pattern"):
        probs = [h["probability"] for h in out["classification"][dim]]
        assert probs == sorted(probs, reverse=True) and sum(probs) <= 1.0001 and probs[0] > 0
    blank = subprocess.run([sys.executable, "-m", "distdx", "diagnose", "-", "--format", "json"], input="\n\n",
                           capture_output=True, text=True, timeout=120)
    assert json.loads(blank.stdout)["tier"] == "none"


def test_fit_stays_monotone_after_smoothing():
    # the isotonic blocks 90 of 100 right, then 20 of 22 (0.909): smoothed, the smaller block is pulled
    # further towards 1/2 (21/24 = 0.875 < 91/102 = 0.892), so the two must be pooled
    pairs = [(i / 1000, i <= 90) for i in range(1, 101)] + [(0.2 + i / 1000, i < 20) for i in range(22)]
    probs = [p for _, p, _ in fit(pairs, min_block=20)]
    assert probs == sorted(probs)
