"""accelerate_schema.yaml is what tests/lint/gen_accelerate_schema.py derives from the installed accelerate, and
the accelerate checks read it as accelerate does."""

from __future__ import annotations

from pathlib import Path

import pytest

from distdx.lint import accelerate

from tests.lint.generated import assert_shipped_is_generated


@pytest.mark.slow
def test_shipped_schema_matches_installed_accelerate() -> None:
    pytest.importorskip("accelerate", reason="the schema is derived from an installed accelerate")
    pytest.importorskip("deepspeed", reason="the offload devices are DeepSpeed's OffloadDeviceEnum")
    assert_shipped_is_generated("gen_accelerate_schema.py", "accelerate_schema.yaml")


def test_schema_knows_what_accelerate_config_writes() -> None:
    s = accelerate.schema()
    assert {"distributed_type", "num_processes", "fsdp_config", "deepspeed_config"} <= set(s["top_level"])
    assert "fsdp_offload_params" in s["sections"]["fsdp_config"]["keys"]
    assert "MULTI_GPU" in s["choices"]["distributed_type"]["values"]
    assert "zero_stage" in s["deepspeed_config_file_replaces"] and "mixed_precision" in s["deepspeed_config_file_replaces"]


@pytest.mark.parametrize(("spec", "value", "ok"), [
    ({"values": ["FULL_SHARD", "SHARD_GRAD_OP"], "case": "upper", "numbered": True}, "full_shard", True),
    ({"values": ["FULL_SHARD", "SHARD_GRAD_OP"], "case": "upper", "numbered": True}, 2, True),
    ({"values": ["FULL_SHARD", "SHARD_GRAD_OP"], "case": "upper", "numbered": True}, "3", False),
    ({"values": ["MULTI_GPU", "NO"]}, "multi_gpu", False),  # DistributedType(value): exact
    ({"values": [0, 1, 2, 3]}, "2", True),  # written to the environment, read back with int()
    ({"values": ["no", "fp16"], "case": "lower"}, False, False),  # YAML's unquoted no
])
def test_accepted_follows_accelerate_conversions(spec: dict, value: object, ok: bool) -> None:
    assert accelerate.accepted(spec, value) is ok


def test_nearest_choice_only_when_unambiguous() -> None:
    spec = {"values": ["BACKWARD_PRE", "BACKWARD_POST", "NO_PREFETCH"], "case": "upper"}
    assert accelerate.nearest_choice(spec, "backward_pre") == "BACKWARD_PRE"
    assert accelerate.nearest_choice(spec, "BACKWARD_PR") is None  # PRE or POST: a person says
    assert accelerate.nearest_choice({"values": ["NO", "MULTI_GPU"]}, False) == "NO"


def test_the_deepspeed_file_handed_over_is_linted_once_and_never_ends_the_run(tmp_path: Path) -> None:
    from distdx.lint import lint

    config = "distributed_type: DEEPSPEED\nnum_processes: 8\ndeepspeed_config:\n  deepspeed_config_file: {}\n"
    (tmp_path / "ds.json").write_text('{"zero_optimization": {"stage": 4}}')
    (tmp_path / "a.yaml").write_text(config.format("ds.json"))
    (tmp_path / "b.yaml").write_text(config.format("ds.json"))
    report = lint([str(tmp_path / "a.yaml"), str(tmp_path / "b.yaml")])
    codes = [f.code for f in report.findings if f.file.endswith("ds.json")]
    assert "LINT-DS-007" in codes and len(codes) == len(set(codes)), codes
    (tmp_path / "bin.json").write_bytes(b"\x00\x01")
    (tmp_path / "c.yaml").write_text(config.format("bin.json"))
    report = lint([str(tmp_path / "c.yaml")])
    assert not report.findings and any("cannot be read" in n for n in report.notes)
