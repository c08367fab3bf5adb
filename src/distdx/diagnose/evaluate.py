"""Scoring the engine on labelled cases: top-1, top-3 and Cohen's kappa per dimension, the stage
confusion table and the majority-class baseline beside it.

Cases in the known-issue index are scored leave-one-out: the case being scored is excluded from
the text model and from the root-cause -> fix mapping, so no case is its own evidence. Signature
rules that were written from a case cite its URL in ``references``; ``strict`` also leaves those
rules out while that case is scored, which measures how well the rules generalise to issues they
were not written from.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from distdx.diagnose.engine import diagnose
from distdx.diagnose.textmodel import RULE_DOC_PREFIX, TextModel, rule_documents, taxonomy_documents
from distdx.errors import DistdxError
from distdx.knowledge.known_issues import KnownIssue, read_cases
from distdx.knowledge.rules import Rule, load_rules
from distdx.knowledge.taxonomy import DIMENSIONS, UNKNOWN, taxonomy
from distdx.logs.models import ParsedLog


def cohen_kappa(pairs: list[tuple[str, str]]) -> float:
    n = len(pairs)
    if n == 0:
        return float("nan")
    observed = sum(a == b for a, b in pairs) / n
    ca = Counter(a for a, _ in pairs)
    cb = Counter(b for _, b in pairs)
    expected = sum(ca[k] * cb.get(k, 0) for k in ca) / (n * n)
    return 1.0 if expected == 1 else (observed - expected) / (1 - expected)


def proportion_interval(right: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """Wilson's 95 % interval (for the default ``z``) of a share of ``right`` out of ``n``: how far a
    top-1 figure on this many cases could move with another draw of cases like them."""
    if n <= 0:
        return (0.0, 1.0)
    p = right / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def case_input(case: dict) -> str:
    """What a user would paste: the context, a blank line, then the log (see CASES.md)."""
    return (case.get("context") or "").strip() + "\n\n" + (case.get("log") or "")


@dataclass(frozen=True)
class DimensionScore:
    n: int
    top1: float
    top3: float
    kappa: float
    majority_label: str
    majority_top1: float


@dataclass(frozen=True)
class CaseResult:
    id: str
    gold: dict[str, str]
    predicted: dict[str, tuple[str, ...]]  # top three per dimension
    similar: tuple[dict[str, str], ...] = ()  # labels of the similar known issues shown (not the case itself)
    scores: dict[str, float] = field(default_factory=dict)  # the top hypothesis's score per dimension
    rules: tuple[str, ...] = ()  # the codes of the signature rules that fired with evidence

    @property
    def relevant_similar(self) -> int:
        """How many of the similar issues shown share the case's symptom or root cause."""
        return sum(1 for s in self.similar if s.get("symptom") == self.gold["symptom"]
                   or s.get("root_cause") == self.gold["root_cause"])


@dataclass(frozen=True)
class EvalReport:
    cases: int
    seconds: float
    dimensions: dict[str, DimensionScore]
    stage_confusion: dict[str, dict[str, int]]  # gold -> predicted -> count
    results: tuple[CaseResult, ...] = field(default_factory=tuple)
    leave_one_out: bool = True
    strict: bool = False

    @property
    def rule_coverage(self) -> float:
        """The share of cases on which at least one signature rule fired with evidence."""
        return sum(1 for r in self.results if r.rules) / len(self.results) if self.results else 0.0

    def to_dict(self) -> dict:
        return {
            "cases": self.cases,
            "seconds": round(self.seconds, 2),
            "leave_one_out": self.leave_one_out,
            "strict": self.strict,
            "dimensions": {
                d: {"n": s.n, "top1": round(s.top1, 3), "top3": round(s.top3, 3), "kappa": round(s.kappa, 3),
                    "majority_label": s.majority_label, "majority_top1": round(s.majority_top1, 3)}
                for d, s in self.dimensions.items()
            },
            "stage_confusion": self.stage_confusion,
            "rule_coverage": round(self.rule_coverage, 3),
            "results": [{"id": r.id, "gold": r.gold, "predicted": {k: list(v) for k, v in r.predicted.items()}}
                        for r in self.results],
        }


def gold_labels(case: dict) -> dict[str, str]:
    """A labelled case's label per dimension (``unknown`` where it has none)."""
    return {d: str((case.get("labels") or {}).get(d, UNKNOWN)) for d in DIMENSIONS}


def select_cases(cases_path: str | Path, split: str | None = None, batches: Sequence[str] | None = None) -> list[dict]:
    """The labelled cases of a file whose ``split`` is ``split`` and whose ``batch`` is one of ``batches``
    (None: any)."""
    return [c for c in read_cases(cases_path) if (split is None or c.get("split") == split)
            and (batches is None or c.get("batch") in batches)]


def case_setup(case: dict, all_rules: Sequence[Rule], *, leave_one_out: bool = True,
               strict: bool = False) -> tuple[ParsedLog, Sequence[Rule], frozenset[str]]:
    """What scoring a case diagnoses: its parsed input, the rules in play and the known issues left out
    (the case itself when ``leave_one_out``; with ``strict`` also the rules that cite its URL)."""
    from distdx.logs import parse_text

    excluded = frozenset({str(case.get("id"))}) if leave_one_out else frozenset()
    rules = all_rules
    if strict:
        url = case.get("url")
        rules = tuple(r for r in all_rules if all(ref.url != url for ref in r.references))
        excluded |= {RULE_DOC_PREFIX + r.code for r in all_rules if r not in rules}
    return parse_text(case_input(case), source=str(case.get("id", "<case>"))), rules, excluded


def evaluate(cases_path: str | Path, *, leave_one_out: bool = True, strict: bool = False,
             split: str | None = None, known_issues: Sequence[KnownIssue] | None = None,
             batches: Sequence[str] | None = None) -> EvalReport:
    """Score the diagnosis on labelled cases; ``split`` keeps only the cases whose ``split`` field is it,
    ``batches`` only those whose ``batch`` is one of them.
    ``known_issues`` replaces the installed known-issue index (to compare two indexes in one run)."""
    cases = select_cases(cases_path, split, batches)
    if not cases:
        which = "".join((f" in split {split!r}" if split else "", f" in batches {', '.join(batches)}" if batches else ""))
        raise DistdxError("DX-EVAL-001", f"{cases_path} has no case{which}",
                          hint="check the file, or the --split name (a case's `split` field, e.g. train or test)")
    all_rules = load_rules()
    model = None if known_issues is None else TextModel(
        tuple(known_issues) + rule_documents(all_rules) + taxonomy_documents())
    started = time.perf_counter()
    results = []
    for case in cases:
        parsed, rules, excluded = case_setup(case, all_rules, leave_one_out=leave_one_out, strict=strict)
        diagnosis = diagnose(parsed, exclude_ids=excluded, rules=rules, model=model)
        gold = gold_labels(case)
        predicted = {d: tuple(h.id for h in diagnosis.classification[d][:3]) for d in DIMENSIONS}
        similar = tuple(dict(s.labels) for s in diagnosis.similar if not s.exact)
        scores = {d: diagnosis.classification[d][0].score for d in DIMENSIONS if diagnosis.classification[d]}
        fired = tuple(dict.fromkeys(e.rule for e in diagnosis.evidence))
        results.append(CaseResult(str(case.get("id")), gold, predicted, similar, scores, fired))
    seconds = time.perf_counter() - started
    dims = dimension_scores(results)
    stages = taxonomy().ids("stage")
    confusion = {g: {p: 0 for p in stages} for g in stages}
    for r in results:
        g, p = r.gold["stage"], (r.predicted["stage"] or ("",))[0]
        if g in confusion and p in confusion[g]:
            confusion[g][p] += 1
    return EvalReport(len(cases), seconds, dims, confusion, tuple(results), leave_one_out, strict)


def dimension_scores(results: Sequence[CaseResult]) -> dict[str, DimensionScore]:
    """Top-1, top-3, kappa and the majority-class baseline per dimension, over the cases whose gold label
    in that dimension is known (whoever made the predictions: the engine, or a person in a baseline)."""
    dims = {}
    for dim in DIMENSIONS:
        scored = [r for r in results if r.gold[dim] not in (UNKNOWN, "", "None")]
        if not scored:
            continue
        majority, count = Counter(r.gold[dim] for r in scored).most_common(1)[0]
        pairs = [(r.gold[dim], (r.predicted[dim] or ("none",))[0]) for r in scored]
        dims[dim] = DimensionScore(
            n=len(scored),
            top1=sum(a == b for a, b in pairs) / len(scored),
            top3=sum(r.gold[dim] in r.predicted[dim] for r in scored) / len(scored),
            kappa=cohen_kappa(pairs),
            majority_label=majority,
            majority_top1=count / len(scored),
        )
    return dims
