"""A deterministic sample of benchmarks/hostile.py's cases (the whole set is the benchmark): every
command, under a 4 GiB address-space limit and 60 s a case; none may end in an internal error, a
hang, a memory blow-up, a changed user file, a leaked secret or an ssh option from a hostfile."""

from __future__ import annotations

import pytest

from tests.benchmarks import load_benchmark

hostile = load_benchmark("hostile")

COMMANDS = {"diagnose", "eval", "taxonomy", "rules", "doctor", "lint", "estimate", "run", "lab", "study", "kb", "fix"}


def test_the_generator_is_deterministic_covers_every_command_and_has_700_cases():
    first, again = hostile.generate(0), hostile.generate(0)
    assert len(first) >= 700
    assert [(c.name, c.argv, c.files) for c in first] == [(c.name, c.argv, c.files) for c in again]
    assert {c.command for c in first} == COMMANDS
    assert [c.files for c in hostile.generate(1)] != [c.files for c in first]  # the kept-back seed differs


def test_the_judge_sees_a_changed_file_and_a_leaked_secret(tmp_path):
    case = hostile.Case("self-check", "lint", ["lint", "--format", "json", "x.json"], {"x.json": b"{}"},
                        secrets=("{}",))
    result = hostile.run_case(case, tmp_path)
    assert not any(p.startswith("files changed") for p in result.problems)
    leak = hostile.Case("leak", "taxonomy", ["taxonomy", "S4"], secrets=("S4",))
    assert any(p.startswith("secrets leaked") for p in hostile.run_case(leak, tmp_path).problems)


SAMPLE = hostile.generate(0)[::12]


@pytest.mark.parametrize("case", SAMPLE, ids=[c.name for c in SAMPLE])
def test_hostile_input(case, tmp_path):
    result = hostile.run_case(case, tmp_path)
    assert not result.problems, f"{case.name} (exit {result.exit}): {result.problems}"
