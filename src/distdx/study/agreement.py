"""Inter-annotator agreement (Cohen's and Fleiss' kappa) and taxonomy saturation per round.

Kappa is computed over the issues every annotator labelled, per dimension, with ``unknown`` as
a category of its own (as the study labelled it). When chance agreement is total (everyone used
one and the same category) kappa is undefined and reported as ``None``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Sequence

from distdx.errors import DistdxError
from distdx.knowledge.taxonomy import UNKNOWN
from distdx.study.records import DIMENSIONS, LabelSet


def cohen_kappa(a: Sequence[str], b: Sequence[str]) -> float | None:
    """Cohen's kappa of two raters' labels for the same items (unweighted)."""
    if len(a) != len(b) or not a:
        raise ValueError("two non-empty label sequences of equal length are needed")
    n = len(a)
    observed = sum(x == y for x, y in zip(a, b)) / n
    ca, cb = Counter(a), Counter(b)
    expected = sum(ca[k] * cb[k] for k in ca) / (n * n)
    if expected >= 1.0:
        return None
    return (observed - expected) / (1.0 - expected)


def fleiss_kappa(ratings: Sequence[Sequence[str]]) -> float | None:
    """Fleiss' kappa; ``ratings[i]`` holds every rater's label for item i (same count per item)."""
    if not ratings:
        raise ValueError("no items")
    raters = len(ratings[0])
    if raters < 2 or any(len(r) != raters for r in ratings):
        raise ValueError("every item needs the same number (>= 2) of ratings")
    items = len(ratings)
    totals: Counter[str] = Counter()
    agreement = 0.0
    for row in ratings:
        counts = Counter(row)
        totals.update(counts)
        agreement += (sum(c * c for c in counts.values()) - raters) / (raters * (raters - 1))
    p_bar = agreement / items
    p_e = sum((c / (items * raters)) ** 2 for c in totals.values())
    if p_e >= 1.0:
        return None
    return (p_bar - p_e) / (1.0 - p_e)


@dataclass(frozen=True)
class Disagreement:
    id: str
    labels: dict[str, str]  # annotator -> label


@dataclass(frozen=True)
class DimensionAgreement:
    dimension: str
    kappa: float | None
    n: int
    method: str  # cohen | fleiss
    observed: float  # share of issues where all annotators agree
    disagreements: tuple[Disagreement, ...]

    def to_dict(self) -> dict:
        return {
            "kappa": None if self.kappa is None else round(self.kappa, 6),
            "n": self.n,
            "method": self.method,
            "observed_agreement": round(self.observed, 6),
            "disagreements": [{"id": d.id, "labels": d.labels} for d in self.disagreements],
        }


@dataclass(frozen=True)
class Agreement:
    annotators: tuple[str, ...]
    dimensions: dict[str, DimensionAgreement]
    only_some: int  # issues not labelled by every annotator (left out)

    def to_dict(self) -> dict:
        return {d: a.to_dict() for d, a in self.dimensions.items()}


def agreement(sets: dict[str, dict[str, LabelSet]]) -> Agreement:
    """Agreement of two or more annotators, each given as ``{issue id: labels}``."""
    if len(sets) < 2:
        raise DistdxError("DX-STUDY-060", "agreement needs labels from two or more annotators",
                          hint="give two or more label files, or one case file with an `annotations` field")
    names = tuple(sets)
    common = sorted(set.intersection(*(set(s) for s in sets.values())))
    every = set.union(*(set(s) for s in sets.values()))
    if not common:
        raise DistdxError("DX-STUDY-061", "the annotators have no issue in common",
                          why="kappa compares labels of the same issues", hint="check that the files use the same ids")
    method = "cohen" if len(names) == 2 else "fleiss"
    dims = {}
    for dim in DIMENSIONS:
        rows = [[sets[a][i].value(dim) for a in names] for i in common]
        kappa = cohen_kappa([r[0] for r in rows], [r[1] for r in rows]) if method == "cohen" else fleiss_kappa(rows)
        disagreements = tuple(Disagreement(i, dict(zip(names, r))) for i, r in zip(common, rows) if len(set(r)) > 1)
        dims[dim] = DimensionAgreement(dim, kappa, len(common), method,
                                       1 - len(disagreements) / len(common), disagreements)
    return Agreement(names, dims, len(every) - len(common))


@dataclass(frozen=True)
class Round:
    round: int
    issues: int
    new_categories: dict[str, tuple[str, ...]]  # dimension -> categories first used in this round
    kappa: dict[str, float | None]  # agreement within the round (None: fewer than two annotators)

    @property
    def new_total(self) -> int:
        return sum(len(v) for v in self.new_categories.values())


@dataclass(frozen=True)
class Saturation:
    rounds: tuple[Round, ...]

    @property
    def saturated(self) -> bool:
        """The study's stopping rule: the last round added no category."""
        return bool(self.rounds) and self.rounds[-1].new_total == 0 and len(self.rounds) > 1

    def to_dict(self) -> dict:
        return {
            "saturated": self.saturated,
            "rounds": [{"round": r.round, "issues": r.issues, "new_categories": {k: list(v) for k, v in
                        r.new_categories.items()}, "new_total": r.new_total,
                        "kappa": {k: None if v is None else round(v, 6) for k, v in r.kappa.items()}}
                       for r in self.rounds],
        }


def saturation(annotations: Iterable[tuple[int, str, str, LabelSet]]) -> Saturation:
    """Per round, the categories used for the first time; ``annotations`` are (round, annotator, id, labels)."""
    by_round: dict[int, list[tuple[str, str, LabelSet]]] = {}
    for rnd, who, issue, labels in annotations:
        by_round.setdefault(rnd, []).append((who, issue, labels))
    seen: dict[str, set[str]] = {d: set() for d in DIMENSIONS}
    rounds = []
    for rnd in sorted(by_round):
        entries = by_round[rnd]
        new: dict[str, tuple[str, ...]] = {}
        for dim in DIMENSIONS:
            used = {labels.value(dim) for _, _, labels in entries} - {UNKNOWN}
            new[dim] = tuple(sorted(used - seen[dim]))
            seen[dim] |= used
        sets: dict[str, dict[str, LabelSet]] = {}
        for who, issue, labels in entries:
            sets.setdefault(who, {})[issue] = labels
        kappa: dict[str, float | None] = {d: None for d in DIMENSIONS}
        if len(sets) >= 2 and set.intersection(*(set(s) for s in sets.values())):
            result = agreement(sets)
            kappa = {d: a.kappa for d, a in result.dimensions.items()}
        rounds.append(Round(rnd, len({issue for _, issue, _ in entries}), new, kappa))
    return Saturation(tuple(rounds))
