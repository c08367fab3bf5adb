"""The corpus (tests/lint/corpus, described by manifest.yaml): lint errors on every broken file with the
expected codes and raises no error on the valid ones, among them real examples of the DeepSpeed, Megatron-LM
and Colossal-AI repositories and docs."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from distdx.lint import LintOptions, lint

CORPUS = Path(__file__).parent / "corpus"
MANIFEST = yaml.safe_load((CORPUS / "manifest.yaml").read_text())["files"]
FAMILIES = ("deepspeed", "megatron", "colossalai", "launch", "accelerate")


def _lint(rel: str):
    spec = MANIFEST[rel] or {}
    return lint([str(CORPUS / rel)], options=LintOptions(world_size=spec.get("world_size"), hf=spec.get("hf")))


BROKEN = sorted(r for r in MANIFEST if r.split("/")[1] == "broken")
VALID = sorted(r for r in MANIFEST if r.split("/")[1] == "valid")


@pytest.mark.parametrize("rel", BROKEN)
def test_broken_config_gets_its_errors(rel: str) -> None:
    report = _lint(rel)
    errors = {f.code for f in report.findings if f.severity == "error"}
    assert errors, f"no error on {rel}"
    assert set(MANIFEST[rel]["expect"]) <= errors


@pytest.mark.parametrize("rel", VALID)
def test_valid_config_has_no_error(rel: str) -> None:
    report = _lint(rel)
    assert not report.has_errors, [f"{f.code} {f.message}" for f in report.findings if f.severity == "error"]


def test_corpus_covers_every_family_both_ways() -> None:
    for family in FAMILIES:
        assert any(r.startswith(f"{family}/broken/") for r in MANIFEST), family
        assert any(r.startswith(f"{family}/valid/") for r in MANIFEST), family
    for rel in MANIFEST:
        assert (CORPUS / rel).is_file(), rel


def test_real_examples_are_most_of_the_valid_corpus() -> None:
    real = [r for r in VALID if (MANIFEST[r] or {}).get("source", "").startswith("https://")]
    assert len(real) >= 25, real


def test_megatron_examples_were_really_checked() -> None:
    # the mixtral example needs EP 8 x PP 4 = 32 GPUs: on the script's own single node lint must say so
    report = lint([str(CORPUS / "megatron/valid/train_mixtral_8x7b_distributed.sh")])
    assert "LINT-MEG-011" in {f.code for f in report.findings}
    report = lint([str(CORPUS / "megatron/valid/train_gpt3_175b_distributed.sh")])
    assert "LINT-MEG-001" in {f.code for f in report.findings}
    assert report.world_size == 8
