"""Streaming reader: inputs (files, directories, globs, stdin, compressed files) in, kept lines out.

The inputs and how each is opened are in ``inputs``, the salient-line search in ``grep``, error
files in ``errorfile``; this module keeps the lines. Files are read in binary chunks, never whole. Small inputs keep every line; large ones keep only
salient lines (errors, tracebacks, launcher summaries, warnings) plus a little context, found by a
byte-level pre-filter that runs over whole chunks, so the Python work is proportional to what is
kept rather than to the size of the log.
"""

from __future__ import annotations

import lzma
import os
import zlib
from collections import deque
from dataclasses import dataclass
from typing import BinaryIO

from distdx.logs.errorfile import ERROR_FILE_MAX, is_error_file_name, read_error_file
from distdx.logs.grep import GUARD_NEEDLE, GREP_NEEDLES, NEEDLES, GrepScanner, salient_starts
from distdx.logs.inputs import (
    COMPRESSED,
    ChainedReader,
    Input,
    Notes,
    Utf8Transcoder,
    looks_binary,
    open_input,
    read_head,
    utf16_encoding,
)
from distdx.logs.lines import SourceContext, guess_hosts, make_line
from distdx.logs.models import LogLine

CHUNK_BYTES = 8 << 20
FULL_LIMIT_BYTES = 8 << 20  # inputs up to this size keep every line
MAX_LINE_BYTES = 8 << 10  # longer lines keep their first and last MAX_LINE_BYTES; the middle is dropped
MAX_KEPT_LINES = 50_000  # salient lines kept from the start of a large input ...
TAIL_KEPT_LINES = 10_000  # ... and from its end, once the first budget is spent
STASH_CHUNKS = 3  # once the first budget is spent, only the last chunks are searched (at the end)


class _LongLine:
    """A line longer than the limit: its first and last ``limit`` bytes; the middle is dropped.
    The tail matters: a tqdm bar redrawn with ``\\r`` for hours is one huge line whose last
    state, or an error printed right after it, is at the end."""

    def __init__(self, start: bytes, limit: int) -> None:
        self.limit = limit
        self.head = start[:limit]
        self.tail = start[limit:][-limit:]
        self.length = len(start)

    def add(self, part: bytes) -> None:
        self.length += len(part)
        self.tail = (self.tail + part[-self.limit:])[-self.limit:]

    def bytes(self) -> bytes:
        cut = self.length - len(self.head) - len(self.tail)
        return self.head + (b" [... %d bytes cut by distdx ...] " % cut if cut > 0 else b"") + self.tail


def cap_line(text: str, limit: int) -> str:
    """The first and last ``limit`` characters of a too-long line."""
    if len(text) <= 2 * limit + 64:
        return text
    return f"{text[:limit]} [... {len(text) - 2 * limit} characters cut by distdx ...] {text[-limit:]}"


class Collector:
    """Reads inputs one after another and keeps lines within the memory budget."""

    def __init__(self, *, full: bool, notes: Notes, max_line_bytes: int = MAX_LINE_BYTES,
                 max_kept_lines: int = MAX_KEPT_LINES, tail_kept_lines: int = TAIL_KEPT_LINES,
                 chunk_bytes: int = CHUNK_BYTES) -> None:
        self.full = full
        self.notes = notes
        self.max_line = max_line_bytes
        # a small input keeps every line (it is at most FULL_LIMIT_BYTES); the budget is for large ones
        self.max_kept = max(max_kept_lines, 1_000_000) if full else max_kept_lines
        self.chunk = chunk_bytes
        self.head: list[LogLine] = []
        self.tail: deque[LogLine] = deque(maxlen=tail_kept_lines)
        self.dropped = 0
        self.read_error: str | None = None  # why the last read stopped early (corrupt data, I/O error)
        self.total_lines = 0
        self.total_bytes = 0
        self.read_ok = 0  # sources that gave at least one byte
        self.skipped_bytes = 0

    # -- keeping -------------------------------------------------------------------------------
    def _keep(self, line: LogLine) -> None:
        if len(self.head) < self.max_kept:
            self.head.append(line)
        else:
            if len(self.tail) == self.tail.maxlen:
                self.dropped += 1
            self.tail.append(line)

    def _keep_raw(self, ctx: SourceContext, lineno: int, text: str) -> None:
        """Like :meth:`_keep`, but once the first budget is spent the line is parsed only if it
        survives to the end (a log where every line is salient stays cheap)."""
        if len(self.head) < self.max_kept:
            self.head.append(make_line(ctx, lineno, text))
        else:
            if len(self.tail) == self.tail.maxlen:
                self.dropped += 1
            self.tail.append((ctx, lineno, text))  # type: ignore[arg-type]

    def lines(self) -> list[LogLine]:
        tail = [t if isinstance(t, LogLine) else make_line(*t) for t in self.tail]
        return self.head + tail

    def _decode(self, data: bytes, source: str) -> str:
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            self._bad_utf8 = True
            return data.decode("utf-8", errors="replace")

    # -- reading -------------------------------------------------------------------------------
    def read(self, fh: BinaryIO, ctx: SourceContext, first: bytes, path: str | None = None) -> None:
        """Read one source; ``first`` is its first chunk, already read to sniff it. ``path`` is
        given for plain files, which a :class:`GrepScanner` may search beside the reader."""
        self._bad_utf8 = False
        self._long_lines = 0
        guard = (GUARD_NEEDLE,) if (b'"distdx"' in first or ctx.source.endswith(".jsonl")) else ()
        needles = NEEDLES + guard
        scanner = None
        if not self.full and path and len(first) >= self.chunk and not os.environ.get("DISTDX_NO_GREP"):
            try:
                scanner = GrepScanner(path, GREP_NEEDLES + guard, fh.fileno() if hasattr(fh, "fileno") else None)
            except OSError:
                scanner = None
        self._scanner = scanner
        try:
            self._read(fh, ctx, first, needles, scanner)
        finally:
            if self._scanner is not None:
                self._scanner.close()

    def _read(self, fh: BinaryIO, ctx: SourceContext, first: bytes, needles, scanner: "GrepScanner | None") -> None:
        lineno = 0
        carry = b""
        stash: deque = deque(maxlen=STASH_CHUNKS)
        long: _LongLine | None = None  # inside an over-long line: its head and rolling tail
        chunk = first
        pos = 0  # file offset of chunk[0]
        while chunk:
            self.total_bytes += len(chunk)
            if long is not None:
                nl = chunk.find(b"\n")
                long.add(chunk if nl < 0 else chunk[:nl])
                if nl < 0:
                    pos += len(chunk)
                    chunk = self._next(fh, ctx)
                    continue
                lineno = self._long_line(ctx, long, lineno, needles)
                long = None
                chunk = chunk[nl + 1:]
                pos += nl + 1
            begin = 0
            if carry:
                # finish the line the previous chunk ended in, without copying the whole chunk
                nl = chunk.find(b"\n")
                if nl < 0:
                    carry += chunk
                    if len(carry) > self.max_line:
                        long = _LongLine(carry, self.max_line)
                        carry = b""
                    pos += len(chunk)
                    chunk = self._next(fh, ctx)
                    continue
                lineno = self._body(ctx, carry + chunk[: nl + 1], len(carry) + nl + 1, lineno, needles)
                carry = b""
                begin = nl + 1
            end = chunk.rfind(b"\n") + 1
            if end > begin and len(self.head) >= self.max_kept:
                # the first budget is spent: what matters now is the end of the log, so keep
                # only the last chunks (searched when the source ends) and count lines
                if scanner is not None:
                    scanner.close()
                    scanner = self._scanner = None
                if len(stash) == stash.maxlen:
                    self.skipped_bytes += stash[0][2] - stash[0][1]
                stash.append((chunk, begin, end, lineno))
                lineno += chunk.count(b"\n", begin, end)
            elif end > begin:
                found = scanner.hits(pos + begin, pos + end) if scanner else None
                hits = None
                if found is not None:
                    # trust grep only while its offsets point at the needles it names (a grep
                    # that cannot read the file, or prints another format, is dropped)
                    hits = [(off + begin, after) for off, after, needle in found]
                    if scanner.failed or any(chunk[o:o + len(n)] != n for o, (_, _, n) in zip((h[0] for h in hits), found)):
                        hits = None
                        scanner.close()
                        scanner = self._scanner = None
                lineno = self._body(ctx, chunk, end, lineno, needles, hits, begin)
            carry = chunk[max(end, begin):]
            if len(carry) > self.max_line:
                long = _LongLine(carry, self.max_line)
                carry = b""
            pos += len(chunk)
            chunk = self._next(fh, ctx)
        if long is not None:
            lineno = self._long_line(ctx, long, lineno, needles)
        self._search_stash(ctx, stash, needles)
        if carry:
            lineno = self._body(ctx, carry + b"\n", len(carry) + 1, lineno, needles)
        self.total_lines += lineno
        if self.skipped_bytes:
            self.notes.add(
                f"more salient lines than distdx keeps; {self.skipped_bytes >> 20} MiB from the middle were not searched",
                ctx.source,
            )
            self.skipped_bytes = 0
        if self._bad_utf8:
            self.notes.add("invalid UTF-8 replaced with U+FFFD", ctx.source)
        if self._long_lines:
            self.notes.add(
                f"{self._long_lines} line(s) longer than {self.max_line // 1024} KiB: kept the first and last "
                f"{self.max_line // 1024} KiB of each", ctx.source)

    def _long_line(self, ctx: SourceContext, long: "_LongLine", lineno: int, needles) -> int:
        self._long_lines += 1
        data = long.bytes() + b"\n"
        return self._body(ctx, data, len(data), lineno, needles)

    def _search_stash(self, ctx: SourceContext, stash: deque, needles) -> None:
        """Search the stashed last chunks, newest first, until the tail budget is full."""
        pieces = []
        got = 0
        need = self.tail.maxlen or 0
        saved = self.tail
        while stash:
            data, begin, end, before = stash.pop()
            if got >= need:
                self.skipped_bytes += end - begin
                continue
            self.tail = deque(maxlen=need)
            try:
                self._body(ctx, data, end, before, needles, None, begin)
                pieces.append(self.tail)
                got += len(self.tail)
            finally:
                self.tail = saved
        for piece in reversed(pieces):
            for item in piece:
                if len(self.tail) == self.tail.maxlen:
                    self.dropped += 1
                self.tail.append(item)

    def _next(self, fh: BinaryIO, ctx: SourceContext) -> bytes:
        self.read_error = None
        try:
            return fh.read(self.chunk)
        except (OSError, EOFError, zlib.error, lzma.LZMAError) as e:  # bz2 reports bad data as OSError
            self.read_error = str(e) or type(e).__name__
            self.notes.add(f"reading stopped early ({type(e).__name__}: {e}); kept what was read", ctx.source)
            return b""

    def _body(self, ctx: SourceContext, buf: bytes, end: int, lineno: int, needles, hits=None, begin: int = 0) -> int:
        """Process the complete lines in ``buf[begin:end]``; return the line count so far."""
        if self.full:
            text = self._decode(buf[begin:end], ctx.source)
            parts = text.split("\n")
            parts.pop()  # after the final newline
            for part in parts:
                lineno += 1
                if len(part) > 2 * self.max_line + 64:
                    part = cap_line(part, self.max_line)
                    self._long_lines += 1
                self._keep_raw(ctx, lineno, part)
            return lineno
        starts = salient_starts(buf, end, needles, hits=hits, begin=begin)
        pos = begin
        for start in starts:
            lineno += buf.count(b"\n", pos, start)
            pos = start
            stop = buf.find(b"\n", start, end)
            text = self._decode(buf[start:stop], ctx.source)
            if len(text) > 2 * self.max_line + 64:
                text = cap_line(text, self.max_line)
                self._long_lines += 1
            self._keep_raw(ctx, lineno + 1, text)
        return lineno + buf.count(b"\n", pos, end)


def sample_lines(first: bytes, limit: int = 2000) -> list[str]:
    return first[: 256 << 10].decode("utf-8", errors="replace").split("\n")[:limit]


@dataclass
class InputsRead:
    """What :func:`read_inputs` got: the sources read, one (code, source, what) for each input that gave
    nothing, and the torchelastic error files among the sources."""

    sources: list[str]
    problems: list[tuple[str, str, str]]
    error_file_sources: set[str]


def read_inputs(items: list[Input], collector: Collector, notes: Notes, *, stdin_head: bytes = b"",
                stdin_stream: BinaryIO | None = None, stdin: BinaryIO | None = None) -> InputsRead:
    """Read every input into ``collector``: open it (decompressing, transcoding UTF-16), skip what is
    empty, binary or unreadable with a note and a problem, and read torchelastic error files whole."""
    error_file_sources: set[str] = set()
    problems: list[tuple[str, str, str]] = []  # (code, source, what)
    sources: list[str] = []
    for inp in items:
        try:
            fh = ChainedReader(stdin_head, stdin_stream) if inp.path is None else open_input(inp, stdin)
        except FileNotFoundError:
            notes.add("vanished before it could be read (deleted?)", inp.name)
            problems.append(("DX-LOGS-004", inp.name, "vanished before it could be read"))
            continue
        except PermissionError:
            notes.add("not readable (permission denied); skipped", inp.name)
            problems.append(("DX-LOGS-006", inp.name, "is not readable (permission denied)"))
            continue
        except OSError as e:
            notes.add(f"cannot be opened ({e.strerror or e}); skipped", inp.name)
            problems.append(("DX-LOGS-006", inp.name, f"cannot be opened ({e.strerror or e})"))
            continue
        try:
            first = collector._next(fh, SourceContext(inp.name))
            if not first:
                if getattr(fh, "cut", False):  # a compressed file cut before its first complete block
                    problems.append(("DX-LOGS-006", inp.name,
                                     "could not be decompressed: it was cut short before its first complete block"))
                    continue
                if collector.read_error:  # corrupt compressed data, an I/O error: not an empty file
                    problems.append(("DX-LOGS-006", inp.name, f"could not be read ({collector.read_error})"))
                    continue
                notes.add("empty", inp.name)
                problems.append(("DX-LOGS-007", inp.name, "is empty"))
                continue
            encoding = utf16_encoding(first)
            if encoding is not None:
                notes.add(f"{encoding.upper()} text, read as UTF-8", inp.name)
                fh = Utf8Transcoder(first, fh, encoding)
                first = fh.read(len(first))
                transcoded = True
            else:
                transcoded = False
            if looks_binary(first):
                notes.add("looks binary (not a text log); skipped", inp.name)
                problems.append(("DX-LOGS-008", inp.name, "looks binary, not like a text log"))
                collector.total_bytes += len(first)
                continue
            ctx = _context(inp, first)
            sources.append(inp.name)
            collector.read_ok += 1
            if is_error_file_name(inp.path) and first.lstrip().startswith(b"{"):
                data = first + read_head(fh, ERROR_FILE_MAX)
                lines = read_error_file(inp.name, ctx, data) if len(data) < ERROR_FILE_MAX else None
                if lines is not None:
                    error_file_sources.add(inp.name)
                    collector.total_bytes += len(data)
                    collector.total_lines += data.count(b"\n") + 1
                    for line in lines:
                        collector._keep(line)
                    continue
                fh = ChainedReader(data[len(first):], fh)
            plain = (inp.path is not None and not transcoded
                     and not inp.path.lower().endswith(COMPRESSED + (".json",)))
            collector.read(fh, ctx, first, inp.path if plain else None)
        finally:
            if inp.path is not None:
                try:
                    fh.close()
                except OSError:
                    pass
    return InputsRead(sources, problems, error_file_sources)


def _context(inp: Input, first: bytes) -> SourceContext:
    return SourceContext(inp.name, rank=inp.rank, local_rank=inp.local_rank, hosts=guess_hosts(sample_lines(first)))
