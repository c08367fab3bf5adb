import json

from distdx.cli import main


def test_list_marks_rules_that_are_not_stable(capsys):
    assert main(["rules", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(l.startswith("DX-OOM-001 ") and not l.endswith(")") for l in lines)
    assert any(l.startswith("DX-DSX-001 ") and l.endswith("(preview)") for l in lines)
    assert any(l.startswith("DX-INFER-010 ") and l.endswith("(deprecated)") for l in lines)


def test_list_json_has_the_status(capsys):
    assert main(["rules", "list", "--format", "json"]) == 0
    rules = {r["code"]: r for r in json.loads(capsys.readouterr().out)["rules"]}
    assert rules["DX-DSX-001"]["status"] == "preview" and rules["DX-OOM-001"]["status"] == "stable"
