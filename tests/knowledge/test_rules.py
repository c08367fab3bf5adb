"""Every signature rule fires on its fixtures and stays quiet on its near misses; the rule set
covers the whole taxonomy."""

import collections

import pytest

from distdx.knowledge.rules import load_rules
from distdx.knowledge.taxonomy import taxonomy

RULES = load_rules()


def test_rules_load_with_unique_codes():
    codes = [r.code for r in RULES]
    assert len(codes) == len(set(codes))


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_rule_has_fixtures_both_ways(rule):
    assert rule.fixtures_match, f"{rule.code} has no fixture that must match"
    assert rule.fixtures_no_match, f"{rule.code} has no near miss that must not match"


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_rule_fires_on_its_fixtures(rule):
    for fixture in rule.fixtures_match:
        assert rule.matches_text(fixture), f"{rule.code} does not fire on:\n{fixture}"


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_rule_quiet_on_near_misses(rule):
    for fixture in rule.fixtures_no_match:
        assert not rule.matches_text(fixture), f"{rule.code} fires on its near miss:\n{fixture}"


@pytest.mark.parametrize("dimension", ["symptom", "root_cause"])
def test_every_node_reachable_by_two_rules(dimension):
    reach = collections.Counter()
    for rule in RULES:
        targets = rule.symptoms if dimension == "symptom" else rule.root_causes
        reach.update(targets.keys())
    missing = {i: reach[i] for i in taxonomy().ids(dimension) if reach[i] < 2}
    assert not missing, f"{dimension}s reached by fewer than two rules: {missing}"


_UNBOUNDED_START = ("\\S+", "\\w+", "\\d+", ".*", ".+", "[^")


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_patterns_do_not_start_with_an_unbounded_run(rule):
    # re.search retries a leading `\S+` at every offset: quadratic on the 16 KB lines logs keep.
    # Anchor on the fixed text instead (`\b\w{1,64}Error`, or drop the leading run).
    for pattern in rule.patterns:
        text = pattern.pattern.removeprefix("(?i)")
        assert not text.startswith(_UNBOUNDED_START), f"{rule.code}: {pattern.pattern!r}"


def test_the_literal_prefilter_never_hides_a_match():
    """A pattern is skipped when none of its required literals is in the line; on every line any
    rule's fixtures hold, each pattern that matches must also pass its prefilter."""
    from distdx.knowledge.rules import _parse_rule_files, cascade_file, rule_files

    rules = _parse_rule_files(rule_files(), cascade_file())  # literals worked out, as the cache stores them
    lines = sorted({line for r in rules for f in (*r.fixtures_match, *r.fixtures_no_match) for line in f.splitlines()})
    patterns = [p for r in rules for p in (*r.patterns, *r.requires, *r.excludes)]
    assert sum(p.literals is not None for p in patterns) > 0.9 * len(patterns)
    for p in patterns:
        if p.literals is None:
            continue
        for line in lines:
            if p.compiled.search(line):
                assert p.search(line), (p.pattern, p.literals, line)


def test_cascade_knowledge_is_in_one_file():
    from distdx.errors import DistdxError
    from distdx.knowledge.rules import cascade_rules, parse_rule_file

    listed = cascade_rules()
    assert listed and listed <= {r.code for r in load_rules()}
    assert {r.code for r in load_rules() if r.cascade} == listed
    with pytest.raises(DistdxError, match="cascade.yaml"):
        parse_rule_file("x.yaml", "version: 1\nrules:\n  - {code: DX-X-001, title: t, patterns: [a], cascade: true, "
                                  "symptoms: {'4.7': 1}, root_causes: {R4.7: 1}, fix_patterns: {F3: 1}, why: w, fix: [f]}\n")
