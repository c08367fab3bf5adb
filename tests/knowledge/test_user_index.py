"""A user's own known-issue index: built outside the package, read after the bundled one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_kb_build_writes_the_users_index_which_diagnose_then_reads(tmp_path):
    cases = tmp_path / "mine.jsonl"
    cases.write_text(json.dumps({
        "id": "acme-trainer-7", "url": "https://github.com/acme/trainer/issues/7", "framework": "deepspeed",
        "title": "Gizmo allreduce wedges on the frobnicator interconnect",
        "context": "Training wedges in the gizmo allreduce on the frobnicator interconnect after 300 steps.",
        "log": "GizmoError: frobnicator link lost during allreduce", "resolution": "Reseated the frobnicator cable.",
        "labels": {"stage": "S4", "symptom": "4.7", "root_cause": "R4.7", "fix_pattern": "F4"}}) + "\n")
    env = {**os.environ, "DISTDX_INDEX": str(tmp_path / "index.jsonl"), "DISTDX_CACHE_DIR": str(tmp_path / "cache")}
    bundled = ROOT / "src" / "distdx" / "knowledge" / "data" / "known_issues.jsonl"
    before = bundled.read_bytes()
    built = subprocess.run([sys.executable, "-m", "distdx", "kb", "build", "--from", str(cases)], env=env,
                           capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stderr
    assert (tmp_path / "index.jsonl").is_file() and bundled.read_bytes() == before  # the package is untouched
    run = subprocess.run([sys.executable, "-m", "distdx", "diagnose", "-", "--format", "json"], env=env,
                         input="Training wedges in the gizmo allreduce on the frobnicator interconnect: GizmoError\n",
                         capture_output=True, text=True, timeout=120)
    similar = [s["id"] for s in json.loads(run.stdout)["similar_issues"]]
    assert "acme-trainer-7" in similar
