import json

from distdx.cli import main


def test_tree_lists_every_stage_and_fix_pattern(capsys):
    assert main(["taxonomy"]) == 0
    out = capsys.readouterr().out
    for node in ("S1", "S5", "5.11", "R5.6", "F6"):
        assert node in out


def test_one_node_with_share_and_meaning(capsys):
    assert main(["taxonomy", "4.7"]) == 0
    out = capsys.readouterr().out
    assert "Communication error" in out and "5.2%" in out and "NCCL errors" in out


def test_json_node(capsys):
    assert main(["taxonomy", "R2.4", "--format", "json"]) == 0
    node = json.loads(capsys.readouterr().out)
    assert node["id"] == "R2.4" and node["stage"] == "S2" and node["dimension"] == "root_cause"


def test_unknown_id_is_a_clear_error_not_a_traceback(capsys):
    assert main(["taxonomy", "S9"]) == 2
    err = capsys.readouterr().err
    assert "unknown taxonomy ID 'S9'" in err and "fix:" in err and "Traceback" not in err
