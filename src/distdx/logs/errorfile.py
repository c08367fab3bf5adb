"""torchelastic error files (``error.json``) read as log lines."""

from __future__ import annotations

from distdx import jsonio
from distdx.logs.lines import SourceContext, make_line
from distdx.logs.models import LogLine

ERROR_FILE_MAX = 16 << 20  # a torchelastic error file larger than this is read as a log


def is_error_file_name(path: str | None) -> bool:
    return bool(path) and path.lower().endswith(".json")


def read_error_file(path: str, ctx: SourceContext, data: bytes) -> list[LogLine] | None:
    """A torchelastic error file (``error.json``) as log lines, or None when it is not one.

    Its shape is ``{"message": {"message": "RuntimeError: ...", "extraInfo": {"py_callstack":
    "Traceback ...", "timestamp": "1714564800"}}}`` (older files have a string ``message``).
    """
    try:
        doc = jsonio.loads(data.decode("utf-8", errors="replace"))
    except ValueError:
        return None
    if not isinstance(doc, dict) or "message" not in doc:
        return None
    msg = doc["message"]
    callstack = ""
    stamp = doc.get("timestamp")
    if isinstance(msg, dict):
        extra = msg.get("extraInfo") if isinstance(msg.get("extraInfo"), dict) else {}
        callstack = str(extra.get("py_callstack") or "")
        stamp = extra.get("timestamp", stamp)
        msg = msg.get("message", "")
    timestamp = None
    try:
        from datetime import datetime, timezone

        timestamp = datetime.fromtimestamp(int(stamp), tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S") if stamp else None
    except (TypeError, ValueError, OverflowError, OSError):
        timestamp = None
    out: list[LogLine] = []
    n = 0
    for text in callstack.splitlines():
        n += 1
        line = make_line(ctx, n, text)
        out.append(LogLine(line.source, n, line.text, line.rank, line.host, timestamp, line.local_rank))
    last = out[-1].text.strip() if out else ""
    first_line = str(msg).strip().splitlines()[0] if str(msg).strip() else ""
    if first_line and first_line != last:
        for text in str(msg).strip().splitlines():
            n += 1
            line = make_line(ctx, n, text)
            out.append(LogLine(line.source, n, line.text, line.rank, line.host, timestamp, line.local_rank, None, line.rank_from))
    return out
