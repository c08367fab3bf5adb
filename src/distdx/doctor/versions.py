"""Version arithmetic for the doctor's checks.

Python package versions and the specifiers packages declare (``>=2.1,<3``, ``==3.5.*``, ``~=1.2``,
markers) follow PEP 440 and PEP 508 through ``packaging``: a pre-release sorts before its release
(``2.1.0rc1`` does not meet ``>=2.1``, a torch nightly ``2.6.0a0+git1234`` does not meet ``>=2.6``),
a post-release after it, and a local version (``2.13.0+cpu``) meets ``==2.13.0``. Driver, toolkit and
compiler versions are not PEP 440 (``535.104.05``), so for them :func:`parse_version` reads the
numeric release alone and :func:`compare` compares those tuples.
"""

from __future__ import annotations

import re

from packaging.markers import default_environment
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

_RELEASE = re.compile(r"^\s*v?(\d+(?:\.\d+)*)")


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


def satisfies(version: str | None, spec: str) -> bool | None:
    """True/False when the package ``version`` meets the specifier ``spec`` (PEP 440, pre-releases
    ordered, not excluded); None when either is unreadable."""
    try:
        v = Version(str(version or "").strip().lstrip("vV"))
        specifiers = SpecifierSet(spec)
    except (InvalidVersion, InvalidSpecifier):
        return None
    return specifiers.contains(v, prereleases=True)


def marker_environment(python_version: str | None) -> dict[str, str]:
    """PEP 508 marker values of this machine, with the Python version of the environment checked."""
    env = dict(default_environment())
    if python_version and parse_version(python_version):
        env["python_full_version"] = python_version
        env["python_version"] = major_minor(python_version) or env["python_version"]
    return env


def requirement_on(lines: tuple[str, ...] | list[str], name: str,
                   environment: dict[str, str] | None = None) -> str | None:
    """The version specifier a package's Requires-Dist puts on ``name``, or None. Requirements of an
    extra are ignored, and so are those whose marker is false in ``environment`` (this machine's by
    default)."""
    want = normalise(name)
    marker_env = {**(environment or default_environment()), "extra": ""}
    for line in lines:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if normalise(req.name) != want:
            continue
        if req.marker is not None and ("extra" in str(req.marker) or not req.marker.evaluate(marker_env)):
            continue
        return str(req.specifier)
    return None


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()
