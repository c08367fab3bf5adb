"""Where distdx keeps things of its own for a user: one rule for every such folder.

``user_dir("cache")``, ``("data")`` or ``("state")`` is ``$XDG_<KIND>_HOME/distdx`` when that variable is
set, else the XDG default under the home directory (``~/.cache``, ``~/.local/share``,
``~/.local/state``); an explicit ``override`` (a DISTDX_* variable's value) wins over both.

The cache of derived data (:func:`cached`) lives here, below every layer that uses it: parsing the
knowledge files (rules, the text model, the taxonomy, cascade and secret patterns, calibration)
takes most of a small diagnosis's time and gives the same result until a file changes, so the
result is kept in the user's cache folder, keyed by the SHA-256 of every input file's bytes,
distdx's version and Python's; an edited rule or a rebuilt index is never served stale. The cache
is an optimisation only: a folder that cannot be read or written, or a damaged entry, means the
value is built as if there were no cache. ``DISTDX_CACHE_DIR`` moves it (default
``$XDG_CACHE_HOME/distdx`` or ``~/.cache/distdx``); ``DISTDX_NO_CACHE=1`` turns it off.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Callable, Iterable, TypeVar

from distdx.errors import DistdxError

T = TypeVar("T")

_DEFAULTS = {"cache": (".cache",), "data": (".local", "share"), "state": (".local", "state")}


def user_dir(kind: str, override: str | None = None) -> Path:
    if override:
        return Path(override)
    base = os.environ.get(f"XDG_{kind.upper()}_HOME") or os.path.join(os.path.expanduser("~"), *_DEFAULTS[kind])
    return Path(base) / "distdx"


def ensure_new(path: str | Path, what: str = "file") -> None:
    """Raise DX-PATH-001 when ``path`` exists (a dangling link counts): writing would replace it."""
    target = Path(path)
    if target.exists() or target.is_symlink():
        raise DistdxError("DX-PATH-001", f"{target} exists already",
                          why=f"writing the {what} there would replace what it holds",
                          hint="pass --force to replace it, or choose another path")


def write_atomic(path: str | Path, data: str | bytes, *, force: bool = False, what: str = "file",
                 mode: int | None = None) -> Path:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename, so a reader
    never sees half a file and an interrupted write leaves the old one whole. An existing file is
    replaced only with ``force``; ``mode`` (e.g. the replaced file's, so a script stays executable) is set
    on the temporary file before the rename; every failure is a :class:`DistdxError` (DX-PATH-001 exists,
    DX-PATH-002 cannot write) that names the OS's reason."""
    target = Path(path)
    if not force:
        ensure_new(target, what)
    if target.is_dir():
        raise DistdxError("DX-PATH-002", f"cannot write {target}: it is a folder",
                          hint="give a file name, not a folder")
    tmp = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, target)
        tmp = None
    except OSError as e:
        reason = e.strerror or str(e)
        parent = next((p for p in target.parents if p.exists()), None)
        if parent is not None and not parent.is_dir():
            reason = f"{parent} is a file, not a folder"
        raise DistdxError("DX-PATH-002", f"cannot write {target}: {reason}",
                          why="the operating system refused the write",
                          hint="check the folder's permissions and free space, or choose another path") from None
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
    return target


# the layout of what is stored (the classes pickled, such as rules.Pattern): bump it when one
# changes, so that an entry written by an earlier distdx of the same version is not read back
FORMAT = 3


def cache_dir() -> Path | None:
    if os.environ.get("DISTDX_NO_CACHE"):
        return None
    return user_dir("cache", os.environ.get("DISTDX_CACHE_DIR"))


def _key(name: str, inputs: Iterable[bytes]) -> str:
    import hashlib
    import sys

    from distdx import __version__

    h = hashlib.sha256(f"{name}\0{__version__}\0{FORMAT}\0{sys.version_info[:3]}".encode())
    for data in inputs:
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()[:24]


def cached(name: str, inputs: Iterable[bytes], build: Callable[[], T]) -> T:
    """``build()``, or the value it returned in an earlier run for the same ``inputs``."""
    folder = cache_dir()
    if folder is None:
        return build()
    import pickle

    path = folder / f"{name}-{_key(name, inputs)}.pickle"
    try:
        with open(path, "rb") as f:
            return pickle.load(f)
    except Exception:  # missing, unreadable or damaged: build it again
        pass
    value = build()
    tmp = None
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        for old in folder.glob(f"{name}-*.pickle"):  # entries of earlier knowledge
            old.unlink(missing_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{name}-", dir=folder)
        with os.fdopen(fd, "wb") as f:
            pickle.dump(value, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
    except OSError:  # a read-only or full cache directory costs speed, nothing else
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
    return value
