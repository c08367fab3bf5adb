"""Side by side with real DeepSpeed (CPU): every config DeepSpeed's own validation rejects, lint rejects too;
lint also reports what DeepSpeed accepts silently, and passes every valid config DeepSpeed accepts."""

from __future__ import annotations

import pytest

from tests.benchmarks import load_benchmark

pytest.importorskip("deepspeed", reason="the side-by-side needs deepspeed installed (it is in the dev venv)")

bench = load_benchmark("lint_vs_deepspeed")

SILENT_CASES_OF_THE_ISSUE = ("zero_optimisation_typo.json", "offload_param_zero2.json", "nvme_without_path.json",
                             "negative_gradient_clipping.json", "auto_in_zero.json")


@pytest.fixture(scope="module")
def side_by_side():
    entries = [e for e in bench.manifest() if e.family == "deepspeed" and e.hf is not True]
    verdicts = bench.deepspeed_verdicts([(e.path, e.world_size or 1) for e in entries], timeout=240)
    return entries, verdicts


@pytest.mark.slow
def test_every_deepspeed_rejection_is_a_lint_error(side_by_side) -> None:
    entries, verdicts = side_by_side
    rejected = [e for e in entries if not verdicts[str(e.path)][0]]
    assert len(rejected) >= 15
    for e in rejected:
        assert bench.lint_verdict(e).has_errors, (e.path.name, verdicts[str(e.path)][1])


@pytest.mark.slow
def test_valid_configs_pass_both(side_by_side) -> None:
    entries, verdicts = side_by_side
    for e in entries:
        if not e.broken:
            assert verdicts[str(e.path)][0], (e.path.name, verdicts[str(e.path)][1])
            assert not bench.lint_verdict(e).has_errors, e.path.name


@pytest.mark.slow
def test_lint_catches_what_deepspeed_accepts_silently(side_by_side) -> None:
    entries, verdicts = side_by_side
    by_name = {e.path.name: e for e in entries}
    for name in SILENT_CASES_OF_THE_ISSUE:
        e = by_name[name]
        assert verdicts[str(e.path)][0], f"deepspeed now rejects {name}; update the corpus note"
        assert bench.lint_verdict(e).has_errors, name
    # "auto" batch sizes: DeepSpeed answers with a bare TypeError, lint with LINT-DS-021
    accepted, message = verdicts[str(by_name["auto_batch_size.json"].path)]
    assert not accepted and message.startswith("TypeError")


@pytest.mark.slow
def test_table_renders(side_by_side) -> None:
    text, stats = bench.table()
    assert stats["valid_lint_error"] == 0
    assert stats["ds_rejected"] == stats["ds_rejected_lint_error"]
    assert "zero_optimisation_typo.json" in text
