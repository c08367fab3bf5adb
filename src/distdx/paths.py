"""Where distdx keeps things of its own for a user: one rule for every such folder.

``user_dir("cache")``, ``("data")`` or ``("state")`` is ``$XDG_<KIND>_HOME/distdx`` when that variable is
set, else the XDG default under the home directory (``~/.cache``, ``~/.local/share``,
``~/.local/state``); an explicit ``override`` (a DISTDX_* variable's value) wins over both.
"""

from __future__ import annotations

import os
from pathlib import Path

_DEFAULTS = {"cache": (".cache",), "data": (".local", "share"), "state": (".local", "state")}


def user_dir(kind: str, override: str | None = None) -> Path:
    if override:
        return Path(override)
    base = os.environ.get(f"XDG_{kind.upper()}_HOME") or os.path.join(os.path.expanduser("~"), *_DEFAULTS[kind])
    return Path(base) / "distdx"
