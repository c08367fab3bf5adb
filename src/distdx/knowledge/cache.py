"""A cache of derived knowledge (parsed rules, the text model) between runs.

Reading 570 YAML rules, working out their regular expressions and building the text model over the
known-issue index takes most of a small diagnosis's time, and gives the same result until a
knowledge file changes. :func:`cached` keeps the result in the user's cache directory, keyed by the
SHA-256 of every input file's bytes, distdx's version and Python's, so an edited rule or a rebuilt
index is never served stale. The cache is an optimisation only: a directory that cannot be read or
written, or a damaged entry, means the value is built as if there were no cache.

``DISTDX_CACHE_DIR`` moves it (default ``$XDG_CACHE_HOME/distdx`` or ``~/.cache/distdx``);
``DISTDX_NO_CACHE=1`` turns it off.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
import tempfile
from pathlib import Path
from typing import Callable, Iterable, TypeVar

from distdx.paths import user_dir

T = TypeVar("T")
# the layout of what is stored (the classes pickled, such as rules.Pattern): bump it when one
# changes, so that an entry written by an earlier distdx of the same version is not read back
FORMAT = 3


def cache_dir() -> Path | None:
    if os.environ.get("DISTDX_NO_CACHE"):
        return None
    return user_dir("cache", os.environ.get("DISTDX_CACHE_DIR"))


def _key(name: str, inputs: Iterable[bytes]) -> str:
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
