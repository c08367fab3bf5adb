"""deepspeed_schema.yaml is what tests/lint/gen_deepspeed_schema.py derives from the installed DeepSpeed."""

from __future__ import annotations

import pytest

from distdx.lint.deepspeed import schema

from tests.lint.generated import assert_shipped_is_generated


@pytest.mark.slow
def test_shipped_schema_matches_installed_deepspeed() -> None:
    pytest.importorskip("deepspeed", reason="the schema is derived from an installed deepspeed")
    assert_shipped_is_generated("gen_deepspeed_schema.py", "deepspeed_schema.yaml")


def test_schema_knows_the_main_sections() -> None:
    s = schema()
    zero = s.sections["zero_optimization"]
    assert zero["strict"] is True
    assert "offload_param" in zero["keys"] and zero["keys"]["prefetch_bucket_size"]["alias"] == "stage3_prefetch_bucket_size"
    assert s.sections["zero_optimization.offload_param"]["keys"]["device"]["choices"] == ["none", "cpu", "nvme"]
    assert {"train_batch_size", "gradient_clipping", "fp16", "bf16", "optimizer", "scheduler"} <= s.known_top_level()
    assert "amp" in s.removed_top_level and "adamw" in s.optimizers and "WarmupLR" in s.schedulers
