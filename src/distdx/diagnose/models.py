"""Typed records of a diagnosis; ``Diagnosis.to_dict`` is the JSON contract of `distdx diagnose`."""

from __future__ import annotations

from dataclasses import dataclass, field

from distdx.knowledge.taxonomy import DIMENSIONS, taxonomy
from distdx.logs.models import FirstFailure, LogLine


@dataclass(frozen=True)
class Hypothesis:
    id: str
    score: float  # the engine's score: it ranks, it is not a probability
    probability: float | None = None  # calibrated (diagnose/calibration.yaml): how often such an answer is right

    def to_dict(self) -> dict:
        node = taxonomy().nodes.get(self.id)
        out = {"id": self.id, "score": round(self.score, 4), "name": node.name if node else self.id}
        if self.probability is not None:
            out["probability"] = round(self.probability, 4)
        return out


@dataclass(frozen=True)
class Evidence:
    """A rule that fired on a line: where (rank, host, file, line), what, and how much it counts."""

    rule: str
    title: str
    line: LogLine
    weight: float  # the rule's strength after position (first failure vs cascade)
    first_failure: bool = False
    cascade: bool = False
    frame: tuple[str, int] | None = None  # innermost code location of the traceback it sits in

    def to_dict(self) -> dict:
        out = {
            "rule": self.rule,
            "title": self.title,
            "rank": self.line.rank,
            "host": self.line.host,
            "source": self.line.source,
            "line": self.line.lineno,
            "text": self.line.text,
            "weight": round(self.weight, 4),
            "first_failure": self.first_failure,
            "cascade": self.cascade,
        }
        if self.frame:
            out["frame"] = {"file": self.frame[0], "line": self.frame[1]}
        return out


@dataclass(frozen=True)
class SimilarIssue:
    id: str
    url: str
    title: str
    similarity: float
    labels: dict[str, str]
    resolution: str = ""
    exact: bool = False  # the input is this known issue's own text

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "url": self.url,
            "title": self.title,
            "similarity": round(self.similarity, 4),
            "labels": self.labels,
            "resolution": self.resolution,
            "exact": self.exact,
        }


@dataclass(frozen=True)
class Fix:
    step: str
    rule: str  # the rule that proposes it


@dataclass(frozen=True)
class Diagnosis:
    classification: dict[str, tuple[Hypothesis, ...]]  # dimension -> ranked hypotheses
    confidence: float  # 0..1: how much evidence there is, not how likely the top answer is
    verdict: str  # "explained" | "weak" | "unexplained" | "no_failure" (nothing in the input reports a problem)
    headline: str
    tier: str = "weak"  # "confident" | "likely" | "weak" (from the symptom's probability) | "none" (no failure)
    first_failure: FirstFailure | None = None
    evidence: tuple[Evidence, ...] = ()
    explanation: str = ""
    fixes: tuple[Fix, ...] = ()
    references: tuple[dict, ...] = ()
    similar: tuple[SimilarIssue, ...] = ()
    sources: tuple[str, ...] = ()
    total_lines: int = 0
    total_bytes: int = 0
    complete: bool = True
    ranks: tuple[int, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)

    def top(self, dimension: str) -> str | None:
        ranked = self.classification.get(dimension) or ()
        return ranked[0].id if ranked else None

    def first_failure_dict(self) -> dict | None:
        ff = self.first_failure
        if ff is None:
            return None
        return {
            "rank": ff.rank,
            "host": ff.host,
            "line": ff.line.lineno,
            "text": ff.text,
            "source": ff.line.source,
            "reason": ff.reason,
            "cascade_lines": len(ff.cascade),
        }

    def to_dict(self) -> dict:
        from distdx import __version__

        first = self.first_failure_dict()
        classification: dict[str, object] = {
            dim: [h.to_dict() for h in self.classification.get(dim, ())] for dim in DIMENSIONS
        }
        classification["first_failure"] = first
        return {
            "distdx_version": __version__,
            "verdict": self.verdict,
            "tier": self.tier,
            "confidence": round(self.confidence, 4),
            "headline": self.headline,
            "classification": classification,
            "first_failure": first,
            "evidence": [e.to_dict() for e in self.evidence],
            "explanation": self.explanation,
            "fixes": [{"step": f.step, "rule": f.rule} for f in self.fixes],
            "references": list(self.references),
            "similar_issues": [s.to_dict() for s in self.similar],
            "input": {
                "sources": list(self.sources),
                "lines": self.total_lines,
                "bytes": self.total_bytes,
                "complete": self.complete,
                "ranks": list(self.ranks),
                "notes": list(self.notes),
            },
        }
