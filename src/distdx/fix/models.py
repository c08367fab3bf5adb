"""Typed records of the fix package: one edit, one fix (the edits that repair one finding), the result per file."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

FIX_KINDS = ("safe", "unsafe", "none")


@dataclass(frozen=True)
class Edit:
    """Replace ``text[start:end]`` with ``replacement`` (an insertion when start == end)."""

    start: int
    end: int
    replacement: str


@dataclass(frozen=True)
class Fix:
    """The edits that repair one lint finding: its code and field, safe or unsafe, and why in one line."""

    code: str
    file: str
    field: str
    kind: str  # safe | unsafe
    description: str
    edits: tuple[Edit, ...]
    line: int | None = None

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Fix:
        return cls(**{**data, "edits": tuple(Edit(**e) for e in data["edits"])})


@dataclass(frozen=True)
class FileFix:
    """What ``distdx fix`` does to one file: the text read, the text after the fixes that were applied, the
    fixes applied, the fixes left out (unsafe without --unsafe-fixes) and the codes still reported after."""

    file: str
    original: str
    fixed: str
    applied: tuple[Fix, ...]
    skipped_unsafe: tuple[Fix, ...] = ()
    remaining: tuple[str, ...] = ()  # "CODE field" of the error findings still there after fixing
    rounds: int = 0

    @property
    def changed(self) -> bool:
        return self.fixed != self.original

    def diff(self) -> str:
        """The unified diff from the original to the fixed text ("" when nothing changes)."""
        import difflib

        return "".join(difflib.unified_diff(self.original.splitlines(keepends=True), self.fixed.splitlines(keepends=True),
                                            fromfile=f"a/{self.file.lstrip('/')}", tofile=f"b/{self.file.lstrip('/')}"))

    def to_dict(self) -> dict:
        return {"file": self.file, "changed": self.changed, "applied": [f.to_dict() for f in self.applied],
                "skipped_unsafe": [f.to_dict() for f in self.skipped_unsafe], "remaining": list(self.remaining),
                "rounds": self.rounds, "diff": self.diff()}


@dataclass(frozen=True)
class FixReport:
    files: tuple[FileFix, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def changed(self) -> bool:
        return any(f.changed for f in self.files)

    def to_dict(self) -> dict:
        return {"files": [f.to_dict() for f in self.files], "notes": list(self.notes),
                "summary": {"files": len(self.files), "changed": sum(f.changed for f in self.files),
                            "applied": sum(len(f.applied) for f in self.files),
                            "skipped_unsafe": sum(len(f.skipped_unsafe) for f in self.files)}}
