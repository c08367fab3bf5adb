"""The reader's inputs: what to read (files, directories, globs, stdin) and how to open each one
(decompressing by suffix, transcoding UTF-16, refusing what could block), before any line is kept."""

from __future__ import annotations

import bz2
import glob as globlib
import lzma
import os
import re
import stat
import sys
import zlib
from dataclasses import dataclass
from typing import BinaryIO, Sequence

from distdx.errors import DistdxError

MAX_FILES = 100_000
COMPRESSED = (".gz", ".bz2", ".xz", ".lzma")  # read through a decompressor, by the name's suffix
COMPRESSED_GUESS = 6  # a compressed file is assumed to expand this much when choosing the mode


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


def open_input(inp: Input, stdin: BinaryIO | None) -> BinaryIO:
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


class ChainedReader:
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
