"""Records produced by log ingestion and consumed by the diagnosis engine."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from distdx.events import GuardEvent


@dataclass(frozen=True)
class LogLine:
    """One line of a log, with the launcher prefix removed and attributed to a rank/host."""

    source: str  # file path, "<stdin>", or "<text>"
    lineno: int  # 1-based line number within source
    text: str  # the line without launcher prefix, ANSI codes or progress-bar redraws
    rank: int | None = None
    host: str | None = None
    timestamp: str | None = None  # as written in the log, when there was one
    local_rank: int | None = None  # from `[default0]:`, an NCCL `[3]` device tag or a per-rank dir
    event: GuardEvent | None = field(default=None, compare=False)  # set on distdx guard lines
    rank_from: str | None = None  # how the rank was found: prefix | file | text | event | inferred


@dataclass(frozen=True)
class Frame:
    file: str
    line: int
    function: str = ""


@dataclass(frozen=True)
class ExitRecord:
    """One process exit a launcher reported (a torchelastic table entry, an mpirun/srun line)."""

    rank: int | None = None
    local_rank: int | None = None
    host: str | None = None
    pid: int | None = None
    exit_code: int | None = None
    signal: str | None = None  # e.g. "SIGKILL"
    time: str | None = None  # as written, e.g. "2024-05-01_12:00:00"
    error_file: str | None = None
    message: str = ""  # torchelastic's "traceback :" field
    root_cause: bool = False  # listed under torchelastic's "Root Cause (first observed failure)"


@dataclass(frozen=True)
class Block:
    """A multi-line unit: a Python traceback, a C++/NCCL error block, a compiler error,
    a launcher exit summary or torchelastic failure table."""

    kind: str  # python_traceback | cpp_error | nccl_error | compiler_error | launcher_exit | child_failed | error_file
    headline: LogLine  # the line that names the error (exception line, `error:` line, exit summary)
    lines: tuple[LogLine, ...]
    exception: str | None = None  # e.g. "torch.OutOfMemoryError", "RuntimeError"
    message: str = ""
    frames: tuple[Frame, ...] = ()  # innermost last, as Python prints them
    chained: tuple["Block", ...] = ()  # earlier tracebacks of a chain ("During handling ...")
    exit_code: int | None = None
    signal: str | None = None  # e.g. "SIGKILL"
    cascade: bool = False  # a consequence of a failure elsewhere (watchdog timeout, SIGABRT, ...)
    cascade_reason: str = ""  # which cascade pattern (cascade.yaml) matched, when cascade
    failed_rank: int | None = None  # for launcher summaries: the rank the summary is about
    failed_host: str | None = None
    exits: tuple[ExitRecord, ...] = ()  # for launcher summaries: the exits they list

    @property
    def rank(self) -> int | None:
        return self.headline.rank

    @property
    def host(self) -> str | None:
        return self.headline.host


@dataclass(frozen=True)
class FirstFailure:
    """The earliest real error, apart from the cascade it causes on other ranks."""

    line: LogLine
    text: str
    reason: str  # why this one was chosen, for people
    block: Block | None = None
    cascade: tuple[LogLine, ...] = ()  # later error lines judged to be consequences

    @property
    def rank(self) -> int | None:
        return self.line.rank

    @property
    def host(self) -> str | None:
        return self.line.host


@dataclass(frozen=True)
class ParsedLog:
    sources: tuple[str, ...]
    lines: tuple[LogLine, ...]  # every line for small inputs; salient lines (and their context) for large ones
    blocks: tuple[Block, ...] = ()
    first_failure: FirstFailure | None = None
    ranks: tuple[int, ...] = ()
    hosts: tuple[str, ...] = ()
    total_lines: int = 0
    total_bytes: int = 0
    complete: bool = True  # False when only salient lines were kept
    notes: tuple[str, ...] = field(default_factory=tuple)  # e.g. "replaced 3 undecodable bytes in x.log"
    events: tuple[GuardEvent, ...] = ()  # distdx guard events found in the input, in order

    @property
    def text(self) -> str:
        return "\n".join(line.text for line in self.lines)

    # The cascade verdict, decided here once for every reader of a ParsedLog (the engine only asks).

    @functools.cached_property
    def cascade_keys(self) -> frozenset[tuple[str, int]]:
        """(source, line number) of every line judged a consequence of the first failure: the
        cascade the first failure lists and the lines of every cascade block."""
        keys: set[tuple[str, int]] = set()
        if self.first_failure is not None:
            keys.update((l.source, l.lineno) for l in self.first_failure.cascade)
        for block in self.blocks:
            if block.cascade:
                keys.update((l.source, l.lineno) for l in block.lines)
        return frozenset(keys)

    @functools.cached_property
    def real_first_failure(self) -> bool:
        """A first failure that is not itself a cascade-type error (watchdog, abort, dropped peer)."""
        from distdx.logs.firstfail import cascade_match

        return self.first_failure is not None and cascade_match(self.first_failure.line.text) is None

    def is_cascade(self, line: LogLine) -> bool:
        """Whether ``line`` is a consequence of the first failure: listed as such, or, with a real
        first failure, a cascade-type line that the listing left out (it keeps a representative few).
        Asked per line, so that only lines that matter are matched against the cascade patterns."""
        if (line.source, line.lineno) in self.cascade_keys:
            return True
        if not self.real_first_failure:
            return False
        from distdx.logs.firstfail import cascade_match

        return cascade_match(line.text) is not None
