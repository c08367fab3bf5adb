"""Offline dumps into the study database: formats, the funnel over them, re-import, bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from distdx.errors import DistdxError
from distdx.study.dump import import_dump, read_dump
from distdx.study.select import load_issues, select
from distdx.study.store import open_store

SRC = str(Path(__file__).resolve().parents[2] / "src")

ISSUES = [
    {"url": "https://github.com/acme/trainer/issues/1", "title": "NCCL timeout at step 10",
     "body": "Training hangs then every rank reports a watchdog timeout on the all-reduce after ten steps. " * 2,
     "state": "closed", "labels": [{"name": "bug"}], "created_at": "2026-01-02T00:00:00Z",
     "closed_at": "2026-01-09T00:00:00Z", "user": {"login": "alice"},
     "comments": [{"id": 501, "body": "Set NCCL_P2P_DISABLE=1 and it works.", "user": {"login": "bob"},
                   "author_association": "MEMBER"}]},
    {"html_url": "https://github.com/acme/trainer/issues/2", "title": "fixed by a PR", "body": "x" * 100,
     "labels": ["bug"], "closed_at": "2026-02-01T00:00:00Z", "comments": ["thanks", "fixed in #3"],
     "linked_prs": ["acme/trainer#3"]},
    {"url": "https://github.com/acme/trainer/issues/4", "title": "question", "body": "how do I", "state": "open",
     "comments": 0},
]


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


@pytest.mark.parametrize("fmt", ["json", "jsonl", "wrapped"])
def test_every_dump_format_gives_the_same_issues(tmp_path, fmt):
    if fmt == "jsonl":
        path = write(tmp_path, "d.jsonl", "\n".join(json.dumps(i) for i in ISSUES) + "\n")
    else:
        data = ISSUES if fmt == "json" else {"issues": ISSUES}
        path = write(tmp_path, "d.json", json.dumps(data))
    assert [i.get("title") for i in read_dump(path)] == ["NCCL timeout at step 10", "fixed by a PR", "question"]


def test_the_funnel_runs_over_a_dump_and_a_reimport_changes_nothing(tmp_path):
    path = write(tmp_path, "d.json", json.dumps(ISSUES))
    db = str(tmp_path / "s.db")
    with open_store(db) as store:
        first = import_dump(store, path)
        again = import_dump(store, path)
        issues = load_issues(store)
        sel = select(issues)
    assert (first.issues, first.comments, first.linked_prs) == (3, 3, 1) == (again.issues, again.comments, again.linked_prs)
    assert len(issues) == 3
    by_number = {i.number: i for i in issues}
    assert by_number[1].comments == 1 and by_number[1].labels == ("bug",) and by_number[2].state == "closed"
    assert by_number[2].linked_prs == ("acme/trainer#3",)
    assert [(s.name, s.remaining) for s in sel.steps] == [("closed", 2), ("bug", 2), ("no-linked-pr", 1),
                                                           ("commented", 1), ("described", 1)]
    assert [i.number for i in sel.selected] == [1]
    with open_store(db) as store, store.connect() as conn:
        import sqlalchemy as sa
        assert conn.execute(sa.select(sa.func.count()).select_from(store.t["comments"])).scalar() == 3


@pytest.mark.parametrize("text, name, expect", [
    ('[{"title": "no url"}]', "d.json", "is not an issue URL"),
    ('[{"url": "https://github.com/a/b/issues/1", "comments": "many"}]', "d.json", "neither a list"),
    ('[{"url": "https://github.com/a/b/issues/1", "linked_prs": ["#3"]}]', "d.json", "neither a URL"),
    ('{"url": 1}', "d.json", "a list of issues"),
    ('[1]', "d.json", "not a JSON object"),
    ('{"url": "https://github.com/a/b/issues/1"}\n{oops\n', "d.jsonl", "d.jsonl:2: not JSON"),
])
def test_bad_dumps_are_clear_errors(tmp_path, text, name, expect):
    path = write(tmp_path, name, text)
    with open_store(str(tmp_path / "s.db")) as store:
        with pytest.raises(DistdxError) as e:
            import_dump(store, path)
    assert expect in str(e.value) and e.value.code.startswith("DX-STUDY-12")


def test_study_import_cli(tmp_path):
    path = write(tmp_path, "d.jsonl", "\n".join(json.dumps(i) for i in ISSUES) + "\n")
    db = str(tmp_path / "s.db")
    env = {"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"}
    run = subprocess.run([sys.executable, "-m", "distdx", "study", "import", str(path), "--db", db, "--format", "json"],
                         capture_output=True, text=True, timeout=120, env=env)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)[0]["issues"] == 3
    missing = subprocess.run([sys.executable, "-m", "distdx", "study", "import", str(tmp_path / "nope.json"), "--db", db],
                             capture_output=True, text=True, timeout=120, env=env)
    assert missing.returncode == 2 and "no dump at" in missing.stderr and "Traceback" not in missing.stderr


def test_case_records_go_through_import_annotation_adjudication_and_export_unchanged(tmp_path):
    """The corpus path: case records (no labels) -> two blind annotations -> third reading -> final cases."""
    from distdx.study.annotate import adjudicate_session, export_records, import_labels
    from distdx.study.kb import build_kb
    from distdx.study.labelio import LabelRecord
    from distdx.study.records import LabelSet

    cases = [{"id": f"acme-trainer-{n}", "url": f"https://github.com/acme/trainer/issues/{n}", "framework": "deepspeed",
              "title": f"t{n}", "context": f"context {n}", "log": f"RuntimeError: boom {n}", "resolution": f"r{n}",
              "batch": "b1", "split": split} for n, split in ((1, "train"), (2, "test"))]
    path = write(tmp_path, "cases.jsonl", "\n".join(json.dumps(c) for c in cases) + "\n")
    a = LabelSet("S4", "4.7", "R4.7", "F1", True)
    b = LabelSet("S4", "4.7", "R4.7", "F3", True)
    db = str(tmp_path / "s.db")
    with open_store(db) as store:
        import_dump(store, path)
        import_labels(store, [LabelRecord(c["id"], c["url"], a, "A") for c in cases], round_no=1)
        import_labels(store, [LabelRecord(cases[0]["id"], cases[0]["url"], a, "B"),
                              LabelRecord(cases[1]["id"], cases[1]["url"], b, "B")], round_no=1)
        decision = LabelRecord("x", cases[1]["url"], b, "C", "a framework setting")
        result = adjudicate_session(store, lambda p: "", lambda t: None, decisions=[decision])
        final = export_records(store, final=True)
    assert (result.agreed, result.adjudicated, result.remaining) == (1, 1, 0)
    assert [r.id for r in final] == ["acme-trainer-1", "acme-trainer-2"]
    assert final[0].case["context"] == "context 1" and final[0].case["log"] == "RuntimeError: boom 1"
    assert final[0].case["label_source"] == "agreed" and final[1].case["label_source"] == "adjudicated"
    assert final[1].labels == b and final[1].note == "a framework setting"
    assert final[1].case["annotations"] == {"A": a.to_dict(), "B": b.to_dict()}
    out = tmp_path / "final.jsonl"
    from distdx.study.labelio import write_labels
    write_labels(final, out)
    index = tmp_path / "index.jsonl"
    assert build_kb([str(out)], index).issues == 2
    kept = build_kb([str(out)], index, skip_splits=("test",), force=True)
    assert kept.issues == 1 and "acme-trainer-2" not in index.read_text()
