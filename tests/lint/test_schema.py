"""deepspeed_schema.yaml is what tests/lint/gen_deepspeed_schema.py derives from the installed DeepSpeed."""

from __future__ import annotations

import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

from distdx.lint.deepspeed import schema


@pytest.mark.slow
def test_shipped_schema_matches_installed_deepspeed() -> None:
    pytest.importorskip("deepspeed", reason="the schema is derived from an installed deepspeed")
    gen = Path(__file__).with_name("gen_deepspeed_schema.py")
    proc = subprocess.run([sys.executable, str(gen)], capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-2000:]
    shipped = resources.files("distdx.lint").joinpath("deepspeed_schema.yaml").read_text("utf-8")
    assert proc.stdout == shipped, "run: python tests/lint/gen_deepspeed_schema.py > src/distdx/lint/deepspeed_schema.yaml"


def test_schema_knows_the_main_sections() -> None:
    s = schema()
    zero = s.sections["zero_optimization"]
    assert zero["strict"] is True
    assert "offload_param" in zero["keys"] and zero["keys"]["prefetch_bucket_size"]["alias"] == "stage3_prefetch_bucket_size"
    assert s.sections["zero_optimization.offload_param"]["keys"]["device"]["choices"] == ["none", "cpu", "nvme"]
    assert {"train_batch_size", "gradient_clipping", "fp16", "bf16", "optimizer", "scheduler"} <= s.known_top_level()
    assert "amp" in s.removed_top_level and "adamw" in s.optimizers and "WarmupLR" in s.schedulers
