"""The error-code registry: every raise site uses a registered code of the form DX-AREA-NNN, every
registered code is raised somewhere, the docs page is current, and an error renders exactly so."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from distdx.errors import DistdxError, errors_markdown, registry

SRC = Path(__file__).resolve().parents[1] / "src" / "distdx"
FORM = re.compile(r"^DX-([A-Z]+)-\d{3}$")
LITERAL = re.compile(r"[\"\[](DX-[A-Z]+-[0-9A-Za-z]+)[\"\]]")


def _rule_codes() -> set[str]:
    codes = set()
    for path in (SRC / "knowledge" / "rules").glob("*.yaml"):
        codes |= {r["code"] for r in yaml.safe_load(path.read_text(encoding="utf-8"))["rules"]}
    return codes


def _raised() -> dict[str, set[str]]:
    rules = _rule_codes()
    found: dict[str, set[str]] = {}
    for path in SRC.rglob("*.py"):
        for m in LITERAL.finditer(path.read_text(encoding="utf-8")):
            if m.group(1) not in rules:  # signature rule codes share the DX- prefix; they live in rules/*.yaml
                found.setdefault(m.group(1), set()).add(str(path.relative_to(SRC)))
    return found


def test_every_code_raised_is_registered_and_well_formed():
    reg = registry()
    raised = _raised()
    unregistered = sorted(set(raised) - set(reg["codes"]))
    assert not unregistered, f"add these to src/distdx/errors.yaml: {unregistered}"
    bad = [c for c in raised if not FORM.match(c) or FORM.match(c).group(1) not in reg["areas"]]
    assert not bad, bad


def test_every_registered_code_is_raised_somewhere_and_none_is_a_rule_code():
    reg = registry()
    assert set(reg["codes"]) <= set(_raised()), sorted(set(reg["codes"]) - set(_raised()))
    assert not set(reg["codes"]) & _rule_codes()


def test_the_docs_page_is_current():
    page = Path(__file__).resolve().parents[1] / "docs" / "errors.md"
    assert page.read_text(encoding="utf-8") == errors_markdown(), "regenerate docs/errors.md (command in its header)"


def test_an_error_renders_exactly_so():
    e = DistdxError("DX-LOGS-004", "no such file or directory: job.log", why="it was rotated", hint="check the path")
    assert e.render() == ("error[DX-LOGS-004]: no such file or directory: job.log\n"
                          "  why: it was rotated\n"
                          "  fix: check the path")
    assert str(DistdxError("DX-LOGS-001", "no log given")) == "error[DX-LOGS-001]: no log given"


def test_a_hostile_value_in_an_error_is_quoted_not_dumped():
    e = DistdxError("DX-STUDY-120", "url '" + "9" * 5000 + "' is not an issue URL", hint="x" * 2000)
    first, fix = e.render().splitlines()
    assert first.startswith("error[DX-STUDY-120]: url '999") and first.endswith("' is not an issue URL")
    assert "characters left out" in first and len(first) < 700 and len(fix) < 700
