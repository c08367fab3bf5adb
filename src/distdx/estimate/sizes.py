"""Reading and writing quantities: parameter counts (``7e9``, ``7B``, ``350M``) and memory sizes
(``80GB``, ``80GiB``, ``81920MiB``).

Units follow SI and IEC strictly: ``GB`` is 10**9 bytes, ``GiB`` is 2**30 bytes. Figures are
printed in GiB, as DeepSpeed's estimators print them (they divide by 2**30).
"""

from __future__ import annotations

import math
import re

from distdx.errors import DistdxError

_COUNT_SUFFIX = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "g": 10**9, "t": 10**12}
_BYTE_UNIT = {
    "": 1, "b": 1,
    "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
    "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40,  # bare letters as in `--memory 80G` (binary, like free -g)
}
_NUMBER = r"(?P<num>[0-9]+(?:\.[0-9]*)?(?:e[+-]?[0-9]+)?|\.[0-9]+(?:e[+-]?[0-9]+)?)"
_COUNT_RE = re.compile(rf"^\s*{_NUMBER}\s*(?P<unit>[kmbgt]?)\s*$", re.I)
_BYTES_RE = re.compile(rf"^\s*{_NUMBER}\s*(?P<unit>[kmgt]i?b|[kmgt]|b)?\s*$", re.I)
MAX_PARAMS = 10**15  # a quadrillion parameters: far beyond any model, still catches typos like 7e99


def parse_count(text: str, what: str = "--params") -> int:
    """``7e9``, ``7B``, ``6.7b``, ``350M``, ``124439808`` -> an integer count (> 0)."""
    m = _COUNT_RE.match(str(text))
    if not m:
        raise DistdxError("DX-ESTIMATE-001", f"cannot read {what} {text!r} as a number",
                          why="a count is a number with an optional K/M/B/T suffix (B = 10**9)",
                          hint=f"write it like `{what} 7e9`, `{what} 7B` or `{what} 350M`")
    value = float(m["num"]) * _COUNT_SUFFIX[m["unit"].lower()]
    if not math.isfinite(value) or value < 1 or value > MAX_PARAMS:
        raise DistdxError("DX-ESTIMATE-001", f"{what} {text!r} is out of range",
                          why=f"it must be at least 1 and at most {MAX_PARAMS:.0e}",
                          hint=f"check the exponent or suffix of {what}")
    return int(round(value))


def parse_bytes(text: str, what: str = "--gpu-memory") -> int:
    """``80GB`` (10**9), ``80GiB`` / ``80G`` (2**30), ``81920MiB``, ``1e11`` (bytes) -> bytes (> 0)."""
    m = _BYTES_RE.match(str(text))
    if not m:
        raise DistdxError("DX-ESTIMATE-001", f"cannot read {what} {text!r} as a memory size",
                          why="a size is a number with a unit: B, KB/MB/GB/TB (powers of 10) or "
                              "KiB/MiB/GiB/TiB (powers of 2)",
                          hint=f"write it like `{what} 80GB` or `{what} 80GiB`")
    value = float(m["num"]) * _BYTE_UNIT[(m["unit"] or "").lower()]
    if not math.isfinite(value) or value < 1 or value > 2**60:
        raise DistdxError("DX-ESTIMATE-001", f"{what} {text!r} is out of range",
                          why="it must be a positive size below an exabyte", hint=f"check the unit of {what}")
    return int(value)


def gib(n: float) -> str:
    """Bytes as GiB with two decimals, the way DeepSpeed's estimators print them."""
    return f"{n / 2**30:.2f} GiB"
