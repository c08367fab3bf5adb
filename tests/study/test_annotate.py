"""The terminal labelling and adjudication, driven by scripted stdin; label import/export; kb build."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from distdx.errors import DistdxError
from distdx.knowledge.known_issues import parse_index
from distdx.study.annotate import annotate_session, export_records, load_adjudications, load_annotations
from distdx.study.labelio import read_labels
from distdx.study.records import LabelSet
from distdx.study.select import load_issues, select
from distdx.study.store import open_store

SRC = str(Path(__file__).resolve().parents[2] / "src")
ENV = {"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"}


def cli(*args, stdin: str | None = None):
    return subprocess.run([sys.executable, "-m", "distdx", *args], input=stdin, capture_output=True, text=True,
                          timeout=120, env=ENV)


def queue(store, filters=("closed", "bug")):
    return list(select(load_issues(store), filters).selected)


class Script:
    def __init__(self, lines):
        self.lines = list(lines)
        self.prompts = []
        self.said = []

    def ask(self, prompt):
        self.prompts.append(prompt)
        if not self.lines:
            raise EOFError
        return self.lines.pop(0)

    def say(self, text):
        self.said.append(text)


def test_annotate_over_stdin_saves_each_issue_and_resumes(mined_db):
    db, _ = mined_db
    with open_store(db) as store:
        first, second, third = [i.number for i in queue(store)[:3]]
    script = "\n".join(["4", "2", "R4.5", "5", "y", "ZeRO-3 OOM",  # issue 1 by number keys and an ID
                        "?", "1", "1", "u", "F2", "n", "",  # issue 2: full text first, unknown root cause
                        "q"]) + "\n"
    done = cli("study", "annotate", "--db", db, "--annotator", "A", "--filters", "closed,bug", "--format", "json",
               stdin=script)
    assert done.returncode == 0, done.stderr
    with open_store(db) as store:
        total = len(queue(store))
    assert json.loads(done.stdout[done.stdout.index("{"):]) == {"annotator": "A", "labelled": 2, "skipped": 0,
                                                                "remaining": total - 2, "stopped": True}
    assert f"acme/widgets#{first}" in done.stdout and "stage>" in done.stdout
    assert "engine suggests" not in done.stdout  # blind by default
    with open_store(db) as store:
        saved = {a.number: a for a in load_annotations(store)}
    assert saved[first].labels == LabelSet("S4", "4.2", "R4.5", "F5", True) and saved[first].note == "ZeRO-3 OOM"
    assert saved[second].labels == LabelSet("S1", "1.1", "unknown", "F2", False)
    # a new session starts at the third issue
    again = cli("study", "annotate", "--db", db, "--annotator", "A", "--filters", "closed,bug",
                stdin="2\n1\n1\n3\nu\n\nq\n")
    assert again.returncode == 0, again.stderr
    assert f"acme/widgets#{third}" in again.stdout and f"acme/widgets#{first} " not in again.stdout
    with open_store(db) as store:
        assert {a.number for a in load_annotations(store, ("A",))} == {first, second, third}
        third_labels = {a.number: a.labels for a in load_annotations(store, ("A",))}[third]
    assert third_labels == LabelSet("S2", "2.1", "R2.1", "F3", None)


def test_invalid_keys_are_asked_again_and_skip_and_eof_save_nothing_partial(mined_db):
    db, _ = mined_db
    with open_store(db) as store:
        issues = queue(store)[:3]
        s = Script(["9", "S9", "3", "x", "1", "1", "3", "", "s",  # issue 1: mistakes, then skipped
                    "5", "1", "R5.1", "3", "y", "",  # issue 2: labelled
                    "2", "1"])  # issue 3: input ends mid-way
        result = annotate_session(store, issues, "B", s.ask, s.say)
        saved = load_annotations(store, ("B",))
    assert (result.labelled, result.skipped, result.stopped) == (1, 1, True)
    assert [a.number for a in saved] == [issues[1].number]
    assert saved[0].labels == LabelSet("S5", "5.1", "R5.1", "F3", True)
    assert sum("not a choice here" in t for t in s.said) == 4  # 9, S9, x, and an empty answer


def test_suggestion_only_when_asked(mined_db):
    db, _ = mined_db
    calls = []

    def suggest(text):
        calls.append(text)
        return LabelSet("S2", "2.2", "R2.3", "F4", True)

    with open_store(db) as store:
        issue = queue(store)[:1]
        s = Script(["2", "2", "3", "4", "y", ""])
        annotate_session(store, issue, "C", s.ask, s.say, suggest=suggest)
    assert len(calls) == 1 and issue[0].title in calls[0]
    assert any(t == "engine suggests: S2 / 2.2 / R2.3 / F4 / true" for t in s.said)


def label(store, number, who, labels):
    from distdx.study.annotate import save_annotation

    save_annotation(store, "acme/widgets", number, who, labels, 1)


def _three_with_the_first_agreed(store, labels):
    """The first three selected issues; the first labelled the same by A and B."""
    a, b, c = [i.number for i in queue(store)[:3]]
    label(store, a, "A", labels)
    label(store, a, "B", labels)
    return a, b, c


def test_adjudication_records_agreed_and_decided_labels(mined_db):
    db, _ = mined_db
    same = LabelSet("S4", "4.7", "R4.7", "F3", True)
    with open_store(db) as store:
        a, b, c = _three_with_the_first_agreed(store, same)
        label(store, b, "A", same)
        label(store, b, "B", LabelSet("S4", "4.11", "R4.7", "F1", True))
        label(store, c, "A", same)  # one annotator only: not ready
    done = cli("study", "adjudicate", "--db", db, "--adjudicator", "Z", "--format", "json", stdin="2\nF3\nhang, not comm\n")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout[done.stdout.index("{"):]) == {"agreed": 1, "adjudicated": 1, "remaining": 0,
                                                                "stopped": False}
    assert "symptom: 1) A: 4.7   2) B: 4.11" in done.stdout
    with open_store(db) as store:
        final = load_adjudications(store)
    assert final[("acme/widgets", a)] == (same, "agreed", "")
    assert final[("acme/widgets", b)] == (LabelSet("S4", "4.11", "R4.7", "F3", True), "adjudicated", "hang, not comm")
    assert ("acme/widgets", c) not in final


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".json"])
def test_export_import_round_trip(mined_db, tmp_path, suffix):
    db, _ = mined_db
    labels = [LabelSet("S4", "4.2", "R4.5", "F5", True), LabelSet("S1", "1.1", "unknown", "F2", None)]
    with open_store(db) as store:
        numbers = [i.number for i in queue(store)[:2]]
        for n, l in zip(numbers, labels):
            label(store, n, "A", l)
    out = tmp_path / f"A{suffix}"
    done = cli("study", "annotate", "--db", db, "--annotator", "A", "--export", str(out))
    assert done.returncode == 0, done.stderr
    records = read_labels(out)
    assert [r.labels for r in records] == labels and all(r.annotator == "A" for r in records)
    if suffix == ".json":
        config = ET.fromstring(out.with_suffix(".label_config.xml").read_text())
        assert [c.get("name") for c in config.iter("Choices")] == ["stage", "symptom", "root_cause", "fix_pattern",
                                                                    "distributed_specific"]
    if suffix == ".jsonl":
        first = json.loads(out.read_text().splitlines()[0])
        assert first["id"] == f"acme-widgets-{numbers[0]}" and "RuntimeError: boom" in first["log"]
    fresh = tmp_path / "fresh.db"
    done = cli("study", "annotate", "--db", str(fresh), "--annotator", "B", "--import", str(out))
    assert done.returncode == 0, done.stderr
    with open_store(str(fresh)) as store:
        back = load_annotations(store)
    assert [a.labels for a in back] == labels and {a.annotator for a in back} == {"B"}
    before = out.read_bytes()
    again = cli("study", "annotate", "--db", db, "--annotator", "A", "--export", str(out))
    assert again.returncode == 2 and "DX-PATH-001" in again.stderr and "--force" in again.stderr
    assert out.read_bytes() == before  # nothing the user had is lost
    again = cli("study", "annotate", "--db", db, "--annotator", "A", "--export", str(out), "--force")
    assert again.returncode == 0, again.stderr


def test_bad_label_files_are_clear_errors(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("id,stage,symptom,root_cause,fix_pattern\nx,S4,9.9,R4.1,F1\n")
    with pytest.raises(DistdxError) as err:
        read_labels(bad)
    assert "bad.csv:2" in err.value.message and "9.9" in err.value.message
    binary = tmp_path / "bin.jsonl"
    binary.write_bytes(b"\x00\x01\x02" * 10)
    with pytest.raises(DistdxError) as err:
        read_labels(binary)
    assert err.value.code == "DX-STUDY-052"
    with pytest.raises(DistdxError):
        read_labels(tmp_path / "labels.txt")
    done = cli("study", "agreement", str(bad), str(bad))
    assert done.returncode == 2 and "Traceback" not in done.stderr and "error[DX-STUDY-010]" in done.stderr


def test_kb_build_from_study_db_and_from_cases(mined_db, tmp_path):
    db, data = mined_db
    with open_store(db) as store:
        numbers = [i.number for i in queue(store)[:2]]
        for n in numbers:
            for who in ("A", "B"):
                label(store, n, who, LabelSet("S2", "2.2", "R2.3", "F4", True))
    assert cli("study", "adjudicate", "--db", db, stdin="").returncode == 0
    out = tmp_path / "kb.jsonl"
    done = cli("kb", "build", "--from", db, "--out", str(out), "--format", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["issues"] == 2
    index = parse_index(out.read_text())
    assert [i.id for i in index] == [f"acme-widgets-{n}" for n in numbers]
    assert index[0].labels == {"stage": "S2", "symptom": "2.2", "root_cause": "R2.3", "fix_pattern": "F4"}
    assert index[0].errors.startswith("RuntimeError: boom") and index[0].distributed_specific is True
    assert "Running deepspeed" not in index[0].summary  # our summary (the title), never the issue's prose

    dev = Path(__file__).resolve().parents[2] / "corpus" / "dev.jsonl"  # the shared dev cases, copied
    out2 = tmp_path / "kb2.jsonl"
    done = cli("kb", "build", "--from", str(dev), "--out", str(out2))
    assert done.returncode == 0, done.stderr
    assert len(parse_index(out2.read_text())) == 137
    kept = out2.read_bytes()
    refused = cli("kb", "build", "--from", db, "--out", str(out2))  # an existing index is not replaced silently
    assert refused.returncode == 2 and "DX-STUDY-103" in refused.stderr and "--force" in refused.stderr
    assert out2.read_bytes() == kept
    # several sources merge into one index; an issue in two of them is indexed once
    done = cli("kb", "build", "--from", db, "--from", str(dev), "--from", db, "--out", str(out2), "--force",
               "--format", "json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["issues"] == 139 and report["skipped_duplicates"] == 2 and report["sources"] == [db, str(dev), db]
    assert [i.id for i in parse_index(out2.read_text())][:2] == [f"acme-widgets-{n}" for n in numbers]


def test_kb_build_from_a_case_file_imported_into_a_study(tmp_path):
    dev = Path(__file__).resolve().parents[3] / "shared" / "cases" / "dev.jsonl"
    if not dev.is_file():
        pytest.skip(f"shared/cases/dev.jsonl not found at {dev}")
    db = str(tmp_path / "s.db")
    assert cli("study", "annotate", "--db", db, "--import", str(dev), "--final").returncode == 0
    with open_store(db) as store:
        records = export_records(store, final=True)
    cases = [json.loads(l) for l in dev.read_text().splitlines() if l.strip()]
    assert {r.id for r in records} == {c["id"] for c in cases}
    by_id = {c["id"]: c for c in cases}
    assert all(r.labels == LabelSet.from_dict(by_id[r.id]["labels"]) for r in records)
    assert all(r.case["label_source"] == by_id[r.id]["label_source"] for r in records)
    rep = cli("study", "report", "--dataset", db, "--format", "json")
    assert rep.returncode == 0, rep.stderr
    assert json.loads(rep.stdout)["n"] == 137


def test_suggest_shows_the_real_engine_suggestion(mined_db):
    try:
        from distdx.diagnose import diagnose_text  # noqa: F401
    except ImportError as e:
        pytest.skip(f"the diagnosis engine is not importable here: {e}")
    db, _ = mined_db
    done = cli("study", "annotate", "--db", db, "--annotator", "S", "--suggest", "--limit", "1",
               "--filters", "closed,bug", stdin="q\n")
    assert done.returncode == 0, done.stderr
    line = next(l for l in done.stdout.splitlines() if l.startswith("engine suggests: "))
    values = line.removeprefix("engine suggests: ").split(" / ")
    assert line.endswith("nothing") or LabelSet.from_dict(dict(zip(
        ("stage", "symptom", "root_cause", "fix_pattern", "distributed_specific"), values))).stage.startswith("S")


def test_adjudication_takes_a_third_readings_decisions_and_asks_the_rest(mined_db, tmp_path):
    db, _ = mined_db
    same = LabelSet("S4", "4.7", "R4.7", "F3", True)
    with open_store(db) as store:
        a, b, c = _three_with_the_first_agreed(store, same)
        for n in (b, c):
            label(store, n, "A", same)
            label(store, n, "B", LabelSet("S4", "4.11", "R4.7", "F1", True))
    decisions = tmp_path / "C.jsonl"
    # the third reading also names a root cause the annotators agreed on: their agreement stands
    decisions.write_text(json.dumps({"id": "x", "url": f"https://github.com/acme/widgets/issues/{b}", "annotator": "C",
                                     "note": "a hang, and the fix was a launch setting",
                                     "labels": {"stage": "S4", "symptom": "4.11", "root_cause": "R4.1",
                                                "fix_pattern": "F1", "distributed_specific": True}}) + "\n")
    done = cli("study", "adjudicate", "--db", db, "--decisions", str(decisions), "--format", "json", stdin="")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout[done.stdout.index("{\n"):]) == {"agreed": 1, "adjudicated": 1, "remaining": 1,
                                                                  "stopped": True}
    with open_store(db) as store:
        final = load_adjudications(store)
    assert final[("acme/widgets", b)] == (LabelSet("S4", "4.11", "R4.7", "F1", True), "adjudicated",
                                          "a hang, and the fix was a launch setting")
    assert ("acme/widgets", c) not in final  # not covered by the decisions, and nobody answered
