"""Per-rank JSONL event files: the guard's output and the input `distdx diagnose` reads. The event
record itself (:class:`~distdx.events.GuardEvent`) lives in :mod:`distdx.events`, torch-free, so the
logs reader parses the same class the guard writes."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from distdx import jsonio
from distdx.errors import DistdxError
from distdx.events import SCHEMA_VERSION, SEVERITIES, GuardEvent

__all__ = ["SCHEMA_VERSION", "SEVERITIES", "EventLog", "GuardEvent", "read_events"]



def short(text: str, limit: int = 200) -> str:
    """``text`` on one line, cut to ``limit`` characters: what an event's message holds of an error."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


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
