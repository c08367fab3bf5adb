"""distdx installs and diagnoses without torch; heavy libraries stay unimported on the core path."""

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "deepspeed", "httpx", "matplotlib", "sqlalchemy", "numpy")


def test_core_commands_do_not_import_heavy_libraries(tmp_path):
    log = tmp_path / "job.log"
    log.write_text("[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    code = (
        "import sys, runpy\n"
        f"sys.argv = ['distdx', 'diagnose', {str(log)!r}, '--format', 'json']\n"
        "from distdx.cli import main\n"
        "import contextlib, io\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    rc = main(sys.argv[1:])\n"
        f"print(rc, [m for m in {HEAVY!r} if m in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "0 []"


@pytest.mark.slow
def test_pip_install_without_torch_then_diagnose(tmp_path):
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    py = env_dir / "bin" / "python"
    install = subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-cache-dir", str(ROOT)],
                             capture_output=True, text=True, timeout=600)
    assert install.returncode == 0, install.stderr[-2000:]
    check = subprocess.run([str(py), "-c", "import importlib.util as u; print(u.find_spec('torch') is None)"],
                           capture_output=True, text=True, timeout=60)
    assert check.stdout.strip() == "True", "torch must not be pulled in by a plain install"
    log = tmp_path / "job.log"
    log.write_text("RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1275, unhandled system error\n")
    run = subprocess.run([str(env_dir / "bin" / "distdx"), "diagnose", str(log), "--format", "json"],
                         capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": ""})
    assert run.returncode == 0, run.stderr
    assert '"classification"' in run.stdout
