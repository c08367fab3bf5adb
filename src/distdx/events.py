"""The guard's events: one torch-free record that :mod:`distdx.guard` writes and :mod:`distdx.logs`
reads back from a log.

An event is a JSON object with ``"distdx": 1`` (the schema version), ``kind``, ``severity``, ``rank``
(the rank the event is about), ``reporter`` (the rank that wrote it), ``host``, ``step``, ``time`` (Unix
seconds), ``message`` (one human sentence that signature rules match) and the structured fields of
its kind (``op``, ``seq``, ``shapes``, ``ranks``, ...).
"""

from __future__ import annotations

from dataclasses import dataclass, field

SCHEMA_VERSION = 1
SEVERITIES = ("error", "warning", "info")
_CORE = ("distdx", "kind", "severity", "rank", "reporter", "host", "step", "time", "message")


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class GuardEvent:
    kind: str
    message: str
    rank: int | None = None
    step: int | None = None
    severity: str = "error"
    host: str = ""
    time: float = 0.0
    reporter: int | None = None
    fields: dict = field(default_factory=dict, hash=False)  # the kind's own fields; not part of the hash
    schema: int = SCHEMA_VERSION

    def to_dict(self) -> dict:
        out = {
            "distdx": self.schema,
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
    def from_dict(cls, data: dict) -> GuardEvent:
        """An event from its JSON object; fields of the wrong type are read as absent, so a damaged
        line in a user's log never stops the reader."""
        when = data.get("time")
        host = data.get("host")
        return cls(
            kind=str(data.get("kind", "event")),
            message=str(data.get("message", "")),
            rank=_int(data.get("rank")),
            step=_int(data.get("step")),
            severity=str(data.get("severity", "error")),
            host=host if isinstance(host, str) else "",
            time=float(when) if isinstance(when, (int, float)) and not isinstance(when, bool) else 0.0,
            reporter=_int(data.get("reporter")),
            fields={k: v for k, v in data.items() if k not in _CORE},
            schema=_int(data.get("distdx")) or SCHEMA_VERSION,
        )
