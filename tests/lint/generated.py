"""The check shared by the schema files lint ships: a shipped file is what its generator prints today."""

from __future__ import annotations

import subprocess
import sys
from importlib import resources
from pathlib import Path


def assert_shipped_is_generated(generator: str, shipped: str) -> None:
    """Run ``tests/lint/<generator>`` and compare its output with ``src/distdx/lint/<shipped>``."""
    gen = Path(__file__).with_name(generator)
    proc = subprocess.run([sys.executable, str(gen)], capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-2000:]
    text = resources.files("distdx.lint").joinpath(shipped).read_text("utf-8")
    assert proc.stdout == text, f"run: python tests/lint/{generator} > src/distdx/lint/{shipped}"
