"""What every catalogue of stable codes shares (knowledge/catalogue.py): one schema check, one Reference,
one error, the same status/since for signature rules, doctor checks and lint rules."""

import pytest

from distdx.errors import DistdxError
from distdx.knowledge.catalogue import Reference, entries, lifecycle, references, taxonomy_target


def test_entries_need_version_and_list():
    assert entries("version: 1\nchecks: [{code: X}]\n", "checks", code="DX-DOCTOR-001", data_file="f.yaml") == [{"code": "X"}]
    for bad, what in (("version: 2\nchecks: []\n", "version: 1"), ("checks: {}\n", "list `checks`"),
                      ("checks: [unclosed", "does not parse")):
        with pytest.raises(DistdxError, match=what) as e:
            entries(bad, "checks", code="DX-DOCTOR-001", data_file="f.yaml")
        assert e.value.code == "DX-DOCTOR-001" and e.value.exit_code == 3 and "f.yaml" in e.value.hint


def test_references_take_mappings_or_urls_and_refuse_the_rest():
    got = references([{"url": "https://a", "title": "A"}, "https://b"], code="DX-KB-001", data_file="f", entry="E")
    assert got == (Reference("https://a", "A"), Reference("https://b"))
    with pytest.raises(DistdxError, match="no url"):
        references([{"title": "no url"}], code="DX-KB-001", data_file="f", entry="E")


def test_taxonomy_targets_are_checked_against_their_dimension():
    assert taxonomy_target("4.2", "symptom", code="DX-KB-001", data_file="f", entry="E", key="symptom") == "4.2"
    with pytest.raises(DistdxError, match="not a root_cause ID"):
        taxonomy_target("4.2", "root_cause", code="DX-KB-001", data_file="f", entry="E", key="root_cause")


@pytest.mark.parametrize(("spec", "expected"), [({}, ("stable", "")), ({"status": "preview", "since": "0.2.0"},
                                                                        ("preview", "0.2.0"))])
def test_lifecycle(spec, expected):
    assert lifecycle(spec, code="DX-KB-001", data_file="f", entry="E") == expected


@pytest.mark.parametrize("spec", [{"status": "retired"}, {"since": "soon"}])
def test_lifecycle_refuses_unknown_status_and_non_release_since(spec):
    with pytest.raises(DistdxError):
        lifecycle(spec, code="DX-KB-001", data_file="f", entry="E")


def test_a_deprecated_lint_rule_keeps_its_entry_and_is_not_reported(monkeypatch, tmp_path):
    import dataclasses

    from distdx.lint import LintOptions, lint
    from distdx.lint.rules import lint_rules

    config = tmp_path / "ds.json"
    config.write_text('{"train_batch_size": 10, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 1}')
    codes = {f.code for f in lint([str(config)], options=LintOptions(world_size=2)).findings}
    assert codes
    patched = {c: dataclasses.replace(r, status="deprecated") if c in codes else r for c, r in lint_rules().items()}
    monkeypatch.setattr("distdx.lint.engine.lint_rules", lambda: patched)
    assert {f.code for f in lint([str(config)], options=LintOptions(world_size=2)).findings} == set()


def test_a_deprecated_doctor_check_is_not_run(monkeypatch):
    import dataclasses

    from distdx.doctor import engine
    from distdx.doctor.catalogue import catalogue

    first = catalogue()[0]
    patched = (dataclasses.replace(first, status="deprecated"), *catalogue()[1:])
    monkeypatch.setattr(engine, "catalogue", lambda: patched)
    assert first.code not in {s.code for s in engine.select()}


def test_fix_is_one_instruction_or_a_list_of_steps_in_every_catalogue():
    from distdx.knowledge.catalogue import fix_steps

    assert fix_steps("Set NCCL_DEBUG=INFO.") == ("Set NCCL_DEBUG=INFO.",)
    assert fix_steps(["Set NCCL_DEBUG=INFO.", " ", "Rerun."]) == ("Set NCCL_DEBUG=INFO.", "Rerun.")
