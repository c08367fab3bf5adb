"""The cache of derived knowledge (distdx.paths.cached): built once, served while the inputs are the same, never stale, never required."""

from __future__ import annotations

import os

import pytest

from distdx import paths as cache


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.delenv("DISTDX_NO_CACHE", raising=False)
    monkeypatch.setenv("DISTDX_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


class Builder:
    def __init__(self):
        self.calls = 0

    def __call__(self):
        self.calls += 1
        return {"value": self.calls}


def test_built_once_then_read_and_rebuilt_when_an_input_changes(folder):
    build = Builder()
    assert cache.cached("thing", [b"a", b"b"], build) == {"value": 1}
    assert cache.cached("thing", [b"a", b"b"], build) == {"value": 1} and build.calls == 1
    assert cache.cached("thing", [b"a", b"c"], build) == {"value": 2}
    assert len(list(folder.glob("thing-*.pickle"))) == 1  # the stale entry is gone
    assert oct(folder.stat().st_mode & 0o777) == "0o700"


def test_a_damaged_entry_is_rebuilt(folder):
    build = Builder()
    cache.cached("thing", [b"x"], build)
    next(folder.glob("thing-*.pickle")).write_bytes(b"not a pickle")
    assert cache.cached("thing", [b"x"], build) == {"value": 2}


def test_an_unwritable_directory_or_no_cache_still_gives_the_value(tmp_path, monkeypatch):
    blocked = tmp_path / "file"
    blocked.write_text("a file where the directory would go")
    monkeypatch.setenv("DISTDX_CACHE_DIR", str(blocked / "cache"))
    assert cache.cached("thing", [b"x"], Builder()) == {"value": 1}
    assert not [p for p in tmp_path.rglob("*") if p.name.startswith(".thing-")]
    monkeypatch.setenv("DISTDX_NO_CACHE", "1")
    assert cache.cache_dir() is None and cache.cached("thing", [b"x"], Builder()) == {"value": 1}


def test_cached_rules_and_model_diagnose_exactly_as_freshly_built_ones(folder):
    """The real knowledge through the cache (cold, then warm) and without it gives the same diagnosis."""
    from distdx.diagnose.engine import diagnose
    from distdx.diagnose.textmodel import default_model
    from distdx.knowledge.rules import _parse_rule_files, cascade_file, load_rules, rule_files
    from distdx.logs import parse_text

    log = open(os.path.join(os.path.dirname(__file__), "..", "..", "examples", "logs", "deepspeed-zero3-oom.log")).read()
    parsed = parse_text(log)
    results = []
    for _ in range(2):  # the first call builds and writes, the second reads
        load_rules.cache_clear()
        default_model.cache_clear()
        results.append(diagnose(parsed, rules=load_rules(), model=default_model()).to_dict())
    assert list(folder.glob("rules-*.pickle")) and list(folder.glob("textmodel-*.pickle"))
    fresh = diagnose(parsed, rules=_parse_rule_files(rule_files(), cascade_file(), prepare=False)).to_dict()
    assert results[0] == results[1] == fresh
    load_rules.cache_clear()
    default_model.cache_clear()
