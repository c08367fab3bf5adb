"""The two entry points: :func:`read_logs` for inputs on disk or stdin, :func:`parse_text` for a string."""

from __future__ import annotations

import dataclasses
import io
import re
from typing import BinaryIO, Sequence

from distdx.errors import DistdxError
from distdx.logs.blocks import build_blocks
from distdx.logs.firstfail import classify_block, find_first_failure
from distdx.logs.lines import SourceContext, guess_hosts
from distdx.logs.models import Block, LogLine, ParsedLog
from distdx.logs.inputs import COMPRESSED, COMPRESSED_GUESS, Input, Notes, expand_inputs, read_head
from distdx.logs.reader import (
    CHUNK_BYTES,
    FULL_LIMIT_BYTES,
    MAX_KEPT_LINES,
    MAX_LINE_BYTES,
    TAIL_KEPT_LINES,
    Collector,
    read_inputs,
    sample_lines,
)




def read_logs(
    inputs: Sequence[str],
    *,
    stdin: BinaryIO | None = None,
    full_limit_bytes: int = FULL_LIMIT_BYTES,
    max_line_bytes: int = MAX_LINE_BYTES,
    max_kept_lines: int = MAX_KEPT_LINES,
    tail_kept_lines: int = TAIL_KEPT_LINES,
    chunk_bytes: int = CHUNK_BYTES,
) -> ParsedLog:
    """Read logs from files, directories (recursively), globs and ``-`` (stdin; .gz/.bz2/.xz too).

    Inputs whose total size is at most ``full_limit_bytes`` keep every line; larger ones keep
    salient lines and their context (``ParsedLog.complete`` is then False). Raises
    :class:`DistdxError` when nothing readable is left; smaller problems become ``notes``.
    """
    notes = Notes()
    items = expand_inputs(inputs, notes)
    stdin_head = b""
    stdin_stream: BinaryIO | None = None
    known = 0
    for inp in items:
        if inp.path is None:
            stdin_stream = stdin if stdin is not None else _default_stdin()
            stdin_head = read_head(stdin_stream, full_limit_bytes + 1)
            known += len(stdin_head)
        elif inp.size:
            known += inp.size * (COMPRESSED_GUESS if inp.path.lower().endswith(COMPRESSED) else 1)
    full = known <= full_limit_bytes
    collector = Collector(
        full=full, notes=notes, max_line_bytes=max_line_bytes, max_kept_lines=max_kept_lines,
        tail_kept_lines=tail_kept_lines, chunk_bytes=chunk_bytes,
    )
    read = read_inputs(items, collector, notes, stdin_head=stdin_head, stdin_stream=stdin_stream, stdin=stdin)
    sources, problems, error_file_sources = read.sources, read.problems, read.error_file_sources
    if not sources:
        _raise_nothing_read(items, problems)
    if collector.dropped:
        notes.add(
            f"more salient lines than the {max_kept_lines + tail_kept_lines} kept; {collector.dropped} from the middle were dropped",
            "input",
        )
    return _assemble(
        collector.lines(), tuple(sources), notes.render(), collector.total_lines, collector.total_bytes,
        complete=full and not collector.dropped, error_file_sources=error_file_sources,
    )


def parse_text(text: str, source: str = "<text>") -> ParsedLog:
    """Parse a log held in a string (for instance the text of an issue); every line is kept."""
    if not isinstance(text, str):
        raise DistdxError("DX-LOGS-009", "parse_text expects a str", hint="decode bytes first, or use read_logs")
    data = text.encode("utf-8", errors="replace")
    notes = Notes()
    collector = Collector(full=True, notes=notes)
    if data.strip():
        first = data[: 256 << 10]
        ctx = SourceContext(source, hosts=guess_hosts(sample_lines(first)))
        collector.read(io.BytesIO(data[len(first):]), ctx, first)
    return _assemble(collector.lines(), (source,), notes.render(), collector.total_lines, len(data), complete=True)


def _default_stdin() -> BinaryIO:
    import sys

    return sys.stdin.buffer


def _raise_nothing_read(items: list[Input], problems: list[tuple[str, str, str]]) -> None:
    if len(problems) == 1:
        code, name, what = problems[0]
    else:
        codes = {p[0] for p in problems}
        code = codes.pop() if len(codes) == 1 else "DX-LOGS-010"
        name = f"all {len(items)} inputs"
        what = problems[0][2] if len(codes) <= 1 and problems else "are empty, binary or unreadable"
    hints = {
        "DX-LOGS-004": "check the path; the file may have been rotated or cleaned up",
        "DX-LOGS-006": "check the file's permissions (ls -l) or run as a user who can read it",
        "DX-LOGS-007": "the job may have written its output elsewhere: check the launcher's --log_dir/--tee options or the scheduler's output file",
        "DX-LOGS-008": "point distdx at the text logs (stdout/stderr of the job), not at checkpoints, core dumps or archives",
    }
    hint = hints.get(code, "pass the job's text logs: files, a directory, a glob, or - for stdin")
    if code == "DX-LOGS-006" and "permission" not in what:  # damaged data, not access
        hint = ("the file is damaged or not in the format its name says: test it (gzip -t, bzip2 -t, xz -t), "
                "or pass the uncompressed log")
    raise DistdxError(
        code,
        f"no log to read: {name} {what}",
        why="distdx needs the text output of the failed job",
        hint=hint,
    )


_DS_RANK_MAPPING = re.compile(r"global_rank_mapping=.*")
_MAPPING_ENTRY = re.compile(r"'([^']+)': \[([\d, ]*)\]")
_OOM_DEVICE = re.compile(r"GPU (\d+) has a total capacity")


def _rank_map(lines: list[LogLine]) -> dict[tuple[str, int], int]:
    """(host, local rank) -> global rank, from DeepSpeed's ``global_rank_mapping=`` line."""
    mapping: dict[tuple[str, int], int] = {}
    for line in lines:
        if "global_rank_mapping=" in line.text and _DS_RANK_MAPPING.search(line.text):
            for host, ranks in _MAPPING_ENTRY.findall(line.text):
                for local, rank in enumerate(int(r) for r in ranks.split(",") if r.strip()):
                    mapping[(host, local)] = rank
    return mapping


def _resolve_ranks(lines: list[LogLine]) -> list[LogLine]:
    """Give a global rank to lines that only know their host and local rank."""
    if not any(line.rank is None and line.local_rank is not None and line.host for line in lines):
        return lines
    mapping = _rank_map(lines)
    if not mapping:
        return lines
    out = []
    for line in lines:
        if line.rank is None and line.local_rank is not None and line.host:
            rank = mapping.get((line.host, line.local_rank))
            if rank is not None:
                line = dataclasses.replace(line, rank=rank, rank_from="inferred")
        out.append(line)
    return out


def _rank_from_device(block: Block, lines: list[LogLine]) -> Block:
    """A traceback on a host-prefixed stream with no rank: a CUDA OOM names its GPU, which the
    launcher's rank mapping turns into a global rank."""
    if block.rank is not None or not block.headline.host or block.kind not in ("python_traceback", "error_file"):
        return block
    m = _OOM_DEVICE.search(block.message)
    if not m:
        return block
    rank = _rank_map(lines).get((block.headline.host, int(m.group(1))))
    if rank is None:
        return block
    headline = dataclasses.replace(block.headline, rank=rank, local_rank=int(m.group(1)), rank_from="inferred")
    return dataclasses.replace(block, headline=headline)


def _assemble(
    lines: list[LogLine],
    sources: tuple[str, ...],
    notes: tuple[str, ...],
    total_lines: int,
    total_bytes: int,
    *,
    complete: bool,
    error_file_sources: set[str] | None = None,
) -> ParsedLog:
    lines = _resolve_ranks(lines)
    blocks: list[Block] = build_blocks(lines)
    if error_file_sources:
        blocks = [
            dataclasses.replace(b, kind="error_file") if b.headline.source in error_file_sources and b.kind == "python_traceback" else b
            for b in blocks
        ]
    blocks = [classify_block(_rank_from_device(b, lines)) for b in blocks]
    first = find_first_failure(lines, blocks)
    ranks = sorted({line.rank for line in lines if line.rank is not None})
    hosts = sorted({line.host for line in lines if line.host})
    events = tuple(line.event for line in lines if line.event is not None)
    return ParsedLog(
        sources=sources,
        lines=tuple(lines),
        blocks=tuple(blocks),
        first_failure=first,
        ranks=tuple(ranks),
        hosts=tuple(hosts),
        total_lines=total_lines,
        total_bytes=total_bytes,
        complete=complete,
        notes=notes,
        events=events,
    )
