"""Per code: the fix of the rule's tripping input removes the finding (and, with only safe fixes, leaves
the rest of the file's meaning alone); its near miss gets no fix. Kinds in rules.yaml match the fixers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from distdx.fix import FixOptions, fix, fix_sources
from distdx.fix.engine import fix_example
from distdx.fix.fixers import FIXERS
from distdx.lint import LintOptions, lint_rules, lint_text
from distdx.lint.engine import Source, _kind_of
from tests.lint.test_rule_cases import CASES, ds

# where lint's tripping input leaves nothing to fix (a value no one can read), the input a fix must repair
FIX_INPUTS = {
    "LINT-DS-054": ds(optimizer={"type": "AdamW", "params": {"lr": "3e-4"}}),
    "LINT-ACC-011": ("distributed_type: 'NO'\ngpu_ids: 0\n", "default_config.yaml"),  # a bare number: quoted
}
# where lint's near miss differs from its trip case by the options, not the text: a text to leave alone
FIX_NEAR_MISSES = {
    "LINT-DS-021": ds(gradient_clipping=1.0),
}

RULES = lint_rules()
FIXABLE = sorted(c for c, r in RULES.items() if r.fix_kind != "none")
CORPUS = Path(__file__).resolve().parents[1] / "lint" / "corpus"
MANIFEST = yaml.safe_load((CORPUS / "manifest.yaml").read_text())["files"]


def _fix_text(text: str, name: str, code: str, lint_kw: dict, unsafe: bool = True):
    return fix_sources([Source(name, text, _kind_of(name, text))], LintOptions(**lint_kw),
                       FixOptions(select=(code,), unsafe=unsafe)).files[0]


def test_fix_kinds_and_fixers_agree() -> None:
    assert set(FIXERS) == set(FIXABLE), "a rule with fix_kind safe/unsafe needs a fixer, and only such a rule"


@pytest.mark.parametrize("code", FIXABLE)
def test_fix_removes_the_finding(code: str) -> None:
    (text, name), _, lint_kw = CASES[code]
    text, name = FIX_INPUTS.get(code, (text, name))
    before = {f.code for f in lint_text(text, name, LintOptions(**lint_kw)).findings}
    assert code in before
    result = _fix_text(text, name, code, lint_kw)
    assert [f.code for f in result.applied] and {f.code for f in result.applied} == {code}, result
    after = lint_text(result.fixed, name, LintOptions(**lint_kw)).findings
    assert code not in {f.code for f in after}, result.fixed
    assert "LINT-SYN-001" not in {f.code for f in after}
    if RULES[code].fix_kind == "unsafe":
        assert all(f.kind == "unsafe" for f in result.applied)
        assert not _fix_text(text, name, code, lint_kw, unsafe=False).applied  # not without --unsafe-fixes


@pytest.mark.parametrize("code", FIXABLE)
def test_near_miss_gets_no_fix(code: str) -> None:
    _, (text, name), lint_kw = CASES[code]
    text, name = FIX_NEAR_MISSES.get(code, (text, name))
    assert code not in {f.code for f in lint_text(text, name, LintOptions(**lint_kw)).findings}
    result = _fix_text(text, name, code, lint_kw)
    assert not result.applied and result.fixed == text


@pytest.mark.parametrize("code", FIXABLE)
def test_docs_after_example_is_what_fix_makes(code: str) -> None:
    assert RULES[code].fixed_example, f"{code}: give rules.yaml a fixed_example (the example after distdx fix)"
    assert fix_example(code) == RULES[code].fixed_example, "regenerate fixed_example with distdx.fix.engine.fix_example"


def test_json_edit_keeps_comments_order_and_layout() -> None:
    text = ('{\n  // tuned on 8 GPUs\n  "train_batch_size": "32",   # string by mistake\n'
            '  "train_micro_batch_size_per_gpu": 4,\n  "zero_optimization": {"stage": 2, "stage3_max_live_parameters": 1e9,},\n}\n')
    result = fix_sources([Source("c.json", text, "json")], LintOptions(world_size=8),
                         FixOptions(select=("LINT-DS-005", "LINT-DS-034")))
    fixed = result.files[0].fixed
    assert fixed == text.replace('"32"', "32").replace(', "stage3_max_live_parameters": 1e9,', ",")


def test_shell_edit_touches_only_its_token() -> None:
    text = "#!/bin/bash\nPP=3  # pipeline stages\ntorchrun --nproc_per_node 8 pretrain_gpt.py \\\n" \
           "    --num-layers 24 --pipeline-model-parallel-size $PP \\\n    --micro-batch-size 2 --global-batch-size 64\n"
    result = fix_sources([Source("run.sh", text, "shell")], LintOptions(), FixOptions(unsafe=True)).files[0]
    assert result.fixed == text.replace("PP=3 ", "PP=2 "), result.diff()


def test_valid_corpus_gets_no_proposal() -> None:
    valid = [r for r in MANIFEST if "/valid/" in r]
    assert len(valid) >= 25
    for rel in valid:
        spec = MANIFEST[rel] or {}
        report = fix([str(CORPUS / rel)], LintOptions(world_size=spec.get("world_size"), hf=spec.get("hf")),
                      FixOptions(unsafe=True))
        assert not report.changed and not any(f.skipped_unsafe for f in report.files), rel


def _corpus_fix(rel: str, unsafe: bool):
    spec = MANIFEST[rel] or {}
    return fix([str(CORPUS / rel)], LintOptions(world_size=spec.get("world_size"), hf=spec.get("hf")),
               FixOptions(unsafe=unsafe)).files[0]


def test_most_corpus_errors_come_with_a_fix() -> None:
    errors = fixed = 0
    for rel in (r for r in MANIFEST if "/broken/" in r):
        spec = MANIFEST[rel] or {}
        report = fix([str(CORPUS / rel)], LintOptions(world_size=spec.get("world_size"), hf=spec.get("hf")),
                     FixOptions(unsafe=True, select=("LINT",)))
        from distdx.lint import lint

        options = LintOptions(world_size=spec.get("world_size"), hf=spec.get("hf"))
        before = [f for f in lint([str(CORPUS / rel)], options=options).findings if f.severity == "error"]
        errors += len(before)
        applied = {(f.code, f.field) for f in report.files[0].applied}
        fixed += sum((f.code, f.field) in applied for f in before)
    assert errors >= 60 and fixed / errors >= 0.8, (fixed, errors)


def test_fix_to_dict_round_trips() -> None:
    from distdx.fix import Fix

    result = _corpus_fix("deepspeed/broken/batch_mismatch.json", unsafe=False)
    for f in result.applied:
        assert Fix.from_dict(json.loads(json.dumps(f.to_dict()))) == f


def test_flags_in_bash_arrays_are_edited_where_they_are_written() -> None:
    # the layout of Megatron-LM's examples/*/train_*_distributed.sh: arguments in arrays the command expands
    text = ("#!/bin/bash\nGPUS_PER_NODE=8\nMODEL_ARGS=(\n    --num-layers 24  # depth\n    --fp16\n    --bf16\n)\n"
            "PARALLEL_ARGS=(\n\t--tensor-model-parallel-size 8 \n\t--pipeline-model-parallel-size 16 \n)\n"
            'torchrun --nproc_per_node $GPUS_PER_NODE pretrain_gpt.py ${MODEL_ARGS[@]} ${PARALLEL_ARGS[@]}\n')
    result = fix_sources([Source("train.sh", text, "shell")], LintOptions(), FixOptions(unsafe=True)).files[0]
    assert result.fixed == text.replace("    --fp16\n", "").replace("size 16 ", "size 1 "), result.diff()
    assert not result.remaining
