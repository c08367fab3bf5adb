"""The study's funnel on a mined database, against a count made directly from the served data."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from distdx.errors import DistdxError
from distdx.study.select import SelectOptions, description_text, load_issues, parse_filters, select
from distdx.study.store import open_store

SRC = str(Path(__file__).resolve().parents[2] / "src")


def independent_funnel(data: dict) -> list[tuple[str, int]]:
    issues = [i for i in data["issues"].values() if "pull_request" not in i]
    steps = [
        ("closed", lambda i: i["state"] == "closed"),
        ("bug", lambda i: "bug" in {l["name"] for l in i["labels"]}),
        # linked: referenced by a pull request of the same repository, or a `connected` event
        ("no-linked-pr", lambda i: not any(
            e["event"] == "connected" or (e["event"] == "cross-referenced" and "pull_request" in e["source"]["issue"]
                                          and e["source"]["issue"]["repository"]["full_name"] == data["repo"])
            for e in data["timelines"][i["number"]])),
        ("commented", lambda i: i["comments"] >= 1),
        ("described", lambda i: len(i["body"].strip()) >= 20),
    ]
    out = [("mined", len(issues))]
    for name, keep in steps:
        issues = [i for i in issues if keep(i)]
        out.append((name, len(issues)))
    return out


def test_funnel_matches_an_independent_count(mined_db):
    db, data = mined_db
    with open_store(db) as store:
        sel = select(load_issues(store), parse_filters(None), SelectOptions(min_description_chars=20))
    got = [("mined", sel.total)] + [(s.name, s.remaining) for s in sel.steps]
    assert got == independent_funnel(data)
    assert sel.steps[-1].remaining == len(sel.selected) > 0
    assert all(s.removed == prev - s.remaining for s, prev in zip(sel.steps, [sel.total] + [x.remaining for x in sel.steps]))


def test_filters_compose_in_any_order(mined_db):
    db, _ = mined_db
    with open_store(db) as store:
        issues = load_issues(store)
    a = select(issues, ("commented", "closed"))
    b = select(issues, ("closed", "commented"))
    assert {i.key for i in a.selected} == {i.key for i in b.selected}
    assert a.steps[0].remaining != b.steps[0].remaining  # each step counts what it alone removed


def test_description_ignores_issue_template():
    body = "<!-- Describe the bug -->\n### Describe the bug\n- [ ] I searched\n**To Reproduce**\n\nreal words here"
    assert description_text(body) == "real words here"


def test_unknown_filter_is_a_clear_error():
    with pytest.raises(DistdxError) as err:
        parse_filters("closed,bogus")
    assert "bogus" in err.value.message and "no-linked-pr" in err.value.why


def test_select_command_formats(mined_db):
    db, data = mined_db
    run = lambda *a: subprocess.run([sys.executable, "-m", "distdx", "study", "select", "--db", db, *a],
                                    capture_output=True, text=True, timeout=60, env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"})
    js = run("--format", "json", "--min-description-chars", "20")
    assert js.returncode == 0, js.stderr
    out = json.loads(js.stdout)
    assert [(s["name"], s["remaining"]) for s in out["funnel"]] == independent_funnel(data)[1:]
    md = run("--format", "markdown")
    assert md.returncode == 0 and md.stdout.startswith("| step | criterion | left | removed |")
    bad = run("--filters", "nope")
    assert bad.returncode == 2 and "DX-STUDY-040" in bad.stderr and "Traceback" not in bad.stderr
