"""One raw line in, one :class:`LogLine` out: launcher prefixes, ANSI codes, progress-bar
redraws, timestamps and distdx guard events.

Launchers prefix every line of a worker's output with where it came from; they nest (pdsh
adds ``host: `` in front of torchrun's ``[rank3]:``), so prefixes are peeled off in a loop.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from distdx import jsonio
from distdx.events import GuardEvent
from distdx.logs.models import LogLine

# CSI sequences (colours, cursor moves), OSC sequences (titles, links) and lone escapes.
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")

# mpirun --tag-output: `[1,3]<stderr>:` is (job, rank)
_MPI = re.compile(r"\[\d+,(\d+)\]<(?:stdout|stderr|stddiag)>:")
# torchrun / torchelastic: `[rank3]: ` (global rank) and `[default0]:` (role + local rank); the one
# space torch writes after `[rank3]:` belongs to the prefix, or `Traceback` and exception lines
# would start with a space that the line's own text does not have
_TORCHRUN_RANK = re.compile(r"\[rank(\d+)\]: ?")
_TORCHRUN_ROLE = re.compile(r"\[([A-Za-z_][A-Za-z_-]*?)(\d+)\]:")
# srun -l / --label: `3: ` (possibly space-padded)
_SRUN = re.compile(r"\s*(\d{1,6}): ")
# pdsh (deepspeed multi-node launcher): `worker-1: `
_HOST = re.compile(r"([A-Za-z0-9][\w.\-]{0,252}): ")
# NCCL debug lines: `node1:1234:5678 [3] NCCL WARN ...` (host:pid:tid [cuda device])
_NCCL_TAG = re.compile(r"([\w.\-]+):\d+:\d+ \[(\d+)\] NCCL ")
# DeepSpeed / Megatron / ProcessGroupNCCL name the rank inside the text: `[Rank 3]`, `[PG 0 Rank 3]`,
# `[PG ID 0 PG GUID 0(default_pg) Rank 3]`
_TEXT_RANK = re.compile(r"\[(?:PG [^\]]{0,80}?)?[Rr]ank[ =]?(\d+)\]")

_NOT_HOSTS = frozenset(
    {
        "time", "host", "rank", "exitcode", "error_file", "traceback", "error", "warning", "note",
        "info", "debug", "fatal", "critical", "failures", "frame", "caused", "hint", "usage",
        "message", "reason", "details", "step", "epoch", "loss", "iteration", "cause", "help",
    }
)
_FILE_LIKE = re.compile(r"\.(?:py|pyx|cc|cpp|cu|cuh|c|h|hpp|sh|so|log|txt|json|yaml|yml|toml|cfg|ini)$")
_EXCEPTION_SUFFIXES = ("Error", "Exception", "Warning", "Interrupt", "Exit", "Iteration", "Failure", "Failed")

# Timestamps, tried at the start of the text once prefixes are gone.
_TS_ISO = re.compile(
    r"\[?(?P<y>\d{4})-(?P<mo>\d{2})-(?P<d>\d{2})[ T_](?P<h>\d{2}):(?P<mi>\d{2}):(?P<s>\d{2})"
    r"(?P<f>[.,]\d{1,9})?(?:Z|[+-]\d{2}:?\d{2})?\]?"
)
_TS_GLOG = re.compile(
    r"\[?(?P<lvl>[IWEF])(?P<mo>\d{1,2})(?P<d>\d{2}) (?P<h>\d{2}):(?P<mi>\d{2}):(?P<s>\d{2})(?P<f>\.\d{1,9})?"
    r"(?:\s+\d+)?\s+[^\]\s]+:\d+\]"
)

_TS_GLOG_SHORT = re.compile(r"(?P<lvl>[IWEF])(?P<mo>\d{1,2})(?P<d>\d{2}) (?P<h>\d{2}):(?P<mi>\d{2}):(?P<s>\d{2})(?P<f>\.\d{1,9})?")


@dataclass
class SourceContext:
    """What is known about a whole source before its lines are read."""

    source: str
    rank: int | None = None  # from the file name or its directory (rank3.log, attempt_0/3/...)
    local_rank: int | None = None
    hosts: frozenset[str] = frozenset()  # pdsh host prefixes seen often in the source's first chunk


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text) if "\x1b" in text else text


def collapse_redraws(text: str) -> str:
    """A tqdm bar redraws itself with ``\\r``; what a terminal shows is the last state."""
    text = text.rstrip("\r")
    if "\r" not in text:
        return text
    for part in reversed(text.split("\r")):
        if part.strip():
            return part
    return ""


_EXCEPTION_INSIDE = re.compile(r"[A-Z]\w*(?:Error|Exception)")


def _exception_like(token: str) -> bool:
    """An exception's name, dotted or not: ``RuntimeError``, ``pynvml.NVMLError_InvalidArgument``."""
    return token.endswith(_EXCEPTION_SUFFIXES) or bool(_EXCEPTION_INSIDE.match(token.rsplit(".", 1)[-1]))


def _is_host_token(token: str, after: str, known: frozenset[str]) -> bool:
    if token in known:
        return True
    if token.lower() in _NOT_HOSTS or _exception_like(token) or token.isdigit() or _FILE_LIKE.search(token):
        return False
    # a launcher prefix right behind it proves it is a host
    if after.startswith(("[rank", "[default", "[1,", "[0,")) or _MPI.match(after) or _TORCHRUN_ROLE.match(after):
        return True
    return any(c.isdigit() or c in "-." for c in token) and not token.startswith(("http", "www"))


def guess_hosts(sample_lines: list[str]) -> frozenset[str]:
    """Hosts a pdsh-style launcher prefixed to many lines of a sample."""
    counts: dict[str, int] = {}
    for line in sample_lines:
        m = _HOST.match(line)
        if m and not _exception_like(m.group(1)) and m.group(1).lower() not in _NOT_HOSTS:
            counts[m.group(1)] = counts.get(m.group(1), 0) + 1
    need = max(3, len(sample_lines) // 20)
    return frozenset(h for h, n in counts.items() if n >= need and not h.isdigit())


def timestamp_key(ts: str | None) -> tuple | None:
    """A sortable key for a timestamp as written: (month, day, h, m, s, fraction); years are
    ignored because glog stamps have none."""
    if not ts:
        return None
    m = _TS_ISO.match(ts) or _TS_GLOG_SHORT.match(ts)
    if not m:
        return None
    frac = float((m.group("f") or ".0").replace(",", "."))
    return (int(m.group("mo")), int(m.group("d")), int(m.group("h")), int(m.group("mi")), int(m.group("s")), frac)


def find_timestamp(text: str) -> str | None:
    m = _TS_ISO.match(text)
    if m:
        return m.group(0).strip("[]")
    m = _TS_GLOG.match(text)
    if m:
        return text[m.start("lvl"): m.end("f") if m.group("f") else m.end("s")]
    return None


def guard_event(text: str) -> GuardEvent | None:
    """A distdx guard event: a JSON object with an integer ``"distdx"`` schema version."""
    stripped = text.strip()
    if not (stripped.startswith("{") and stripped.endswith("}") and '"distdx"' in stripped):
        return None
    try:
        data = jsonio.loads(stripped)
    except ValueError:
        return None
    version = data.get("distdx") if isinstance(data, dict) else None
    if not isinstance(version, int) or isinstance(version, bool):
        return None
    return GuardEvent.from_dict(data)


def make_line(ctx: SourceContext, lineno: int, raw: str) -> LogLine:
    """Turn one decoded raw line into a :class:`LogLine` attributed to a rank and host."""
    text = collapse_redraws(strip_ansi(raw))
    rank = ctx.rank
    rank_from = "file" if rank is not None else None
    local_rank = ctx.local_rank
    host: str | None = None
    prefixed_rank = False
    for _ in range(4):  # prefixes nest: pdsh host, then mpirun/torchrun/srun
        m = _MPI.match(text)
        if m:
            rank, prefixed_rank = int(m.group(1)), True
            text = text[m.end():]
            continue
        m = _TORCHRUN_RANK.match(text)
        if m:
            rank, prefixed_rank = int(m.group(1)), True
            text = text[m.end():]
            continue
        m = _TORCHRUN_ROLE.match(text)
        if m:
            local_rank = int(m.group(2))
            text = text[m.end():]
            continue
        m = _SRUN.match(text)
        if m and not prefixed_rank and host is None:
            rank, prefixed_rank = int(m.group(1)), True
            text = text[m.end():]
            continue
        m = _HOST.match(text)
        if m and host is None and not prefixed_rank and _is_host_token(m.group(1), text[m.end():], ctx.hosts):
            host = m.group(1)
            text = text[m.end():]
            continue
        break

    event = guard_event(text) if "distdx" in text else None
    if event is not None:
        if event.rank is not None:
            rank = event.rank
        host = event.host or host
        text = f"[distdx-guard] {event.message}"
        return LogLine(ctx.source, lineno, text, rank, host, None, local_rank, event,
                       "event" if event.rank is not None else ("prefix" if prefixed_rank else rank_from))

    if "] NCCL " in text:  # what every tag ends with: the search, slow on long lines, runs on tagged ones only
        m = _NCCL_TAG.search(text)
        if m:
            host = host or m.group(1)
            if local_rank is None:
                local_rank = int(m.group(2))
    if prefixed_rank:
        rank_from = "prefix"
    if rank is None and "ank" in text:
        m = _TEXT_RANK.search(text)
        if m:
            rank, rank_from = int(m.group(1)), "text"
    if rank is None and local_rank is not None and host is None and not ctx.hosts:
        rank, rank_from = local_rank, "inferred"  # a single node: local rank is the global rank
    timestamp = find_timestamp(text) if text[:1] in "[0123456789IWEF" else None
    return LogLine(ctx.source, lineno, text, rank, host, timestamp, local_rank, None, rank_from)
