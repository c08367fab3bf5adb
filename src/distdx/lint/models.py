"""Typed records of the lint package: rules (loaded from ``rules.yaml``), findings and the report."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from distdx.knowledge.catalogue import SEVERITIES, Reference

__all__ = ["Reference", "SEVERITIES"]  # re-exported: lint's records share the catalogues' schema


@dataclass(frozen=True)
class LintRule:
    """One rule of ``rules.yaml``: what it detects and why, how to fix it, the taxonomy nodes it prevents."""

    code: str
    severity: str
    title: str
    why: str
    fix: str
    symptom: str
    root_cause: str
    fix_pattern: str
    applies_to: str  # deepspeed | megatron | colossalai | launch | accelerate | any
    example: str = ""
    references: tuple[Reference, ...] = ()
    fix_kind: str = "none"  # what `distdx fix` does: safe | unsafe | none (see rules.yaml's header)
    fixed_example: str = ""  # the example after `distdx fix --unsafe-fixes`
    status: str = "stable"  # stable | preview | deprecated (a code is deprecated, never removed)
    since: str = ""  # the distdx release that introduced it ("" for rules older than the field)


@dataclass(frozen=True)
class Hit:
    """What a check reports before the rule's data is attached: the field, its value and what is wrong."""

    code: str
    field: str
    value: object
    message: str
    line: int | None = None
    column: int | None = None


@dataclass(frozen=True)
class Finding:
    code: str
    severity: str
    file: str
    field: str
    value: object
    message: str
    why: str
    fix: str
    symptom: str
    root_cause: str
    fix_pattern: str
    title: str = ""
    line: int | None = None
    column: int | None = None
    fix_kind: str = "none"  # the rule's: safe | unsafe | none

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Finding:
        return cls(**data)

    def location(self) -> str:
        where = self.file
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        return where


@dataclass(frozen=True)
class LintReport:
    files: tuple[str, ...]
    findings: tuple[Finding, ...]
    world_size: int | None = None
    world_size_source: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)

    def count(self, severity: str) -> int:
        return sum(1 for f in self.findings if f.severity == severity)

    @property
    def has_errors(self) -> bool:
        return self.count("error") > 0

    def summary(self) -> dict:
        return {
            "files": len(self.files),
            "errors": self.count("error"),
            "warnings": self.count("warning"),
            "infos": self.count("info"),
            "world_size": self.world_size,
            "world_size_source": self.world_size_source,
        }

    def to_dict(self) -> dict:
        return {"findings": [f.to_dict() for f in self.findings], "summary": self.summary(),
                "files": list(self.files), "notes": list(self.notes)}

    @classmethod
    def from_dict(cls, data: dict) -> LintReport:
        summary = data.get("summary", {})
        return cls(files=tuple(data.get("files", ())),
                   findings=tuple(Finding.from_dict(f) for f in data.get("findings", ())),
                   world_size=summary.get("world_size"), world_size_source=summary.get("world_size_source", ""),
                   notes=tuple(data.get("notes", ())))
