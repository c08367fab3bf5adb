"""Where distdx keeps things of its own for a user: one rule for every such folder.

``user_dir("cache")``, ``("data")`` or ``("state")`` is ``$XDG_<KIND>_HOME/distdx`` when that variable is
set, else the XDG default under the home directory (``~/.cache``, ``~/.local/share``,
``~/.local/state``); an explicit ``override`` (a DISTDX_* variable's value) wins over both.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from distdx.errors import DistdxError

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
