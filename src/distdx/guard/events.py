"""Per-rank JSONL events: the guard's output and the input `distdx diagnose` reads.

Each line is one JSON object with ``"distdx": 1`` (the schema version), ``kind``, ``severity``,
``rank`` (the rank the event is about), ``reporter`` (the rank that wrote it), ``host``, ``step``,
``time`` (Unix seconds), ``message`` (one human sentence that signature rules match) and the
structured fields of its kind (``op``, ``seq``, ``shapes``, ``ranks``, ...).
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from distdx import jsonio
from distdx.errors import DistdxError

SCHEMA_VERSION = 1
SEVERITIES = ("error", "warning", "info")


@dataclass(frozen=True)
class GuardEvent:
    kind: str
    message: str
    rank: int | None
    step: int | None = None
    severity: str = "error"
    host: str = ""
    time: float = 0.0
    reporter: int | None = None
    fields: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        out = {
            "distdx": SCHEMA_VERSION,
            "kind": self.kind,
            "severity": self.severity,
            "rank": self.rank,
            "reporter": self.reporter,
            "host": self.host,
            "step": self.step,
            "time": round(self.time, 3),
            "message": self.message,
        }
        out.update({k: v for k, v in self.fields.items() if k not in out})
        return out

    @classmethod
    def from_dict(cls, data: dict) -> "GuardEvent":
        core = ("distdx", "kind", "severity", "rank", "reporter", "host", "step", "time", "message")
        return cls(
            kind=str(data["kind"]),
            message=str(data["message"]),
            rank=data.get("rank"),
            step=data.get("step"),
            severity=str(data.get("severity", "error")),
            host=str(data.get("host") or ""),
            time=float(data.get("time") or 0.0),
            reporter=data.get("reporter"),
            fields={k: v for k, v in data.items() if k not in core},
        )


class EventLog:
    """Appends events to ``guard-rank{r}.jsonl``; safe to call from several threads."""

    def __init__(self, out_dir: str | os.PathLike, rank: int) -> None:
        self.path = Path(out_dir) / f"guard-rank{rank}.jsonl"
        self._lock = threading.Lock()
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def append(self, event: GuardEvent) -> None:
        line = json.dumps(event.to_dict(), default=str, separators=(",", ":"))
        with self._lock, open(self.path, "a", encoding="utf-8") as f:
            f.write(line + "\n")


def read_events(path: str | os.PathLike) -> list[GuardEvent]:
    """The guard events of one file (or every ``guard-rank*.jsonl`` of a folder), in time order.

    Lines that are not guard events (other JSON, text) are skipped; an unreadable file is a
    :class:`DistdxError`.
    """
    p = Path(path)
    files = sorted(p.glob("guard-rank*.jsonl")) if p.is_dir() else [p]
    events: list[GuardEvent] = []
    for f in files:
        try:
            text = f.read_text(encoding="utf-8", errors="replace")
        except OSError as e:
            raise DistdxError(
                "DX-GUARDCFG-002",
                f"cannot read guard events from {f}",
                why=str(e),
                hint="pass the folder given as --out to `distdx run`, or a guard-rank*.jsonl file",
            ) from None
        for line in text.splitlines():
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                data = jsonio.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut short when the process was killed
            if isinstance(data, dict) and data.get("distdx") == SCHEMA_VERSION and "kind" in data and "message" in data:
                events.append(GuardEvent.from_dict(data))
    events.sort(key=lambda e: e.time)
    return events
