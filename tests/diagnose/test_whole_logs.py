"""Whole-log fixtures: trimmed real or lab-produced logs with what must come out marked inside them.

Each ``logs/*.log`` is a log as a user would hand it over, lines that could mislead included, with
directive lines that start with ``##distdx`` (they are removed before the log is diagnosed):

- ``##distdx first-failure``: the next line must be the first failure;
- ``##distdx rank N`` / ``host H``: the first failure's rank and host;
- ``##distdx rule CODE``: the rule that must rank first; ``##distdx not-rule CODE``: one that must not fire;
- ``##distdx stage S4`` / ``symptom 4.2`` / ``root-cause R4.5`` / ``fix-pattern F5``: the top label;
- ``##distdx verdict no_failure``: the verdict;
- ``##distdx says TEXT``: the text output must contain TEXT (a fix step, a command).

``DISTDX_BLESS=1 pytest tests/diagnose/test_whole_logs.py`` re-accepts what distdx says now: it
rewrites the derived directives (first-failure, rank, host, rule, stage, symptom, verdict) of
every fixture and keeps the others. Read the diff before committing it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from distdx.diagnose import diagnose_text
from distdx.report.diagnosis import render_text

LOGS = Path(__file__).resolve().parent / "logs"
FIXTURES = sorted(LOGS.glob("*.log"))
MARK = "##distdx"
DERIVED = ("first-failure", "rank", "host", "rule", "stage", "symptom", "verdict")
DIMENSION = {"stage": "stage", "symptom": "symptom", "root-cause": "root_cause", "fix-pattern": "fix_pattern"}


def parse_fixture(path: Path) -> tuple[str, list[tuple[str, str]], int | None]:
    """The log without directives, the directives as (name, value), and the first-failure line number."""
    lines, directives, first = [], [], None
    pending_first = False
    for raw in path.read_text(encoding="utf-8").splitlines():
        if raw.startswith(MARK):
            name, _, value = raw[len(MARK):].strip().partition(" ")
            if name == "first-failure":
                pending_first = True
            else:
                directives.append((name, value.strip()))
            continue
        lines.append(raw)
        if pending_first:
            first, pending_first = len(lines), False
    return "\n".join(lines) + "\n", directives, first


def _diagnose(path: Path):
    text, directives, first = parse_fixture(path)
    return diagnose_text(text, source=path.name), directives, first


def bless(path: Path) -> None:
    d, directives, _ = _diagnose(path)
    kept = [(n, v) for n, v in directives if n not in DERIVED]
    header = [("verdict", d.verdict)]
    if d.verdict != "no_failure":
        header += [("stage", d.top("stage")), ("symptom", d.top("symptom"))]
        if d.evidence:
            header.append(("rule", d.evidence[0].rule))
    ff = d.first_failure
    if ff is not None and ff.rank is not None:
        header.append(("rank", str(ff.rank)))
    if ff is not None and ff.host:
        header.append(("host", ff.host))
    body = [l for l in path.read_text(encoding="utf-8").splitlines() if not l.startswith(MARK)]
    if ff is not None:
        body.insert(ff.line.lineno - 1, f"{MARK} first-failure")
    out = [f"{MARK} {n} {v}".rstrip() for n, v in header + kept] + body
    path.write_text("\n".join(out) + "\n", encoding="utf-8")


def test_there_are_enough_fixtures_and_every_one_states_its_first_failure_or_verdict():
    assert len(FIXTURES) >= 30
    for path in FIXTURES:
        _, directives, first = parse_fixture(path)
        names = {n for n, _ in directives}
        assert first is not None or "verdict" in names, f"{path.name} marks no first failure and no verdict"
        assert names <= set(DERIVED) | set(DIMENSION) | {"not-rule", "says"}, f"{path.name}: unknown directive"


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_whole_log(path):
    if os.environ.get("DISTDX_BLESS"):
        bless(path)
    d, directives, first = _diagnose(path)
    ff = d.first_failure
    if first is not None:
        assert ff is not None, "no first failure found"
        assert ff.line.lineno == first, f"first failure at line {ff.line.lineno}: {ff.text!r}"
    text = render_text(d, verbose=True)
    for name, value in directives:
        if name == "rank":
            assert ff is not None and ff.rank == int(value)
        elif name == "host":
            assert ff is not None and ff.host == value
        elif name == "rule":
            assert d.evidence and d.evidence[0].rule == value, [e.rule for e in d.evidence]
        elif name == "not-rule":
            assert value not in {e.rule for e in d.evidence}
        elif name == "verdict":
            assert d.verdict == value
        elif name in DIMENSION:
            assert d.top(DIMENSION[name]) == value, d.classification[DIMENSION[name]][:3]
        elif name == "says":
            assert value in text
