"""Span edits that `distdx fix` makes: here the environment settings written into a launch script."""

from __future__ import annotations

from distdx.fix.edits import set_env
from distdx.fix.engine import apply_edits

SCRIPT = "#!/bin/bash\n# train on one node\nset -euo pipefail\n\ntorchrun --nproc-per-node 2 train.py\n"


def _set(text: str, name: str, value: str, why: str = "") -> str:
    edit = set_env(text, name, value, why)
    assert edit is not None
    return apply_edits(text, [edit])


def test_a_new_variable_is_exported_after_the_scripts_opening_lines() -> None:
    out = _set(SCRIPT, "NCCL_P2P_DISABLE", "1", "P2P fails here")
    assert out == SCRIPT.replace("pipefail\n", "pipefail\nexport NCCL_P2P_DISABLE=1  # P2P fails here\n")


def test_an_existing_assignment_gets_the_new_value_and_nothing_else_moves() -> None:
    text = "#!/bin/sh\nexport NCCL_DEBUG=WARN  # quiet\nNCCL_DEBUG=\"WARN\"\ntorchrun train.py\n"
    out = _set(text, "NCCL_DEBUG", "INFO")
    assert out == "#!/bin/sh\nexport NCCL_DEBUG=WARN  # quiet\nNCCL_DEBUG=INFO\ntorchrun train.py\n"  # the last wins in sh


def test_nothing_when_the_value_is_already_set_or_not_one_shell_word() -> None:
    assert set_env("export NCCL_P2P_DISABLE=1\n", "NCCL_P2P_DISABLE", "1") is None
    assert set_env(SCRIPT, "MASTER_ADDR", "<node 0's address>") is None
    assert set_env(SCRIPT, "BAD-NAME", "1") is None
    assert set_env(SCRIPT, "X", "1; rm -rf /") is None


def test_a_script_without_a_final_newline_or_without_a_shebang() -> None:
    assert _set("# only a comment", "A", "1") == "# only a comment\nexport A=1"
    assert _set("torchrun train.py\n", "A", "1") == "export A=1\ntorchrun train.py\n"
