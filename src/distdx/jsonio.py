"""JSON from the user's files.

``json.loads`` reports two kinds of bad input outside :class:`json.JSONDecodeError`: nesting deeper
than the interpreter's recursion limit (``RecursionError``) and integers longer than Python's
4,300-digit conversion limit (a plain ``ValueError``). :func:`loads` turns both into
``JSONDecodeError``, so every reader's existing "not JSON" path reports them as bad input instead of
an internal error.
"""

from __future__ import annotations

import json
from typing import Any


def loads(text: str | bytes, **kwargs: Any) -> Any:
    try:
        return json.loads(text, **kwargs)
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise json.JSONDecodeError("nested too deeply to read (thousands of levels)", _doc(text), 0) from None
    except ValueError as e:
        if "digits" not in str(e):  # raised by a caller's hook: not ours to reword
            raise
        raise json.JSONDecodeError("a number with more than 4,300 digits", _doc(text), 0) from None


def _doc(text: str | bytes) -> str:
    return text if isinstance(text, str) else ""  # JSONDecodeError wants a str; for bytes the position is enough
