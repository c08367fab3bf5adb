"""Small, dependency-free version arithmetic: enough of PEP 440 for the doctor's checks.

``packaging`` is not a core dependency of distdx, so this reads the numeric release part of a
version ("2.13.0+cpu" -> (2, 13, 0), "535.104.05" -> (535, 104, 5)) and evaluates the
specifiers packages declare (``>=2.1,<3``, ``==3.5.*``, ``~=1.2``, ``!=2.0.1``).
"""

from __future__ import annotations

import re

_RELEASE = re.compile(r"^\s*v?(\d+(?:\.\d+)*)")
_REQ = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*\(?([^;)]*)\)?\s*(?:;(.*))?$")
_CLAUSE = re.compile(r"^(~=|===|==|!=|<=|>=|<|>)\s*(\S+)$")


def parse_version(text: str | None) -> tuple[int, ...] | None:
    if not text:
        return None
    m = _RELEASE.match(str(text))
    return tuple(int(p) for p in m.group(1).split(".")) if m else None


def major_minor(text: str | None) -> str | None:
    v = parse_version(text)
    if not v:
        return None
    return f"{v[0]}.{v[1] if len(v) > 1 else 0}"


def _pad(v: tuple[int, ...], n: int) -> tuple[int, ...]:
    return v + (0,) * (n - len(v))


def compare(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    n = max(len(a), len(b))
    pa, pb = _pad(a, n), _pad(b, n)
    return (pa > pb) - (pa < pb)


def _clause_ok(version: tuple[int, ...], op: str, target: str) -> bool | None:
    if target.endswith(".*"):
        prefix = parse_version(target[:-2])
        if prefix is None or op not in ("==", "!="):
            return None
        same = _pad(version, len(prefix))[: len(prefix)] == prefix
        return same if op == "==" else not same
    t = parse_version(target)
    if t is None:
        return None
    c = compare(version, t)
    if op in ("==", "==="):
        return c == 0
    if op == "!=":
        return c != 0
    if op == ">=":
        return c >= 0
    if op == "<=":
        return c <= 0
    if op == ">":
        return c > 0
    if op == "<":
        return c < 0
    # ~=X.Y means >=X.Y and ==X.*
    prefix = t[:-1] if len(t) > 1 else t
    return c >= 0 and _pad(version, len(prefix))[: len(prefix)] == prefix


def satisfies(version: str, spec: str) -> bool | None:
    """True/False when ``version`` meets the comma-separated ``spec``; None when either is unreadable."""
    v = parse_version(version)
    if v is None:
        return None
    for clause in filter(None, (c.strip() for c in spec.split(","))):
        m = _CLAUSE.match(clause)
        if not m:
            return None
        ok = _clause_ok(v, m.group(1), m.group(2))
        if ok is None:
            return None
        if not ok:
            return False
    return True


def requirement_on(lines: tuple[str, ...] | list[str], name: str) -> str | None:
    """The version specifier a package's Requires-Dist puts on ``name`` (extras ignored), or None."""
    want = normalise(name)
    for line in lines:
        m = _REQ.match(line)
        if not m or normalise(m.group(1)) != want:
            continue
        marker = m.group(3) or ""
        if "extra" in marker:
            continue
        return m.group(2).strip()
    return None


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()
