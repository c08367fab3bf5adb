"""The first failure: the earliest real error and its rank, apart from the cascade it causes.

Candidates come in tiers, and the first non-empty tier wins:

0. errors of their own: tracebacks, C++/NCCL errors, compiler errors, error files and error lines
   that no cascade pattern (``cascade.yaml``) explains;
1. a process killed from outside with no error of its own (``Killed``, SIGKILL/SIGSEGV reported by
   srun or mpirun): the OOM killer or a crash;
2. cascade errors (watchdog timeouts, aborts, dropped connections): when nothing else is there,
   the earliest of them is the best lead;
3. launcher summaries (torchelastic's table, exit codes);
4. with none of those, the guard's earliest error event by the time it was written (a job that
   ran on with NaNs logs no error); guard events that report a consequence (a failed collective)
   never start a failure.

Within a tier, candidates are ordered by timestamp when every one of them has one (a line without
its own stamp takes the last stamp seen earlier in its stream), otherwise by position in the input.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from distdx.paths import cached
from distdx.yamlio import load_yaml
from distdx.logs.blocks import stream_key
from distdx.logs.lines import timestamp_key
from distdx.logs.models import Block, FirstFailure, LogLine

_ERROR_KINDS = frozenset({"python_traceback", "cpp_error", "nccl_error", "compiler_error", "error_file"})
_ERROR_LINE = re.compile(
    r"^\[?E\d{4} |^\[E |\[ERROR\]|\bERROR\b|^\s*[\w.]+(?:Error|Exception)\b:|\berror:|CUDA out of memory|"
    r"Fatal Python error|illegal memory access|device-side assert|Watchdog caught|NCCL communicator was aborted|"
    r"Segmentation fault"
)
_NOT_ERROR_LINE = re.compile(r"(?i)warn|^\s*error_file\s*:|no error|errors?\s*[:=]\s*0\b|error_file=")
_MAX_CASCADE = 1000


@dataclass(frozen=True)
class CascadePattern:
    code: str
    pattern: re.Pattern
    why: str


@lru_cache(maxsize=1)
def cascade_patterns() -> tuple[CascadePattern, ...]:
    """The cascade patterns of ``distdx/cascade.yaml`` (all of distdx's cascade knowledge: these patterns
    and the signature rules that describe a consequence), loaded once."""
    raw = resources.files("distdx").joinpath("cascade.yaml").read_bytes()
    data = cached("cascade", [raw], lambda: load_yaml(raw.decode("utf-8")))
    return tuple(CascadePattern(p["code"], re.compile(p["pattern"]), p["why"]) for p in data["patterns"])


_LOOPBACK = re.compile(r"^(localhost(\.localdomain)?|ip6-localhost|127(\.\d{1,3}){3}|::1)$", re.IGNORECASE)


def _summary_host(summary: str | None, prefixed: str | None) -> str | None:
    """The host of a launcher summary's root cause: the summary's own ``host`` field, unless that is a
    loopback name (every node calls itself localhost) and the line's launcher prefix names the node."""
    if summary and not (prefixed and _LOOPBACK.match(summary.strip())):
        return summary
    return prefixed or summary


def cascade_match(text: str) -> CascadePattern | None:
    for p in cascade_patterns():
        if p.pattern.search(text):
            return p
    return None


# guard event kinds that report the consequence of a fault elsewhere, never where one began
_GUARD_CONSEQUENCES = frozenset({"collective_failed"})


def _from_guard_events(lines: list[LogLine]) -> FirstFailure | None:
    """With no error in the logs (a job that ran on with NaNs, or was stopped), the guard's
    earliest error event, by the time it was written: every rank writes its own file, so the
    order of the files says nothing."""
    found = []
    for i, line in enumerate(lines):
        if line.event is None or line.event.kind in _GUARD_CONSEQUENCES:
            continue
        if line.event.severity == "error":
            found.append((line.event.time or float("inf"), i, line))
    if not found:
        return None
    found.sort(key=lambda t: (t[0], t[1]))
    first = found[0][2]
    later = [line for _, _, line in found[1:]]
    reason = f"no error in the logs; the guard's earliest error event, on {_describe(first)}, chosen by the time it was written"
    if later:
        reason += f"; {len(later)} later guard events look like its spread"
    return FirstFailure(line=first, text=first.text, reason=reason, cascade=tuple(later[:_MAX_CASCADE]))


def classify_block(block: Block) -> Block:
    """Mark a block as cascade when a cascade pattern explains it."""
    if block.cascade and block.cascade_reason:
        return block
    text = "\n".join(filter(None, (block.headline.text, block.exception, block.message)))
    p = cascade_match(text)
    if p is not None:
        return dataclasses.replace(block, cascade=True, cascade_reason=p.code)
    return block


@dataclass
class _Candidate:
    tier: int
    pos: int
    line: LogLine
    text: str
    block: Block | None
    ts: tuple | None
    cascade: str = ""


def _describe(line: LogLine) -> str:
    where = f"rank {line.rank}" if line.rank is not None else "an unknown rank"
    if line.host:
        where += f" on {line.host}"
    return where


def _representative(cascade: list[_Candidate]) -> tuple[LogLine, ...]:
    """At most _MAX_CASCADE lines, the first of every rank before any second ones, in order."""
    seen: set = set()
    firsts, rest = [], []
    for c in cascade:
        key = (c.line.rank, c.line.host)
        (rest if key in seen else firsts).append(c)
        seen.add(key)
    chosen = (firsts + rest)[:_MAX_CASCADE]
    chosen.sort(key=lambda c: c.pos)
    return tuple(c.line for c in chosen)


def find_first_failure(lines: list[LogLine], blocks: list[Block]) -> FirstFailure | None:
    pos_of = {id(line): i for i, line in enumerate(lines)}
    # a line without a timestamp takes the last one seen before it in its stream
    effective_ts: dict[int, tuple | None] = {}
    last_ts: dict[tuple, tuple | None] = {}
    for line in lines:
        key = stream_key(line)
        k = timestamp_key(line.timestamp)
        if k is not None:
            last_ts[key] = k
        effective_ts[id(line)] = k if k is not None else last_ts.get(key)

    in_block: set[int] = set()
    candidates: list[_Candidate] = []
    for block in blocks:
        for part in (block, *block.chained):
            for line in part.lines:
                in_block.add(id(line))
        in_block.add(id(block.headline))
        pos = pos_of.get(id(block.lines[0] if block.lines else block.headline), 0)
        ts = effective_ts.get(id(block.lines[0] if block.lines else block.headline))
        text = block.headline.text
        if block.kind in _ERROR_KINDS:
            tier = 2 if block.cascade else 0
        elif block.kind == "launcher_exit" and block.signal in ("SIGKILL", "SIGSEGV", "SIGBUS", "SIGILL") and not block.cascade:
            tier = 1
        elif (block.kind in ("launcher_exit", "child_failed") and block.signal in ("SIGKILL", "SIGSEGV", "SIGBUS", "SIGILL")
              and block.failed_rank is not None):
            # a process killed from outside (OOM killer, segfault) is where a failure starts;
            # the dropped connections on its peers are the consequence
            tier = 1
        else:
            tier = 3
        line = block.headline
        if tier == 1 and block.kind == "child_failed":
            code = f" (exit code {block.exit_code})" if block.exit_code is not None else ""
            text = f"rank {block.failed_rank} was killed by {block.signal}{code}, with no error of its own"
        if block.failed_rank is not None and tier in (1, 3):
            line = dataclasses.replace(line, rank=block.failed_rank, host=_summary_host(block.failed_host, line.host))
        candidates.append(_Candidate(tier, pos, line, text, block, ts, block.cascade_reason))

    for i, line in enumerate(lines):
        if id(line) in in_block or not _ERROR_LINE.search(line.text) or _NOT_ERROR_LINE.search(line.text):
            continue
        p = cascade_match(line.text)
        candidates.append(_Candidate(2 if p else 0, i, line, line.text, None, effective_ts.get(id(line)), p.code if p else ""))

    if not candidates:
        return _from_guard_events(lines)
    best_tier = min(c.tier for c in candidates)
    tier = [c for c in candidates if c.tier == best_tier]
    by_time = all(c.ts is not None for c in tier)
    tier.sort(key=(lambda c: (c.ts, c.pos)) if by_time else (lambda c: c.pos))
    first = tier[0]

    def later(c: _Candidate) -> bool:
        if first.tier == 1:
            return True  # the launcher reports a killed process after the fact: its peers' errors may come first
        if c.ts is not None and first.ts is not None:
            return c.ts >= first.ts
        return c.pos > first.pos

    cascade = [c for c in candidates if c is not first and (c.tier >= 2 or c.cascade) and later(c)]
    cascade.sort(key=lambda c: c.pos)
    cascade_ranks = sorted({c.line.rank for c in cascade if c.line.rank is not None and c.line.rank != first.line.rank})

    order = "timestamp" if by_time else "position in the log"
    if best_tier == 0:
        what = "the earliest error that no cascade pattern explains"
    elif best_tier == 1:
        what = "the earliest process killed from outside (no error of its own was logged)"
    elif best_tier == 2:
        what = "only cascade-type errors were found; this is the earliest of them"
    else:
        what = "no error was logged, only the launcher's summary"
    reason = f"{what}, on {_describe(first.line)}, chosen by {order}"
    if cascade:
        reason += f"; {len(cascade)} later errors"
        if cascade_ranks:
            shown = ", ".join(str(r) for r in cascade_ranks[:8]) + (", ..." if len(cascade_ranks) > 8 else "")
            reason += f" on {len(cascade_ranks)} other ranks ({shown})"
        reason += " look like its cascade"
    roots = [b for b in blocks if b.kind == "child_failed" and b.failed_rank is not None]
    own = [b for b in roots if any(e.rank == first.line.rank for e in b.exits)]
    if own and first.line.rank is not None and all(b.failed_rank != first.line.rank for b in own):
        named = sorted({b.failed_rank for b in own if b.failed_rank is not None})
        reason += (
            f"; torchelastic's 'Root Cause' for rank {first.line.rank}'s node names rank "
            f"{', '.join(map(str, named))}: the first process to exit there, not the first to fail"
        )
    elif roots and not own and first.line.rank is not None and any(b.failed_rank != first.line.rank for b in roots):
        named = sorted({b.failed_rank for b in roots if b.failed_rank is not None})
        shown = ", ".join(map(str, named[:8])) + (f" and {len(named) - 8} more" if len(named) > 8 else "")
        reason += (
            f"; torchelastic's 'Root Cause' names rank {shown}: the first process to exit on "
            f"{'its node' if len(roots) == 1 else 'each node'}, not the first to fail"
        )
    text = first.text
    if first.block is not None and first.block.kind == "python_traceback" and first.block.exception is None:
        text = first.block.lines[0].text
    return FirstFailure(
        line=first.line,
        text=text.strip(),
        reason=reason,
        block=first.block,
        cascade=_representative(cascade),
    )
