"""`distdx lint` end to end: formats, exit codes, and no traceback on bad input."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from distdx.cli import main
from distdx.lint import LintReport, lint_text


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    rc = main(["lint", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_json_format_and_exit_code(tmp_path, capsys) -> None:
    cfg = tmp_path / "ds.json"
    cfg.write_text('{"train_batch_size": 8, "zero_optimisation": {"stage": 2}, "gradient_clipping": -1}')
    rc, out, _ = run([str(cfg), "--world-size", "2", "--format", "json"], capsys)
    data = json.loads(out)
    assert rc == 1
    assert set(data) >= {"findings", "summary"}
    assert data["summary"]["errors"] == 2 and data["summary"]["world_size"] == 2
    f = data["findings"][0]
    for key in ("code", "severity", "file", "field", "value", "message", "why", "fix", "symptom", "root_cause",
                "fix_pattern", "line", "column"):
        assert key in f
    assert (f["code"], f["symptom"], f["root_cause"], f["fix_pattern"]) == ("LINT-DS-002", "4.2", "R4.1", "F3")


def test_clean_config_exits_zero(tmp_path, capsys) -> None:
    cfg = tmp_path / "ds.json"
    cfg.write_text('{"train_batch_size": 16, "train_micro_batch_size_per_gpu": 2, "bf16": {"enabled": true}}')
    rc, out, _ = run([str(cfg), "-w", "8"], capsys)
    assert rc == 0 and "0 error(s)" in out


def test_text_and_markdown(capsys) -> None:
    cmd = "NCCL_IB_HCA=mlx5 torchrun --nnodes 2 --node_rank 5 --nproc_per_node 8 --master_port 80 train.py"
    rc, out, _ = run(["--command", cmd], capsys)
    assert rc == 1 and "LINT-LAUNCH-005" in out and "why:" in out and "prevents: 2.1" in out
    rc, out, _ = run(["--command", cmd, "--format", "markdown"], capsys)
    assert out.startswith("| severity | code |") and "LINT-LAUNCH-007" in out


def test_markdown_redacts_secrets(tmp_path, capsys) -> None:
    cfg = tmp_path / "ds.json"
    cfg.write_text('{"train_micro_batch_size_per_gpu": 1, "wandb": {"enabled": true, "api_key": "abcd"},'
                   ' "comet": {"enabled": true, "api_kei": "sk-abcdefghijklmnopqrstuvwxyz0123456789"}}')
    rc, out, _ = run([str(cfg), "-w", "1", "--format", "markdown"], capsys)
    assert "LINT-DS-001" in out and "api_kei" in out
    assert "sk-abcdefghijklmnopqrstuvwxyz0123456789" not in out


def test_list_rules_and_explain(capsys) -> None:
    rc, out, _ = run(["--list-rules"], capsys)
    assert rc == 0 and "LINT-DS-002" in out and "LINT-LAUNCH-009" in out
    rc, out, _ = run(["--explain", "lint-ds-030", "--format", "json"], capsys)
    assert rc == 0 and json.loads(out)["symptom"] == "4.2"
    rc, _, err = run(["--explain", "LINT-XX-999"], capsys)
    assert rc == 2 and "DX-LINT-007" in err


@pytest.mark.parametrize("argv,code", [(["/no/such/file.json"], "DX-LINT-001"), ([], "DX-LINT-006"),
                                       (["--command", "torchrun t.py", "--world-size", "0"], "DX-LINT-005")])
def test_bad_input_is_a_clear_error(argv, code, capsys) -> None:
    rc, out, err = run(argv, capsys)
    assert rc == 2 and code in err and "Traceback" not in err


def test_bad_hostfile_is_a_clear_error(tmp_path, capsys) -> None:
    hostfile = tmp_path / "hosts"
    hostfile.write_text("worker-0 slots=eight\n")
    rc, _, err = run(["--command", "deepspeed train.py", "--hostfile", str(hostfile)], capsys)
    assert rc == 2 and "DX-HOSTFILE-001" in err and ":1:" in err


def test_report_json_round_trip() -> None:
    report = lint_text('{"train_batch_size": "auto", "gradient_clipping": -2}', "c.json")
    again = LintReport.from_dict(json.loads(json.dumps(report.to_dict())))
    assert again == report


def test_lint_does_not_import_torch_or_deepspeed() -> None:
    code = ("import sys; from distdx.cli import main; main(['lint', '--command', 'torchrun --nproc_per_node 2 t.py']);"
            "assert 'torch' not in sys.modules and 'deepspeed' not in sys.modules, 'heavy import'")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
