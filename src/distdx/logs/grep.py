"""Finding salient lines fast: the needles, their offsets in a chunk, and the lines kept around them;
``grep -F`` beside the reader on the other core for large plain files."""

from __future__ import annotations

import os
from typing import Iterable, Sequence

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
GUARD_NEEDLE = (b'"distdx"', 0)
_BORDER = b"\n======"


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
