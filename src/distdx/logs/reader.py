"""Streaming reader: inputs (files, directories, globs, stdin, compressed files) in, kept lines out.

Files are read in binary chunks, never whole. Small inputs keep every line; large ones keep only
salient lines (errors, tracebacks, launcher summaries, warnings) plus a little context, found by a
byte-level pre-filter that runs over whole chunks, so the Python work is proportional to what is
kept rather than to the size of the log.
"""

from __future__ import annotations

import bz2
import glob as globlib
import gzip
import lzma
import os
import re
import stat
import sys
import zlib
from collections import deque
from dataclasses import dataclass
from typing import BinaryIO, Iterable, Sequence

from distdx import jsonio
from distdx.errors import DistdxError
from distdx.logs.lines import SourceContext, guess_hosts, make_line
from distdx.logs.models import LogLine

CHUNK_BYTES = 8 << 20
FULL_LIMIT_BYTES = 8 << 20  # inputs up to this size keep every line
MAX_LINE_BYTES = 8 << 10  # longer lines keep their first and last MAX_LINE_BYTES; the middle is dropped
MAX_KEPT_LINES = 50_000  # salient lines kept from the start of a large input ...
TAIL_KEPT_LINES = 10_000  # ... and from its end, once the first budget is spent
STASH_CHUNKS = 3  # once the first budget is spent, only the last chunks are searched (at the end)
MAX_FILES = 100_000
COMPRESSED = (".gz", ".bz2", ".xz", ".lzma")  # read through a decompressor, by the name's suffix
COMPRESSED_GUESS = 6  # a compressed file is assumed to expand this much when choosing the mode

# Salient-line needles and how many following lines to keep with each. In Python each needle
# is one C-speed pass of bytes.find, so that list is short and uses shared suffixes ("rror"
# matches Error, error, RuntimeError...). grep (see GrepScanner) searches all needles in one
# pass but skips ahead by the shortest needle's length, so it gets longer spellings of the same
# needles instead; both find the same lines.
_NEEDLE_TABLE: tuple[tuple[bytes, int, tuple[bytes, ...]], ...] = (
    (b"rror", 3, (b"Error", b"error")),  # RuntimeError, NCCL error, error_file, CUDA error
    (b"RROR", 3, (b"ERROR",)),  # [ERROR], ERROR:
    (b"Traceback", 60, (b"Traceback",)),  # keep the frames, printed right after
    (b"xception", 3, (b"xception",)),  # Exception raised from ..., SignalException
    (b"WARN", 2, (b"WARNING", b"NCCL WARN")),
    (b"SIG", 2, (b"signal", b"Signal", b"SIGKILL", b"SIGTERM", b"SIGABRT", b"SIGSEGV", b"SIGBUS", b"SIGINT")),
    (b"illed", 2, (b"Killed", b"killed")),
    (b"ailed", 2, (b"failed", b"Failed")),  # Some NCCL operations have failed or timed out
    (b"FAIL", 3, (b"FAILED",)),  # ninja, torchelastic's title
    (b"imeout", 2, (b"timeout", b"Timeout")),  # Watchdog caught collective operation timeout
    (b"fault", 2, (b"Segmentation", b"core dumped")),
    (b"Abort", 2, (b"Aborted",)),
)
NEEDLES: tuple[tuple[bytes, int], ...] = tuple((short, after) for short, after, _ in _NEEDLE_TABLE)
GREP_NEEDLES: tuple[tuple[bytes, int], ...] = tuple((n, after) for _, after, long in _NEEDLE_TABLE for n in long)
_GUARD_NEEDLE = (b'"distdx"', 0)
_BORDER = b"\n======"


@dataclass
class Input:
    """One thing to read."""

    name: str  # as shown to people
    path: str | None  # None for stdin
    size: int | None
    rank: int | None = None
    local_rank: int | None = None


class Notes:
    """Notes about the input, grouped so 10,000 files with the same problem make one note."""

    def __init__(self) -> None:
        self._groups: dict[str, list[str]] = {}

    def add(self, kind: str, source: str) -> None:
        self._groups.setdefault(kind, []).append(source)

    def render(self) -> tuple[str, ...]:
        out = []
        for kind, sources in self._groups.items():
            if len(sources) == 1:
                out.append(f"{sources[0]}: {kind}")
            else:
                sample = ", ".join(sources[:3])
                out.append(f"{len(sources)} inputs: {kind} (e.g. {sample})")
        return tuple(out)


_RANK_IN_NAME = (
    re.compile(r"(?:^|[^a-z])rank[_\-.]?(\d{1,6})(?!\d)", re.IGNORECASE),
    re.compile(r"\.(\d{1,6})\.(?:log|txt|out|err|stdout|stderr)$"),
)
# torchelastic's log dir: <run>/attempt_<n>/<local_rank>/{error.json,stdout.log,stderr.log}
_ELASTIC_DIR = re.compile(r"attempt_\d+[\\/](\d{1,6})[\\/][^\\/]+$")


def rank_from_path(path: str) -> tuple[int | None, int | None]:
    """(rank, local_rank) that a per-rank file name or torchelastic directory gives."""
    m = _ELASTIC_DIR.search(path)
    if m:
        return None, int(m.group(1))
    base = os.path.basename(path)
    for rx in _RANK_IN_NAME:
        m = rx.search(base)
        if m:
            return int(m.group(1)), None
    return None, None


def _natural_key(path: str) -> list:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", path)]


def _special_kind(path: str) -> str | None:
    """'FIFO', 'socket' or 'device' when ``path`` is one (reading it could block or never end)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if stat.S_ISFIFO(mode):
        return "FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return None


def expand_inputs(inputs: Sequence[str], notes: Notes) -> list[Input]:
    """Files, directories (recursive), globs and ``-`` to a list of :class:`Input`."""
    if not inputs:
        raise DistdxError(
            "DX-LOGS-001", "no log given", hint="pass a file, a directory, a glob, or - to read standard input"
        )
    out: list[Input] = []
    seen: set[str] = set()

    def add(path: str) -> None:
        real = os.path.realpath(path)
        if real in seen:
            return
        seen.add(real)
        try:
            size = os.stat(path).st_size
        except OSError:
            size = None
        rank, local_rank = rank_from_path(path)
        out.append(Input(path, path, size, rank, local_rank))

    if sum(1 for item in inputs if item == "-") > 1:
        raise DistdxError("DX-LOGS-012", "standard input (-) given more than once",
                          why="standard input can be read only once", hint="pass - once, or save it to a file first")
    for item in inputs:
        if item == "-":
            out.append(Input("<stdin>", None, None))
            continue
        kind = _special_kind(item)
        if kind:
            raise DistdxError(
                "DX-LOGS-011", f"{item} is a {kind}, not a log file",
                why="reading it could block forever or never end",
                hint=f"save what it carries to a file first, or pipe it in: cat {item} | distdx diagnose -",
            )
        if os.path.isdir(item):
            found = []
            for root, dirs, files in os.walk(item, onerror=lambda e: notes.add(f"cannot list directory ({e.strerror})", e.filename or item)):
                dirs[:] = sorted((d for d in dirs if not d.startswith(".") and d != "__pycache__"), key=_natural_key)
                # regular files only: a FIFO or socket in a log directory would block the read
                found.extend(p for p in (os.path.join(root, f) for f in files if not f.startswith(".")) if os.path.isfile(p))
            if not found:
                raise DistdxError(
                    "DX-LOGS-002",
                    f"directory {item} holds no files",
                    why="distdx reads every file under a directory, recursively; this one is empty",
                    hint="point at the directory that holds the job's logs",
                )
            for path in sorted(found, key=_natural_key):
                add(path)
        elif os.path.exists(item):
            add(item)
        elif any(c in item for c in "*?["):
            try:
                matches = globlib.glob(item, recursive=True)
            except (re.error, ValueError) as e:  # malformed patterns raise on some Pythons
                raise DistdxError("DX-LOGS-003", f"bad glob pattern {item!r}", why=str(e), hint="quote the pattern and check its brackets") from None
            files = [m for m in matches if os.path.isfile(m)]
            if not files:
                raise DistdxError(
                    "DX-LOGS-003",
                    f"no file matches {item!r}",
                    why="the pattern matched nothing" + (" but directories" if matches else ""),
                    hint="check the pattern; use ** with quotes for recursive matches, e.g. 'logs/**/*.log'",
                )
            for path in sorted(files, key=_natural_key):
                add(path)
        else:
            raise DistdxError(
                "DX-LOGS-004",
                f"no such file or directory: {item}",
                hint="check the path; pass - to read the log from standard input",
            )
        if len(out) > MAX_FILES:
            raise DistdxError(
                "DX-LOGS-005",
                f"more than {MAX_FILES} files to read",
                why="a log directory this large is most likely not the job's logs",
                hint="point at the job's log directory or use a glob such as 'logs/*.log'",
            )
    return out


class _Decompressing:
    """A compressed file read as a stream, in bounded memory, that knows whether it ended where its
    format says it ends: at the end of a truncated file (a log copied while it was written, a
    download cut short) it raises EOFError after everything that could be decompressed, so the
    reader keeps that and says the file was cut. (gzip.open returns a cut file's prefix silently.)"""

    CHUNK = 1 << 16

    def __init__(self, path: str, factory) -> None:  # noqa: ANN001 - a decompressor class or factory
        self._raw = open(path, "rb")
        self._factory = factory
        self._decomp = factory()
        self._feed = b""  # input left over from the previous member
        self._done = False
        self.cut = False  # the file ended before its format's end marker
        self._reported = False

    def _input(self) -> bytes:
        d = self._decomp
        if self._feed:
            data, self._feed = self._feed, b""
            return data
        if hasattr(d, "unconsumed_tail"):  # zlib keeps the input it did not use yet
            return d.unconsumed_tail or self._raw.read(self.CHUNK)
        return self._raw.read(self.CHUNK) if d.needs_input else b""  # bz2/lzma hold it inside

    def read(self, size: int = -1) -> bytes:
        want = self.CHUNK * 16 if size is None or size < 0 else size
        out = bytearray()
        while len(out) < want and not self._done:
            d = self._decomp
            if d.eof:  # the end of one member; another may follow (concatenated gzip)
                rest = d.unused_data or self._raw.read(self.CHUNK)
                if not rest:
                    self._done = True
                    break
                self._decomp, self._feed = self._factory(), rest
                continue
            data = self._input()
            if not data and (hasattr(d, "unconsumed_tail") or d.needs_input):
                self._done = self.cut = True  # no input left and no end marker seen
                break
            out += d.decompress(data, want - len(out))
        if not out and self.cut and not self._reported:  # once, after the data read before the cut
            self._reported = True
            raise EOFError("the compressed file ends before its end marker: it was cut short")
        return bytes(out)

    def close(self) -> None:
        self._raw.close()


def _open(inp: Input, stdin: BinaryIO | None) -> BinaryIO:
    if inp.path is None:
        return stdin if stdin is not None else sys.stdin.buffer
    lower = inp.path.lower()
    if lower.endswith(".gz"):
        return _Decompressing(inp.path, lambda: zlib.decompressobj(16 + zlib.MAX_WBITS))  # type: ignore[return-value]
    if lower.endswith(".bz2"):
        return _Decompressing(inp.path, bz2.BZ2Decompressor)  # type: ignore[return-value]
    if lower.endswith((".xz", ".lzma")):
        return _Decompressing(inp.path, lzma.LZMADecompressor)  # type: ignore[return-value]
    return open(inp.path, "rb", buffering=0)


def looks_binary(head: bytes) -> bool:
    """NUL bytes or mostly non-text bytes in the first kilobytes: not a log."""
    sample = head[:8192]
    if not sample:
        return False
    if b"\x00" in sample:
        return True
    text = sum(1 for b in sample if b >= 32 or b in (9, 10, 13, 27))
    return text / len(sample) < 0.7


def utf16_encoding(head: bytes) -> str | None:
    """'utf-16' when the stream is UTF-16 text (a BOM, or ASCII with every other byte NUL, as
    PowerShell's `>` writes logs on Windows); None otherwise."""
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "utf-16"
    sample = head[:4096]
    if len(sample) >= 64:
        odd, even = sample[1::2], sample[0::2]
        if odd.count(0) > 0.9 * len(odd) and even.count(0) < 0.1 * len(even):
            return "utf-16-le"
        if even.count(0) > 0.9 * len(even) and odd.count(0) < 0.1 * len(odd):
            return "utf-16-be"
    return None


class Utf8Transcoder:
    """A binary stream of UTF-16 text read back as UTF-8, incrementally (bounded memory)."""

    def __init__(self, head: bytes, rest: BinaryIO, encoding: str) -> None:
        import codecs

        self._decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
        self._pending = self._decoder.decode(head).encode("utf-8")
        self._rest = rest

    def read(self, n: int) -> bytes:
        while len(self._pending) < n:
            raw = self._rest.read(max(n, 1 << 16))
            if not raw:
                self._pending += self._decoder.decode(b"", final=True).encode("utf-8")
                break
            self._pending += self._decoder.decode(raw).encode("utf-8")
        out, self._pending = self._pending[:n], self._pending[n:]
        return out

    def close(self) -> None:
        self._rest.close()


class _ChainedReader:
    """A prefix already read (to peek) followed by the rest of a stream."""

    def __init__(self, head: bytes, rest: BinaryIO) -> None:
        self._head = head
        self._rest = rest

    def read(self, n: int) -> bytes:
        if self._head:
            out, self._head = self._head[:n], self._head[n:]
            return out
        return self._rest.read(n)

    def close(self) -> None:
        pass


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
        guard = (_GUARD_NEEDLE,) if (b'"distdx"' in first or ctx.source.endswith(".jsonl")) else ()
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


def needle_hits(buf: bytes, end: int, needles: Iterable[tuple[bytes, int]], begin: int = 0) -> list[tuple[int, int]]:
    """(offset, lines of context after) of every needle in ``buf[begin:end]``, one pass per needle."""
    hits = []
    find = buf.find
    for needle, after in needles:
        i = find(needle, begin, end)
        while i >= 0:
            hits.append((i, after))
            stop = find(b"\n", i, end) + 1
            i = find(needle, stop, end) if stop else -1
    return hits


def salient_starts(buf: bytes, end: int, needles: Iterable[tuple[bytes, int]], before: int = 1,
                   hits: list[tuple[int, int]] | None = None, begin: int = 0) -> list[int]:
    """Offsets of the starts of salient lines in ``buf[:end]`` and their context lines, sorted.

    ``hits`` are needle offsets found beforehand (by :class:`GrepScanner`); without them the
    needles are searched here."""
    after_of: dict[int, int] = {}
    find, rfind = buf.find, buf.rfind
    for i, after in (hits if hits is not None else needle_hits(buf, end, needles, begin)):
        start = max(begin, rfind(b"\n", begin, i) + 1)
        if after_of.get(start, -1) < after:
            after_of[start] = after
    if not after_of:
        return []
    keep: set[int] = set()
    for start, after in after_of.items():
        keep.add(start)
        s = start
        for _ in range(before):
            if s <= begin:
                break
            s = max(begin, rfind(b"\n", begin, s - 1) + 1)
            keep.add(s)
        stop = find(b"\n", start, end) + 1
        if after and b"ChildFailedError" in buf[start:stop]:
            # keep torchelastic's whole failure table: up to its closing border
            first = find(_BORDER, stop - 1, end)
            closing = find(_BORDER, first + 1, min(end, stop + (512 << 10))) if first >= 0 else -1
            limit = closing + 1 if closing >= 0 else min(end, stop + (64 << 10))
            s = stop
            while 0 < s < limit:
                keep.add(s)
                s = find(b"\n", s, end) + 1
                if s >= end:
                    break
            continue
        s = stop
        for _ in range(after):
            if s <= 0 or s >= end:
                break
            keep.add(s)
            s = find(b"\n", s, end) + 1
    return sorted(keep)


class GrepScanner:
    """Needle offsets from ``grep -F`` running beside the reader on the other core.

    CPython has no multi-pattern search: each needle is one pass of ``bytes.find`` (about
    1.5 GB/s), so a dozen needles cap the reader near 100 MB/s. ``grep -F`` matches all of them
    in one pass (Aho-Corasick/Commentz-Walter) while Python counts lines and decodes what it
    keeps. Used for uncompressed files when a grep is on PATH; the result is the same either way
    (tests check both); set DISTDX_NO_GREP=1 to turn it off.
    """

    def __init__(self, path: str, needles: Sequence[tuple[bytes, int]], fileno: int | None = None) -> None:
        import shutil
        import subprocess
        import tempfile

        grep = shutil.which("grep")
        if not grep:
            raise OSError("grep not found")
        self._after = {n: a for n, a in needles}
        self._pat = tempfile.NamedTemporaryFile("wb", prefix="distdx-needles-", delete=False)
        self._pat.write(b"\n".join(n for n, _ in needles) + b"\n")
        self._pat.close()
        env = dict(os.environ, LC_ALL="C")
        # grep reads the very file the reader has open (so a file deleted meanwhile is still
        # the same file): a second descriptor with its own offset, through /proc on Linux
        stdin_fd = None
        if fileno is not None:
            try:
                stdin_fd = os.open(f"/proc/self/fd/{fileno}", os.O_RDONLY)
            except OSError:
                stdin_fd = None
        args = [grep, "-a", "-b", "-o", "-F", "-f", self._pat.name]
        if stdin_fd is None:
            args += ["--", path]
        try:
            self._proc = subprocess.Popen(
                args, stdin=stdin_fd if stdin_fd is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, bufsize=1 << 20,
            )
        finally:
            if stdin_fd is not None:
                os.close(stdin_fd)
        self._pending: tuple[int, int, bytes] | None = None
        self._eof = False
        self.failed = False  # grep stopped with an error: the caller searches itself

    def hits(self, base: int, limit: int) -> list[tuple[int, int, bytes]]:
        """Hits with file offset in [base, limit): (offset relative to ``base``, lines of context
        after, the needle grep says is there)."""
        out = []
        if self._pending is not None:
            off, after, needle = self._pending
            if off >= limit:
                return out
            self._pending = None
            if off >= base:
                out.append((off - base, after, needle))
        readline = self._proc.stdout.readline  # type: ignore[union-attr]
        while not self._eof:
            rec = readline(4096)
            if not rec:
                self._eof = True
                if self._proc.wait(timeout=60) not in (0, 1):
                    self.failed = True
                break
            colon = rec.find(b":")
            if colon <= 0:
                continue
            try:
                off = int(rec[:colon])
            except ValueError:
                continue
            needle = rec[colon + 1:].rstrip(b"\n")
            after = self._after.get(needle, 2)
            if off >= limit:
                self._pending = (off, after, needle)
                break
            if off >= base:
                out.append((off - base, after, needle))
        return out

    def close(self) -> None:
        try:
            self._proc.kill()
        except OSError:
            pass
        self._proc.wait(timeout=10)
        if self._proc.stdout:
            self._proc.stdout.close()
        try:
            os.unlink(self._pat.name)
        except OSError:
            pass



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


def sample_lines(first: bytes, limit: int = 2000) -> list[str]:
    return first[: 256 << 10].decode("utf-8", errors="replace").split("\n")[:limit]


def is_error_file_name(path: str | None) -> bool:
    return bool(path) and path.lower().endswith(".json")


def read_head(fh: BinaryIO, n: int) -> bytes:
    """Read up to ``n`` bytes (a stream may return fewer per call)."""
    parts = []
    got = 0
    while got < n:
        part = fh.read(n - got)
        if not part:
            break
        parts.append(part)
        got += len(part)
    return b"".join(parts)


__all__ = [
    "CHUNK_BYTES",
    "Collector",
    "FULL_LIMIT_BYTES",
    "Input",
    "Notes",
    "expand_inputs",
    "looks_binary",
    "utf16_encoding",
    "Utf8Transcoder",
    "rank_from_path",
    "read_error_file",
    "read_head",
    "salient_starts",
    "sample_lines",
]


_ERROR_FILE_MAX = 16 << 20  # a torchelastic error file larger than this is read as a log


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
            fh = _ChainedReader(stdin_head, stdin_stream) if inp.path is None else _open(inp, stdin)
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
                data = first + read_head(fh, _ERROR_FILE_MAX)
                lines = read_error_file(inp.name, ctx, data) if len(data) < _ERROR_FILE_MAX else None
                if lines is not None:
                    error_file_sources.add(inp.name)
                    collector.total_bytes += len(data)
                    collector.total_lines += data.count(b"\n") + 1
                    for line in lines:
                        collector._keep(line)
                    continue
                fh = _ChainedReader(data[len(first):], fh)
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
