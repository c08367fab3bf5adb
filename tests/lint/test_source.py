"""Reading inputs: positions of keys, JSON with comments, syntax errors with line and column, bad files."""

from __future__ import annotations

import pytest

from distdx.errors import DistdxError
from distdx.lint import lint, lint_text
from distdx.lint.source import MAX_BYTES, parse_json, parse_yaml, read_text


def test_positions_of_nested_keys() -> None:
    text = '{\n  "zero_optimization": {\n    "stage": 2,\n    "offload_param": {"device": "cpu"}\n  }\n}'
    parsed = parse_json(text)
    assert parsed.positions["zero_optimization"] == (2, 3)
    assert parsed.positions["zero_optimization.stage"] == (3, 5)
    assert parsed.positions["zero_optimization.offload_param.device"] == (4, 23)
    assert parsed.where("zero_optimization.offload_param.nvme_path") == (4, 5)


def test_finding_carries_line_and_column() -> None:
    report = lint_text('{\n  "train_micro_batch_size_per_gpu": 2,\n  "zero_optimisation": {"stage": 2}\n}', "c.json")
    f = next(f for f in report.findings if f.code == "LINT-DS-002")
    assert (f.line, f.column, f.field, f.value) == (3, 3, "zero_optimisation", {"stage": 2})
    assert "did you mean `zero_optimization`" in f.message


def test_comments_and_trailing_commas_keep_positions() -> None:
    text = '{\n  /* block */ "train_batch_size": 8, // x\n  "gradient_clipping": -1,\n}'
    parsed = parse_json(text)
    assert parsed.data == {"train_batch_size": 8, "gradient_clipping": -1}
    assert [h.code for h in parsed.hits] == ["LINT-SYN-002"]
    assert parsed.hits[0].line == 2 and "comments and trailing commas" in parsed.hits[0].message
    assert parsed.positions["gradient_clipping"] == (3, 3)


def test_comment_markers_inside_strings_are_text() -> None:
    parsed = parse_json('{"nvme_path": "//mnt/nvme#1", "x": "/* no */"}')
    assert parsed.hits == [] and parsed.data["nvme_path"] == "//mnt/nvme#1"


@pytest.mark.parametrize("text,line,col", [('{"a": 1,\n "b" 2}', 2, 6), ('{"a": [1, 2}', 1, 12), ("", 1, 1)])
def test_json_syntax_error_line_and_column(text: str, line: int, col: int) -> None:
    hits = parse_json(text).hits
    assert [(h.code, h.line, h.column) for h in hits] == [("LINT-SYN-001", line, col)]


def test_yaml_syntax_error_line_and_column() -> None:
    hits = parse_yaml("a: 1\nb: [1, 2\nc: 3\n").hits
    assert hits[0].code == "LINT-SYN-001" and hits[0].line == 3


def test_megatron_yaml_config_is_checked() -> None:
    text = "num_layers: 30\npipeline_model_parallel_size: 4\ntensor_model_parallel_size: 1\nbf16: true\n"
    report = lint_text(text, "gpt.yaml")
    f = next(f for f in report.findings if f.code == "LINT-MEG-002")
    assert f.field == "num_layers" and f.line == 1


def test_bad_files_give_clear_errors(tmp_path) -> None:
    binary = tmp_path / "model.bin"
    binary.write_bytes(b"\x00\x01\x02" * 10)
    latin = tmp_path / "latin.json"
    latin.write_bytes('{"name": "caf\xe9"}'.encode("latin-1"))
    huge = tmp_path / "huge.json"
    huge.write_bytes(b" " * (MAX_BYTES + 1))
    for path, code in ((binary, "DX-LINT-003"), (latin, "DX-LINT-004"), (huge, "DX-LINT-002"),
                       (tmp_path / "missing.json", "DX-LINT-001"), (tmp_path, "DX-LINT-001")):
        with pytest.raises(DistdxError) as e:
            read_text(str(path))
        assert e.value.code == code and e.value.hint


def test_nothing_to_lint() -> None:
    with pytest.raises(DistdxError) as e:
        lint([])
    assert e.value.code == "DX-LINT-006"


def test_hostile_strings_are_data() -> None:
    report = lint_text('{"train_batch_size": 8, "$(rm -rf /)": "`reboot`", "\\u0000": 1}', "c.json")
    assert {f.code for f in report.findings} >= {"LINT-DS-003"}


@pytest.mark.parametrize("text", ['{"train_batch_size": ${GBS}, "zero_optimization": {"stage": $ZERO_STAGE}}',
                                  '{"zero_optimization": {"stage": $2}, "train_batch_size": ${GBS:-8}}'])
def test_shell_placeholders_at_the_end_of_an_object_are_a_template(text):
    hits = parse_json(text).hits
    assert [h.code for h in hits] == ["LINT-SYN-005"], hits
