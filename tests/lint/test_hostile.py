"""Inputs built to hurt a parser: clean errors (exit 2), in bounded time, never an internal error."""

from __future__ import annotations

import subprocess
import sys

import pytest

LOL = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(9))


@pytest.mark.parametrize("name, text, code", [
    ("deep.json", "[" * 100_000 + "]" * 100_000, "DX-LINT-008"),
    ("deep.yaml", "[" * 100_000 + "]" * 100_000, "DX-LINT-008"),
    ("block.yaml", "a:" + "".join("\n" + "  " * i + "- " for i in range(1, 300)) + "x\n", "DX-LINT-008"),
    ("laughs.yaml", LOL, "DX-LINT-009"),
])
def test_parser_bombs_are_clean_errors(tmp_path, name, text, code):
    path = tmp_path / name
    path.write_text(text)
    run = subprocess.run([sys.executable, "-m", "distdx", "lint", str(path)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 2 and code in run.stderr and "Traceback" not in run.stderr, run.stderr[-500:]


def test_ordinary_nesting_and_a_few_aliases_still_lint(tmp_path):
    path = tmp_path / "ok.yaml"
    path.write_text("defaults: &d {train_micro_batch_size_per_gpu: 2, gradient_accumulation_steps: 1}\nconfig:\n  <<: *d\n")
    run = subprocess.run([sys.executable, "-m", "distdx", "lint", str(path)], capture_output=True, text=True, timeout=60)
    assert run.returncode in (0, 1) and "DX-LINT" not in run.stderr
