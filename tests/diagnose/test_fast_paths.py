"""The shortcuts that keep diagnosis fast must not change what it says: each one is compared here
with the plain computation it replaces, on the whole-log fixtures, the dev cases and made-up lines.

- a pattern (rule, phase marker, failure cue) is skipped when a literal every match needs is
  absent (``knowledge.rules.Pattern``, ``required_literals``, ``fold_case``);
- the line-shape expression of ``diagnose.engine`` skips ahead to a digit or a space.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from distdx.diagnose.engine import _SHAPE_DIGITS, diagnose
from distdx.diagnose.evaluate import case_input
from distdx.knowledge import phases
from distdx.knowledge.rules import Pattern, _parse_rule_files, cascade_file, fold_case, required_literals, rule_files
from distdx.logs import parse_text
from distdx.report.diagnosis import render_json

ROOT = Path(__file__).resolve().parents[2]
WHOLE_LOGS = sorted((ROOT / "tests/diagnose/logs").glob("*.log")) + sorted((ROOT / "examples/logs").rglob("*.log"))
# the characters re folds to an ASCII letter although str.lower() does not give that letter
UNICODE_LINES = ("İnstall torch", "pıp install deepspeed", "SIGKİLL received", "ſegmentation fault",
                 "Kılled by the OOM killer", "ſtep 3: loſs is nan", "\u212aILLED", "TRAİNİNG stopped")


def _texts() -> list[str]:
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in WHOLE_LOGS]
    with open(ROOT / "corpus/dev.jsonl", encoding="utf-8") as f:
        texts += [case_input(json.loads(line)) for line in f if line.strip()]
    return texts + list(UNICODE_LINES)


TEXTS = _texts()


def test_line_shape_is_the_plain_expressions():
    plain = re.compile(r"\d{3,}|(?<=rank)\s*\d+|(?<=Rank )\d+", re.I)
    rng = random.Random(7)
    alphabet = list("rRaAnNkK  0129\t\n\u212a\u00a0\u0660x:[]") + ["rank", "Rank ", "RANK", "[Rank 12]"]
    lines = [line for text in TEXTS for line in text.splitlines()]
    lines += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 16))) for _ in range(20_000)]
    assert [_SHAPE_DIGITS.sub("#", s) for s in lines] == [plain.sub("#", s) for s in lines]


@pytest.mark.parametrize("source,text", [
    (r"(?i)\bsig(kill|term)\b", "SIGKİLL"),  # İ: re matches it to i, its str.lower() is two characters
    (r"(?i)\bpip install\b", "pıp install"),
    (r"(?i)segmentation fault", "ſegmentation fault"),
    (r"(?i)killed", "\u212aILLED"),
    (r"Init|(?i:inference)", "INFERENCE"),  # a scoped (?i:...) part makes the literals compare lower case
    (r"(?i)a(?-i:BCD)e", "ABCDE"),
])
def test_a_skipped_pattern_never_had_a_match(source, text):
    pattern = Pattern(source)
    pattern.prepare()
    assert pattern.literals is not None and re.search(source, text)
    assert pattern.search(text) and pattern.could_occur(text, fold_case(text))


def test_required_literals_of_every_pattern_are_in_each_match():
    """For every rule, marker and cue pattern, each match found in the texts contains a literal of
    each required group (compared as the prefilter compares)."""
    rules = _parse_rule_files(rule_files(), cascade_file())
    markers, cues, families = phases._build(phases._phases_file())
    patterns = [p for r in rules for p in (*r.patterns, *r.requires, *r.excludes)]
    patterns += [p for ps in markers.values() for p in ps] + list(cues) + [p for f in families for p in f.patterns]
    document = "\n".join(TEXTS)
    for p in patterns:
        if p.literals is None:
            continue
        for m in p.compiled.finditer(document):
            found = fold_case(m.group(0)) if p.fold else m.group(0)
            assert all(any(lit in found for lit in group) for group in p.literals), (p.pattern, p.literals, m.group(0))


def test_phase_evidence_and_failure_cues_are_the_plain_searches():
    markers, cues, families = phases._build(phases._phases_file(), prepare=False)
    for text in TEXTS:
        plain = {stage: sum(1 for p in ps if p.compiled.search(text)) for stage, ps in markers.items()}
        assert phases.phase_evidence(text) == plain
        told = {f.name: sum(1 for p in f.patterns if p.compiled.search(text)) for f in families}
        assert {f.name: n for f, n in phases.symptom_evidence(text)} == {k: n for k, n in told.items() if n}
        if any(p.compiled.search(text) for p in cues):
            assert phases.may_report_failure(text)


def test_literals_of_nested_alternatives_and_groups():
    assert required_literals(r"(?i)memory (leak|leaks|leaking)\b") == ((("memory ",), ("leak",)), True)
    assert required_literals(r"\Wloss\W{1,3}\s*nan\b") == ((("loss",), ("nan",)), False)
    assert required_literals(r"(?i)\b(exit|return) code (-9|137)\b") == (((" code ",), ("exit", "return")), True)
    assert required_literals(r"a|bc") == (None, False)  # an alternative too short to look for


def test_diagnosis_is_the_same_without_the_prefilters(monkeypatch):
    """Rules and phase markers without literals (every pattern searched) against the same with
    them, on the whole logs and a sample of the dev cases: the rendered diagnosis is identical."""
    fast_rules = _parse_rule_files(rule_files(), cascade_file())
    plain_rules = _parse_rule_files(rule_files(), cascade_file(), prepare=False)
    assert all(p.literals is None for r in plain_rules for p in r.patterns)
    inputs = TEXTS[: len(WHOLE_LOGS)] + TEXTS[len(WHOLE_LOGS):: 9]
    fast = [render_json(diagnose(parse_text(t), rules=fast_rules)) for t in inputs]
    monkeypatch.setattr(phases, "_patterns", lambda: phases._build(phases._phases_file(), prepare=False))
    plain = [render_json(diagnose(parse_text(t), rules=plain_rules)) for t in inputs]
    assert fast == plain


def test_text_model_scores_are_the_plain_dot_products():
    """The model keeps each document's vector as terms and weights; its similarities must be the
    dot products of the plain dicts, summed over the shorter vector as before, bit for bit."""
    from collections import Counter

    from distdx.diagnose.textmodel import default_model, tokens

    model = default_model()
    vectors = [dict(zip(terms, weights)) for terms, weights in zip(model._terms, model._weights)]
    for text in TEXTS[::3] + ["NCCL timeout", "CUDA out of memory on rank 3"]:
        query = model._weigh(Counter(tokens(text)))
        plain = []
        for issue, vec in zip(model.issues, vectors):
            small, large = (query, vec) if len(query) < len(vec) else (vec, query)
            sim = sum(w * large.get(t, 0.0) for t, w in small.items())
            if sim > 0:
                plain.append((issue.id, sim))
        plain.sort(key=lambda pair: (-pair[1], pair[0]))
        assert [(nb.issue.id, nb.similarity) for nb in model.neighbours(text, k=len(vectors))] == plain
