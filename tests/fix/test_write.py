"""`distdx fix --write` never loses a file: killed mid-write the original is whole; a file changed since it
was read is refused; --out and the backup go through the same atomic write."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from distdx.errors import DistdxError
from distdx.fix import fix, write_fixed
from distdx.lint import LintOptions

BROKEN = '{\n  "train_batch_size": 32,\n  "train_micro_batch_size_per_gpu": 4,\n  "gradient_accumulation_steps": 1\n}\n'
SRC = str(Path(__file__).resolve().parents[2] / "src")

# runs `distdx fix --write` with os.replace held just before the fixed file replaces the original
_HOOKED = r"""
import os, sys, time
target, flag = sys.argv[1], sys.argv[2]
real_replace = os.replace
def held(src, dst):
    if os.path.abspath(dst) == os.path.abspath(target):
        open(flag, "w").close()
        time.sleep(60)
    return real_replace(src, dst)
os.replace = held
from distdx.cli import main
sys.exit(main(["fix", target, "--write", "--world-size", "4"]))
"""


def test_killed_mid_write_leaves_the_original_whole(tmp_path: Path) -> None:
    config = tmp_path / "ds.json"
    config.write_text(BROKEN)
    flag = tmp_path / "at-the-rename"
    proc = subprocess.Popen([sys.executable, "-c", _HOOKED, str(config), str(flag)],
                            env={**os.environ, "PYTHONPATH": SRC}, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not flag.exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the write never reached the rename"
            time.sleep(0.05)
        temps = [p for p in tmp_path.iterdir() if p.name.startswith(".ds.json.")]
        assert temps and '"train_batch_size": 16' in temps[0].read_text()  # the fix was really on its way
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    assert config.read_text() == BROKEN
    assert (tmp_path / "ds.json.bak").read_text() == BROKEN


def test_write_keeps_a_backup_and_the_mode(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/bash\ndeepspeed --num_gpus 2 --include w0:0,1 train.py\n")
    script.chmod(0o755)
    (result,) = fix([str(script)]).files
    path, backup = write_fixed(result)
    assert script.read_text() == "#!/bin/bash\ndeepspeed --include w0:0,1 train.py\n"
    assert Path(backup).read_text() == result.original
    assert script.stat().st_mode & 0o777 == 0o755
    (again,) = fix([str(script)]).files
    assert not again.changed


def test_a_file_changed_since_read_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "ds.json"
    config.write_text(BROKEN)
    (result,) = fix([str(config)], LintOptions(world_size=4)).files
    config.write_text(BROKEN.replace("32", "64"))
    with pytest.raises(DistdxError) as e:
        write_fixed(result)
    assert e.value.code == "DX-FIX-003"
    assert config.read_text() == BROKEN.replace("32", "64")
    assert not (tmp_path / "ds.json.bak").exists()


def test_out_writes_a_copy_and_never_replaces_without_force(tmp_path: Path) -> None:
    config = tmp_path / "ds.json"
    config.write_text(BROKEN)
    (result,) = fix([str(config)], LintOptions(world_size=4)).files
    out = tmp_path / "fixed.json"
    write_fixed(result, out=str(out))
    assert config.read_text() == BROKEN and '"train_batch_size": 16' in out.read_text()
    with pytest.raises(DistdxError):
        write_fixed(result, out=str(out))


def test_cli_diff_then_write(tmp_path: Path, capsys) -> None:
    from distdx.cli import main

    config = tmp_path / "ds.json"
    config.write_text(BROKEN)
    assert main(["fix", str(config), "-w", "4"]) == 1
    shown = capsys.readouterr().out
    assert "LINT-DS-010 [safe]" in shown and '+  "train_batch_size": 16,' in shown
    assert config.read_text() == BROKEN
    assert main(["fix", str(config), "-w", "4", "--write", "--no-backup"]) == 0
    assert '"train_batch_size": 16' in config.read_text() and not (tmp_path / "ds.json.bak").exists()
    assert main(["fix", str(config), "--select", "LINT-NOPE-1"]) == 2


def test_lint_marks_what_fix_would_repair(tmp_path: Path, capsys) -> None:
    from distdx.cli import main

    config = tmp_path / "ds.json"
    config.write_text(BROKEN)
    main(["lint", str(config), "-w", "4"])
    out = capsys.readouterr().out
    assert "LINT-DS-010 train_batch_size = 32 [fix: safe]" in out and "`distdx fix FILE` shows it" in out
    main(["lint", str(config), "-w", "4", "--format", "markdown"])
    assert "(`distdx fix`: safe)" in capsys.readouterr().out
    main(["lint", str(config), "-w", "4", "--format", "json"])
    import json

    assert json.loads(capsys.readouterr().out)["findings"][0]["fix_kind"] == "safe"
