"""`distdx run` keeps the job's exit code, captures its output, forwards signals and diagnoses failures."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from distdx.cli import main
from distdx.runner import execute, plan_run


def py(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_exit_code_and_capture(tmp_path):
    plan = plan_run(py("import sys; print('hello'); print('oops', file=sys.stderr); sys.exit(3)"), out_dir=tmp_path)
    result = execute(plan, diagnose=False)
    assert result.exit_code == 3 and result.failed and result.signal is None
    assert (tmp_path / "output.log").read_text().splitlines() == ["hello", "oops"]
    timed = (tmp_path / "output.timestamped.log").read_text().splitlines()
    assert len(timed) == 2 and timed[0].endswith("Z hello") and timed[0][:4].isdigit()


def test_signal_death_maps_to_128_plus_n(tmp_path):
    plan = plan_run(py("import os, signal; os.kill(os.getpid(), signal.SIGTERM)"), out_dir=tmp_path)
    result = execute(plan, diagnose=False)
    assert result.exit_code == 128 + signal.SIGTERM and result.signal == "SIGTERM"


def test_debug_environment_reaches_the_job(tmp_path):
    plan = plan_run(py("import os; print(os.environ['PYTHONFAULTHANDLER'], os.environ['TORCH_FR_BUFFER_SIZE'])"),
                    out_dir=tmp_path, environ={}, torch_version="2.13.0")
    execute(plan, diagnose=False)
    assert (tmp_path / "output.log").read_text().strip() == "1 2000"


def test_timeout_stops_the_whole_process_group(tmp_path):
    code = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)"
    started = time.monotonic()
    result = execute(plan_run(py(code), out_dir=tmp_path), diagnose=False, timeout_s=1.0, grace_s=2.0)
    assert result.timed_out and result.exit_code == 128 + signal.SIGTERM
    assert time.monotonic() - started < 15


@pytest.mark.slow
def test_ctrl_c_is_forwarded_and_exit_code_kept(tmp_path):
    job = ("import signal, sys, time\n"
           "signal.signal(signal.SIGINT, lambda *a: (print('job got SIGINT', flush=True), sys.exit(5)))\n"
           "print('ready', flush=True)\n"
           "time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-m", "distdx", "run", "--out", str(tmp_path), "--no-diagnose", "--", sys.executable, "-c", job],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 5
    assert "job got SIGINT" in out


def test_cli_json_reports_exit_code_and_diagnosis(tmp_path, capsys):
    job = "import sys; print('RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB', file=sys.stderr); sys.exit(1)"
    code = main(["run", "--format", "json", "--out", str(tmp_path), "--quiet", "--", sys.executable, "-c", job])
    assert code == 1
    data = json.loads(capsys.readouterr().out)
    assert data["exit_code"] == 1 and data["launcher"] == "python"
    assert data["diagnosis"]["classification"]["symptom"][0]["id"].startswith("4.2")


def test_cli_text_on_success_has_no_diagnosis(tmp_path, capsys):
    assert main(["run", "--out", str(tmp_path), "--", sys.executable, "-c", "print('fine')"]) == 0
    out = capsys.readouterr().out
    assert "the job succeeded" in out and "symptom" not in out


def test_cli_bad_guard_option_is_a_usage_error(tmp_path, capsys):
    assert main(["run", "--guard", "--guard-option", "hang=3", "--out", str(tmp_path), "--", "python", "-c", "0"]) == 2
    assert "DX-RUN-004" in capsys.readouterr().err


def test_cli_missing_launcher_is_a_clear_error(tmp_path, capsys):
    assert main(["run", "--out", str(tmp_path), "--", os.path.join(str(tmp_path), "no-such-launcher")]) == 2
    assert "DX-RUN-003" in capsys.readouterr().err


def _job_writing_a_guard_event(out) -> list[str]:
    event = {"distdx": 1, "kind": "nonfinite_loss", "severity": "error", "rank": 1, "host": "vm", "step": 2,
             "time": time.time(), "message": "non-finite loss at step 2 on rank 1: nan"}
    code = (f"import json, os; os.makedirs({str(out / 'guard')!r}, exist_ok=True); "
            f"open({str(out / 'guard' / 'guard-rank1.jsonl')!r}, 'a').write(json.dumps({event!r}) + '\\n')")
    return py(code)


def test_a_job_that_succeeds_with_guard_problems_is_diagnosed(tmp_path, capsys):
    result = execute(plan_run(_job_writing_a_guard_event(tmp_path), out_dir=tmp_path, environ={}))
    assert result.exit_code == 0 and result.guard_problems == 1
    assert result.diagnosis is not None and result.diagnosis.first_failure.rank == 1
    assert result.diagnosis.classification["symptom"][0].id == "4.1"
    assert main(["run", "--out", str(tmp_path), "-q", "--", *_job_writing_a_guard_event(tmp_path)]) == 0
    assert "the job succeeded, but the guard reported 1 problem " in capsys.readouterr().out


def test_an_earlier_run_into_the_same_folder_is_not_read_as_this_one(tmp_path):
    execute(plan_run(_job_writing_a_guard_event(tmp_path), out_dir=tmp_path, environ={}))
    old_log = tmp_path / "torchrun" / "old_run" / "attempt_0" / "0" / "stderr.log"
    old_log.parent.mkdir(parents=True)
    old_log.write_text("RuntimeError: CUDA out of memory\n")
    os.utime(old_log, (time.time() - 3600, time.time() - 3600))
    result = execute(plan_run(py("print('fine')"), out_dir=tmp_path, environ={}))
    assert result.guard_problems == 0 and result.guard_files == () and result.rank_logs == ()
    assert result.diagnosis is None


def test_default_run_dir_is_under_the_state_dir_not_the_current_one(tmp_path, monkeypatch):
    monkeypatch.setenv("DISTDX_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.chdir(tmp_path)
    assert main(["run", "-q", "--no-diagnose", "--", sys.executable, "-c", "print('fine')"]) == 0
    runs = list((tmp_path / "state" / "runs").iterdir())
    assert len(runs) == 1 and runs[0].name.startswith("distdx-run-")
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("distdx-run-")]
