"""Compatible version sets: which versions of the packages involved go together, from the table alone.

The table is data: ``version_rules`` in ``compat.yaml`` (release documents such as PyTorch's
compatibility matrix, and evidence rules keyed on error text) and ``compat_releases.yaml`` (what every
release of twelve frameworks declares, read from its requirement files at each release tag, by
``scripts/compat_from_mirrors.py``). With an ``Environment``, the Requires-Dist of each installed
distribution counts too. A rule says: every version of the ``when`` package in that
range needs ``requires`` (a list means any one of them). An evidence rule applies when its pattern
occurs in the diagnosis text; a known bug's (``affects``: the releases that have it) only when no version
outside those releases is installed or quoted. ``api_history.json.gz`` (generated with it) says which releases of nine
frameworks and of transformers (read from its PyPI wheels) have each module, public name and class
method, and which Pythons each standard-library module and name (typeshed), so an import or attribute
error names the releases that have what it lacks. It also holds each framework's removed messages: the
specific strings its releases raised, asserted or logged that its last release no longer has. A log
that quotes one says the code path that printed it changed after the last release that had it: the
answer ``>V`` is evidence (clause kind ``changes``), shown apart from the requirements (kind ``requires``).

:func:`version_set` takes the packages whose versions are in question, the versions installed (given,
read by ``distdx doctor`` into an :class:`~distdx.doctor.models.Environment`, or quoted in the log)
and the evidence text. Installed packages that are not in question stay as they are; a rule whose
``when`` holds for one of them constrains the packages in question (forward), and a rule whose
``requires`` the installed version breaks excludes that ``when`` range (backward). A package the table
says nothing about here is answered "unknown" with why, never guessed. The result carries a pip
constraints file, each line with its reasons and sources, and the one command that applies it.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Iterable, Mapping

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from distdx.doctor.models import Environment
from distdx.doctor.versions import marker_environment, normalise, requirement_on
from distdx.errors import DistdxError
from distdx.knowledge.catalogue import catalogue_error
from distdx.yamlio import load_yaml

# Entries that are not pip packages: they appear in the answer, as comments in the constraints file.
PLATFORM = frozenset({"python", "cuda"})
CONSTRAINTS_FILE = "distdx-constraints.txt"
_FORWARD_ONLY = frozenset({"cuda"})


@dataclass(frozen=True)
class VersionRule:
    """Every version of ``when``'s package in its range needs each ``requires`` entry (alternatives
    ORed). An evidence rule (``evidence`` set) applies when its pattern occurs in the evidence text."""

    code: str
    when: Mapping[str, str]
    requires: Mapping[str, tuple[str, ...]]
    source: str
    reason: str = ""
    evidence: str | None = None
    #: a known bug's releases (evidence rules only): the rule stays silent when the text or the machine
    #: shows a version of that package outside them, since that release cannot have printed it
    affects: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Clause:
    """One constraint on a package: any of ``alternatives`` (specifier sets), with where it comes from.
    ``kind`` says what it is: ``requires`` (a release declares or needs it), or ``changes`` (evidence
    only: the log's message is gone from the releases it admits, so moving there changes that code path)."""

    alternatives: tuple[str, ...]
    reason: str
    source: str
    code: str
    kind: str = "requires"

    def contains(self, version: Version) -> bool:
        return any(SpecifierSet(a).contains(version, prereleases=True) for a in self.alternatives)

    def to_dict(self) -> dict:
        return {"alternatives": list(self.alternatives), "reason": self.reason, "source": self.source,
                "code": self.code, "kind": self.kind}


@dataclass(frozen=True)
class Pin:
    package: str
    clauses: tuple[Clause, ...]
    specifier: str  # what the constraints file says (pip has no OR: see ``chosen``)
    chosen: str = ""  # when a clause had alternatives, which one the constraints file took and why

    def contains(self, version: str) -> bool:
        """Whether the constraints file admits ``version`` (what pip will enforce)."""
        try:
            return SpecifierSet(self.specifier).contains(Version(version), prereleases=True)
        except InvalidVersion:
            return False


@dataclass(frozen=True)
class Unknown:
    package: str
    why: str


@dataclass(frozen=True)
class VersionSet:
    pins: tuple[Pin, ...]
    unknown: tuple[Unknown, ...]
    kept: Mapping[str, str]  # installed versions taken as fixed
    conflicts: tuple[str, ...] = ()
    constraints: str = ""
    command: str = ""
    # package -> evidence that moving past a release changes the code path the log went through (removed
    # messages): shown, not applied to the pins (see ``apply_changes``)
    changes: Mapping[str, tuple[Clause, ...]] = field(default_factory=dict)

    def pin(self, package: str) -> Pin | None:
        want = _name(package)
        return next((p for p in self.pins if p.package == want), None)

    def to_dict(self) -> dict:
        return {
            "pins": [{"package": p.package, "specifier": p.specifier, "chosen": p.chosen,
                      "clauses": [c.to_dict() for c in p.clauses]} for p in self.pins],
            "unknown": [{"package": u.package, "why": u.why} for u in self.unknown],
            "kept": dict(self.kept), "conflicts": list(self.conflicts),
            "constraints": self.constraints, "command": self.command,
            "changes": {pkg: [c.to_dict() for c in cs] for pkg, cs in self.changes.items()},
        }


_ALIASES = {"pytorch": "torch", "cuda-toolkit": "cuda", "megatron": "megatron-core", "transformer-engine-torch":
            "transformer-engine", "te": "transformer-engine", "flash-attention": "flash-attn",
            "flash-attn-2": "flash-attn", "colossal-ai": "colossalai", "llama-factory": "llamafactory",
            "swift": "ms-swift"}


def _name(package: str) -> str:
    n = normalise(package.strip())
    return _ALIASES.get(n, n)


def _bad(source: str, what: str) -> DistdxError:
    return catalogue_error("DX-DOCTOR-006", f"src/distdx/doctor/{source}", "", what,
                           needs="every version rule has a code, a `when` or an `evidence`, `requires` with valid "
                                 "PEP 440 specifiers, and a `source`")


def _spec(text: str, where: str) -> str:
    try:
        return str(SpecifierSet(str(text)))
    except InvalidSpecifier:
        raise _bad(where, f"{text!r} is not a PEP 440 specifier") from None


def parse_rules(entries: Iterable[dict], where: str) -> tuple[VersionRule, ...]:
    rules = []
    for i, e in enumerate(entries):
        code = str(e.get("code") or f"{where}#{i}")
        if not e.get("source") or not e.get("requires") or not (e.get("when") or e.get("evidence")):
            raise _bad(where, f"{code}: needs `source`, `requires` and `when` or `evidence`")
        if e.get("evidence"):
            try:
                re.compile(e["evidence"])
            except re.error as err:
                raise _bad(where, f"{code}: evidence pattern: {err}") from None
        when = {_name(k): _spec(v, f"{where} {code}") for k, v in (e.get("when") or {}).items()}
        affects = {_name(k): _spec(v, f"{where} {code}") for k, v in (e.get("affects") or {}).items()}
        if affects and not e.get("evidence"):
            raise _bad(where, f"{code}: `affects` belongs to an evidence rule (a known bug's releases)")
        if len(when) > 1:
            raise _bad(where, f"{code}: `when` names one package (a rule is one release range's needs)")
        requires = {_name(k): tuple(_spec(a, f"{where} {code}") for a in (v if isinstance(v, list) else [v]))
                    for k, v in e["requires"].items()}
        rules.append(VersionRule(code=code, when=when, requires=requires, source=str(e["source"]),
                                 reason=str(e.get("reason", "")), evidence=e.get("evidence"), affects=affects))
    return tuple(rules)


@dataclass(frozen=True)
class Table:
    rules: tuple[VersionRule, ...]
    releases: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def packages(self) -> frozenset[str]:
        names = set(self.releases)
        for r in self.rules:
            names.update(r.when)
            names.update(r.requires)
        return frozenset(names)


def load_table(compat_text: str, releases_text: str) -> Table:
    compat_data = load_yaml(compat_text) or {}
    rel = load_yaml(releases_text) or {}
    if rel.get("version") != 1:
        raise _bad("compat_releases.yaml", "expected `version: 1`")
    rules = parse_rules(compat_data.get("version_rules") or (), "compat.yaml")
    generated = [{"code": f"REL-{_name(next(iter(r['when'])))}-{i:03d}", **r} for i, r in enumerate(rel["rules"])]
    rules += parse_rules(generated, "compat_releases.yaml")
    releases = {_name(k): tuple(str(v) for v in vs) for k, vs in (rel.get("releases") or {}).items()}
    return Table(rules=rules, releases=releases)


Ranges = tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class Message:
    """A message (raised, asserted, logged) some releases had and the last release no longer has: its
    literal parts in order (between them stood an f-string, ``%s`` or ``{}`` placeholder)."""

    parts: tuple[str, ...]
    releases: Ranges

    def occurs_in(self, text: str) -> bool:
        """Whether ``text`` holds the message: its longest part, and its other parts of four characters or
        more in order around it (within the message's own length and a margin for the filled holes)."""
        longest = max(self.parts, key=len).strip()
        wanted = [p.strip() for p in self.parts if len(p.strip()) >= 4]
        span = sum(len(p) for p in self.parts) + 200
        at = text.find(longest)
        while at >= 0:
            window, pos = text[max(0, at - span):at + span], 0
            for part in wanted:
                pos = window.find(part, pos)
                if pos < 0:
                    break
                pos += len(part)
            else:
                return True
            at = text.find(longest, at + 1)
        return False


@dataclass(frozen=True)
class ApiHistory:
    """Which releases of a package have each module, public top-level name and class method
    (``api_history.json.gz``, generated from the release tags). ``None`` stands for every release (a
    module) or the releases of its parent (a name: its module's; ``Class.method``: its class's)."""

    package: str
    root: str  # import root: ``deepspeed``, ``megatron.core``
    releases: tuple[str, ...]
    modules: Mapping[str, Ranges | None]
    names: Mapping[str, Mapping[str, Ranges | None]]
    source: str
    messages: tuple[Message, ...] = ()
    reexports: bool = False  # its root lazily re-exports its submodules' public names (transformers)

    def module_releases(self, module: str) -> Ranges | None:
        """The releases that have ``module``; None when every release has it or none does."""
        return self.modules.get(module)

    def name_releases(self, module: str, name: str) -> Ranges | None:
        """The releases whose ``module`` has ``name`` (``Class.method`` included), resolving "as its
        parent"; None when that is every release or no release has it."""
        in_module = self.names.get(module, {})
        if name not in in_module:
            return None
        own = in_module[name]
        if own is not None:
            return own
        if "." in name:
            return self.name_releases(module, name.split(".")[0])
        return self.module_releases(module)

    def reexported(self, module: str, name: str) -> Ranges | None:
        """For a root that re-exports its submodules' public names: the releases in which some module
        defines ``name``; None when that is every release or none."""
        if not self.reexports or module != self.root:
            return None
        every = ((0, len(self.releases) - 1),)
        have: set[int] = set()
        for m, names in self.names.items():
            if name in names:
                for a, b in self.name_releases(m, name) or every:
                    have.update(range(a, b + 1))
        if not have or len(have) == len(self.releases):
            return None
        spans: list[list[int]] = []
        for i in sorted(have):
            if spans and spans[-1][1] == i - 1:
                spans[-1][1] = i
            else:
                spans.append([i, i])
        return tuple((a, b) for a, b in spans)

    def specifiers(self, ranges: Ranges) -> tuple[str, ...]:
        last = len(self.releases) - 1
        return tuple(f">={self.releases[i]}" if j == last else f">={self.releases[i]},<{self.releases[j + 1]}"
                     for i, j in ranges)


@lru_cache(maxsize=1)
def api_history() -> tuple[ApiHistory, ...]:
    raw = resources.files("distdx.doctor").joinpath("api_history.json.gz").read_bytes()
    data = json.loads(gzip.decompress(raw).decode("utf-8"))
    if data.get("version") != 1:
        raise _bad("api_history.json.gz", "expected `version: 1`")

    def ranges(items: list | None) -> Ranges | None:
        return None if items is None else tuple((int(a), int(b)) for a, b in items)

    return tuple(ApiHistory(
        package=pkg, root=h["root"], releases=tuple(h["releases"]), source=h["source"],
        modules={m: ranges(r) for m, r in h["modules"].items()},
        names={m: {n: ranges(r) for n, r in names.items()} for m, names in h["names"].items()},
        messages=tuple(Message(tuple(parts), ranges(r) or ()) for parts, r in h.get("messages", ())),
        reexports=bool(h.get("reexports")),
    ) for pkg, h in sorted(data["packages"].items()))


_MISSING_MODULE = re.compile(r"No module named '([\w.]+)'")
_MISSING_ATTRIBUTE = re.compile(r"(?:type object )?'(\w+)' (?:object )?has no attribute '(\w+)'")
_MISSING_NAME = (re.compile(r"cannot import name '(\w+)' from '([\w.]+)'"),
                 re.compile(r"module '([\w.]+)' has no attribute '(\w+)'"))


def api_clauses(evidence: str, histories: Iterable[ApiHistory] | None = None) -> dict[str, list[Clause]]:
    """Constraints from an error that names a module, a name or a class attribute (``'C' object has no
    attribute 'a'``) of a package whose history is known: the releases that have it. A name every
    release has (or none) gives nothing."""
    out: dict[str, list[Clause]] = {}
    hist = tuple(histories if histories is not None else api_history())

    def owner(module: str) -> ApiHistory | None:
        # a package owns the modules under its import root; Python's history (root "") the standard
        # library's, which it lists
        hits = [h for h in hist if module == h.root or module.startswith(h.root + ".")
                or (h.root == "" and (module in h.modules or module.split(".")[0] in h.modules))]
        return max(hits, key=lambda h: len(h.root), default=None)

    found: list[tuple[ApiHistory, str, Ranges]] = []
    for m in _MISSING_MODULE.finditer(evidence or ""):
        h = owner(m.group(1))
        if h and (ranges := h.module_releases(m.group(1))):
            found.append((h, f"module {m.group(1)}", ranges))
    for pattern in _MISSING_NAME:
        for m in pattern.finditer(evidence or ""):
            name, module = (m.group(1), m.group(2)) if pattern is _MISSING_NAME[0] else (m.group(2), m.group(1))
            h = owner(module)
            if h and (ranges := h.name_releases(module, name) or h.module_releases(f"{module}.{name}")
                      or h.reexported(module, name)):
                found.append((h, f"{module}.{name}", ranges))
    for m in _MISSING_ATTRIBUTE.finditer(evidence or ""):
        key = f"{m.group(1)}.{m.group(2)}"
        for h in hist:
            spans = sorted({span for module in h.names for span in h.name_releases(module, key) or ()})
            if spans:
                found.append((h, key, tuple(spans)))
    seen = set()
    for h, what, ranges in found:
        if (h.package, what) in seen:
            continue
        seen.add((h.package, what))
        out.setdefault(h.package, []).append(Clause(
            h.specifiers(ranges), f"the error names {what}, which only these {h.package} releases have",
            h.source, f"API-{h.package}"))
    return out


def message_clauses(evidence: str, histories: Iterable[ApiHistory] | None = None) -> dict[str, list[Clause]]:
    """Evidence, not requirements, from a message the text quotes that a package's later releases no
    longer have (changed or removed): the releases after the last one that had it. Only messages specific
    enough to name a code path were kept (``scripts/compat_from_mirrors.py``), and a message a current
    release still contains was dropped there, so the current wording never matches an old one."""
    out: dict[str, list[Clause]] = {}
    for h in (histories if histories is not None else api_history()):
        # a message says whose code path it is only where the text shows that package at all (its name,
        # or its import root as a module or a path): projects copy each other's messages
        names = {h.package, h.root, h.root.replace(".", "/")} - {""}
        if not any(re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", evidence or "", re.I) for n in names):
            continue
        for msg in h.messages:
            if not msg.occurs_in(evidence or ""):
                continue
            last = msg.releases[-1][1]
            shown = "…".join(p.strip() for p in msg.parts)
            out.setdefault(h.package, []).append(Clause(
                (f">{h.releases[last]}",),
                f"the message \"{shown[:120]}\" is last in {h.package} {h.releases[last]} ({h.releases[last + 1]} "
                f"changed or removed it): upgrading past {h.releases[last]} changes that code path",
                f"{h.source}, the message at {h.releases[last]}", f"MSG-{h.package}", kind="changes"))
    return out


@lru_cache(maxsize=1)
def table() -> Table:
    pkg = resources.files("distdx.doctor")
    return load_table(pkg.joinpath("compat.yaml").read_text(encoding="utf-8"),
                      pkg.joinpath("compat_releases.yaml").read_text(encoding="utf-8"))


# Versions quoted in logs: ds_report and `transformers-cli env` / `accelerate env` blocks, pip freeze,
# pip list, `pip show`, nvcc and the Python banner.
_VERSION = r"v?(\d+(?:\.\d+){1,3}(?:[.+-]?(?:post|dev|rc|a|b)\d*)?)"
_TEXT_PATTERNS = (
    re.compile(r"^\W*(torch|deepspeed|python|nvcc|torch cuda|cuda)\s+(?:version|info)\s*\.{3,}\s*\[?" + _VERSION,
               re.I | re.M),
    re.compile(r"^\W*`?([A-Za-z][\w.\-]*?)`?(?: \(GPU\?\))?\s+version(?: \(GPU\?\))?\s*:\s*" + _VERSION, re.I | re.M),
    re.compile(r"^\W*([A-Za-z][\w.\-]*)\s*==\s*" + _VERSION + r"\s*$", re.M),
    re.compile(r"^([A-Za-z][\w.\-]*)[ \t]{2,}" + _VERSION + r"(?:\s|$)", re.M),
    re.compile(r"^Name:\s*([\w.\-]+)\s*\nVersion:\s*" + _VERSION, re.M),
    re.compile(r"\b(Python|CUDA)[ \t]+" + _VERSION + r"\b"),
    re.compile(r"Cuda compilation tools, release (\d+\.\d+)()"),
    # prose: "DeepSpeed 0.13.1", "PyTorch 2.0.1", "torch==2.1" in a sentence
    re.compile(r"\b([A-Za-z][\w\-]*)(?:\s+v|\s*==\s*|\s+)" + _VERSION + r"\b"),
)
_TEXT_ALIASES = {"nvcc": "cuda", "torch-cuda": "cuda", "pytorch": "torch", "platform": "", "colossal-ai": "colossalai"}


def versions_in_text(text: str) -> dict[str, str]:
    """Package -> version as quoted in ``text`` (the first mention of each wins); only names the table
    knows, so prose numbers are not taken for versions."""
    known = table().packages
    found: dict[str, str] = {}
    for pattern in _TEXT_PATTERNS:
        for m in pattern.finditer(text or ""):
            raw, version = m.group(1), m.group(2)
            if pattern.pattern.startswith("Cuda compilation"):
                raw, version = "cuda", m.group(1)
            name = _TEXT_ALIASES.get(normalise(raw), _name(raw))
            if name in known and name not in found:
                found[name] = version
    return found


def _is_version(text: str) -> bool:
    try:
        Version(text)
    except InvalidVersion:
        return False
    return True


def _complement(spec: str) -> tuple[str, ...]:
    """The versions outside a ``>=a,<b`` / ``>=a,<=b`` / ``==a`` range, as alternatives."""
    out = []
    for s in SpecifierSet(spec):
        flipped = {">=": "<", ">": "<=", "<": ">=", "<=": ">", "==": "!=", "!=": "=="}.get(s.operator)
        if flipped is None:
            return ()
        out.append(f"{flipped}{s.version}")
    return tuple(out)


def _admitted(version: str | None, clauses: Iterable[Clause]) -> bool:
    """Whether a known (installed or quoted) ``version`` meets every clause."""
    return version is not None and _is_version(version) and all(c.contains(Version(version)) for c in clauses)


def _satisfies(version: str, alternatives: Iterable[str]) -> bool:
    try:
        v = Version(version)
    except InvalidVersion:
        return False
    return any(SpecifierSet(a).contains(v, prereleases=True) for a in alternatives)


def _probes(clauses: list[Clause], releases: tuple[str, ...]) -> list[Version]:
    """Versions to try: the known releases and every version a clause names (with ``.*`` dropped)."""
    out = set()
    for text in list(releases) + [s.version.removesuffix(".*") for c in clauses for a in c.alternatives
                                  for s in SpecifierSet(a)]:
        try:
            out.add(Version(text))
        except InvalidVersion:
            continue
    return sorted(out)


def _tightest(specs: list[str]) -> str:
    """One specifier set with the highest lower bound and the lowest upper bound of ``specs``."""
    lower = upper = None
    rest = []
    for s in SpecifierSet(",".join(specs)):
        v = Version(s.version) if not s.version.endswith(".*") else None
        if s.operator in (">=", ">") and v is not None:
            if lower is None or (v, s.operator == ">") > (Version(lower.version), lower.operator == ">"):
                lower = s
        elif s.operator in ("<", "<=") and v is not None:
            if upper is None or (v, s.operator == "<=") < (Version(upper.version), upper.operator == "<="):
                upper = s
        else:
            rest.append(str(s))
    return ",".join([str(x) for x in (lower, upper) if x is not None] + sorted(rest))


def _split_holes(clauses: list[Clause]) -> tuple[list[Clause], list[str]]:
    """The clauses without their one-by-one exclusions (``!=``, in single-alternative clauses; a clause
    left empty goes), and those exclusions."""
    solid, holes = [], []
    for c in clauses:
        if len(c.alternatives) == 1 and "!=" in c.alternatives[0]:
            specs = SpecifierSet(c.alternatives[0])
            holes += [str(x) for x in specs if x.operator == "!="]
            rest = ",".join(str(x) for x in specs if x.operator != "!=")
            if not rest:
                continue
            c = dataclasses.replace(c, alternatives=(rest,))
        solid.append(c)
    return solid, holes


_FLOOR, _CEILING = Version("0"), Version("99999")  # stand for "below every bound" and "above every bound"


def _collapse(clauses: list[Clause], releases: tuple[str, ...]) -> tuple[str, str, bool]:
    """The constraints-file specifier for a package, how alternatives were chosen, and whether any
    version is left. pip cannot OR: the file takes the widest range around the newest version that
    meets every clause (known releases and the bounds the clauses name), and where a clause offers
    exact series (``==12.1.*``) the series that version is in."""
    probes = sorted(set(_probes(clauses, releases)) | {_FLOOR, _CEILING})
    # releases a clause excludes one by one (``!=0.14.1``: a known bug's releases) are holes pip can
    # express as they are: the range is found without them and they are added to it
    solid, holes = _split_holes(clauses)
    ok = [all(c.contains(v) for c in solid) for v in probes]
    outside = SpecifierSet(",".join(holes))
    good = [v for v, fine in zip(probes, ok) if fine and outside.contains(v, prereleases=True)]
    released = [v for v in good if str(v) in releases]
    real = [v for v in good if v not in (_FLOOR, _CEILING)]
    target = max(released or real or good, default=None)
    if target is None or (releases and not released):
        return "", "", False
    at = probes.index(target)
    lo = at
    while lo > 0 and ok[lo - 1]:
        lo -= 1
    hi = at
    while hi + 1 < len(probes) and ok[hi + 1]:
        hi += 1
    fixed = [c.alternatives[0] for c in solid if len(c.alternatives) == 1] + holes
    run = []
    if probes[lo] != _FLOOR:
        run.append(f">={probes[lo]}")
    if hi + 1 < len(probes):
        run.append(f"<={probes[hi]}" if probes[hi + 1] == _CEILING else f"<{probes[hi + 1]}")
    chosen = []
    for c in clauses:
        if len(c.alternatives) > 1 and any("==" in a for a in c.alternatives):
            pick = next((a for a in c.alternatives if SpecifierSet(a).contains(target, prereleases=True)), None)
            if pick:
                fixed.append(pick)
                chosen.append(f"{pick} of {' | '.join(c.alternatives)} ({c.code})")
    # a chosen series already says which versions; the run around the target would only repeat it
    fixed += [] if chosen else run
    exact = [f for f in fixed for one in SpecifierSet(f) if one.operator == "==" and not one.version.endswith(".*")]
    return _tightest(exact or fixed), "; ".join(chosen), True


def version_set(packages: Iterable[str], *, installed: Mapping[str, str] | None = None, evidence: str = "",
                environment: Environment | None = None, rules: Table | None = None,
                histories: tuple[ApiHistory, ...] | None = None, apply_changes: bool = False) -> VersionSet:
    """The versions of ``packages`` compatible with what is installed and with the evidence, from the
    table alone (see the module docstring). Never raises on unknown names: they are answered unknown.
    ``rules`` and ``histories`` replace the bundled table and API history (tests, baselines).
    A removed message the evidence quotes is reported in ``changes``; ``apply_changes`` also makes it
    constrain the pins (measured: it names a later release than the fix the resolutions name, see
    ``benchmarks/bench_versionsets.py``, so it is off by default)."""
    tab = rules or table()
    hist = api_history() if histories is None else histories
    targets = list(dict.fromkeys(_name(p) for p in packages if p and p.strip()))
    seen: dict[str, str] = {}
    if environment is not None:
        seen.update({_name(k): v for k, v in environment.packages.items()})
        seen["python"] = environment.python_version
        if environment.torch_cuda:
            seen["cuda"] = environment.torch_cuda
    seen.update({_name(k): str(v) for k, v in (installed or {}).items()})
    for name, version in versions_in_text(evidence).items():
        seen.setdefault(name, version)
    kept = {k: v for k, v in seen.items() if k not in targets}

    clauses: dict[str, list[Clause]] = {t: [] for t in targets}
    excluded: set[str] = set()  # packages some releases of which a rule ruled out
    for rule in tab.rules:
        if rule.evidence is not None:
            if re.search(rule.evidence, evidence or "") and all(
                    k in kept and _satisfies(kept[k], [v]) for k, v in rule.when.items()) and all(
                    k not in seen or not _is_version(seen[k]) or _satisfies(seen[k], [v])
                    for k, v in rule.affects.items()):
                for pkg, alts in rule.requires.items():
                    if pkg in clauses:
                        clauses[pkg].append(Clause(alts, rule.reason or "named by the evidence", rule.source,
                                                   rule.code))
            continue
        (wpkg, wspec), = rule.when.items()
        if wpkg in kept and _satisfies(kept[wpkg], [wspec]):
            for pkg, alts in rule.requires.items():
                if pkg in clauses:
                    clauses[pkg].append(Clause(alts, f"{wpkg} {kept[wpkg]} (installed) needs {pkg} "
                                                     f"{' or '.join(alts)}", rule.source, rule.code))
        elif wpkg in clauses:
            for pkg, alts in rule.requires.items():
                # the CUDA a torch build names is the one its wheel ships, not the toolkit on the machine:
                # a machine's CUDA never rules a torch release out
                if pkg in kept and pkg not in _FORWARD_ONLY and not _satisfies(kept[pkg], alts):
                    outside = _complement(wspec)
                    if outside:
                        excluded.add(wpkg)
                        clauses[wpkg].append(Clause(outside, f"{wpkg}{wspec} needs {pkg} {' or '.join(alts)}, "
                                                             f"installed {pkg} is {kept[pkg]}", rule.source,
                                                    rule.code))

    if environment is not None:
        # what each installed distribution declares (its Requires-Dist, as the doctor read it)
        markers = marker_environment(environment.python_version)
        for dist, lines in sorted(environment.requirements.items()):
            dist_name = _name(dist)
            if dist_name in clauses or dist_name not in kept:
                continue
            for pkg in clauses:
                spec = requirement_on(lines, pkg, markers)
                if spec:
                    clauses[pkg].append(Clause((spec,),
                                               f"{dist_name} {kept[dist_name]} (installed) requires {pkg}{spec}",
                                               f"{dist_name} {kept[dist_name]} Requires-Dist (installed metadata)",
                                               f"DIST-{dist_name}"))
    for pkg in excluded:
        # ruling releases out says nothing of releases no rule covers: keep the answer inside the table
        known = tab.releases.get(pkg)
        covered = ((f">={known[0]},<={known[-1]}",) if known else
                   tuple(dict.fromkeys(r.when[pkg] for r in tab.rules if pkg in r.when and r.evidence is None)))
        clauses[pkg].append(Clause(covered, f"the releases of {pkg} the table covers", "compat.yaml and "
                                   "compat_releases.yaml `when` ranges", f"COVER-{pkg}"))
    evidence_clauses = api_clauses(evidence, hist)
    changes: dict[str, tuple[Clause, ...]] = {}
    for pkg, found in message_clauses(evidence, hist).items():
        if _admitted(kept.get(pkg), found):
            continue  # the installed release is past the message: it did not print it
        changes[pkg] = tuple(found)
        if apply_changes:
            evidence_clauses.setdefault(pkg, []).extend(found)
    for pkg, found in evidence_clauses.items():
        if pkg in clauses:
            clauses[pkg] += found
        elif not _admitted(kept.get(pkg), found):
            # the error names this package's API: it is involved, and what is installed (if known) lacks it
            clauses[pkg] = list(found)
            targets.append(pkg)
            kept.pop(pkg, None)

    pins, unknown, conflicts = [], [], []
    for pkg in targets:
        if not clauses[pkg] and pkg not in tab.packages and pkg not in {h.package for h in hist}:
            unknown.append(Unknown(pkg, f"{pkg} is not in the compatibility table"))
            continue
        if not clauses[pkg]:
            known = [f"{k} {v}" for k, v in sorted(kept.items()) if k in tab.packages]
            unknown.append(Unknown(pkg, f"no rule of the table constrains {pkg} given "
                                        + (", ".join(known) or "no installed version the table knows")
                                        + (" and the evidence" if evidence else "")))
            continue
        spec, chosen, alive = _collapse(clauses[pkg], tab.releases.get(pkg, ()))
        if not alive:
            conflict = (f"no known {pkg} release meets every rule: "
                        + "; ".join(f"{' | '.join(c.alternatives)} ({c.code})" for c in clauses[pkg]))
            conflicts.append(conflict)
            unknown.append(Unknown(pkg, conflict))
            continue
        pins.append(Pin(pkg, tuple(clauses[pkg]), spec, chosen))
    constraints = _constraints_text(pins, {k: v for k, v in kept.items() if k in tab.packages},
                                    {} if apply_changes else changes)
    pip_targets = [p.package for p in pins if p.package not in PLATFORM]
    command = f"pip install -c {CONSTRAINTS_FILE} " + " ".join(pip_targets) if pip_targets else ""
    return VersionSet(tuple(pins), tuple(unknown), kept, tuple(conflicts), constraints, command, changes)


def _constraints_text(pins: list[Pin], kept: Mapping[str, str], unapplied: Mapping[str, tuple[Clause, ...]]) -> str:
    lines = ["# pip constraints written by distdx from its compatibility table (doctor/compat*.yaml)"]
    for p in pins:
        why = [f"#   {c.code}: {c.reason} [{c.source}]" + (" (evidence, not a requirement)" if c.kind == "changes"
                                                            else "") for c in p.clauses]
        if p.chosen:
            why.append(f"#   chose {p.chosen}")
        line = f"{p.package}{p.specifier}" if p.package not in PLATFORM else f"# {p.package} {p.specifier} (not pip)"
        lines += why + [line]
    for name, version in sorted(kept.items()):
        if name not in PLATFORM:
            try:
                Version(version)
            except InvalidVersion:
                continue
            lines.append(f"{name}=={Version(version).public}  # installed, kept")
    for name, found in sorted(unapplied.items()):
        lines += [f"# evidence, not a requirement (not applied): {name}{' | '.join(c.alternatives)}: {c.reason} "
                  f"[{c.source}]" for c in found]
    return "\n".join(lines) + "\n"


def answer_question(package: str, version: str, relation: str, evidence: str, *, rules: Table | None = None,
                    histories: tuple[ApiHistory, ...] | None = None,
                    apply_changes: bool = False) -> tuple[str, VersionSet]:
    """Score one version question of a labelled case (``scripts/f2_version_questions.py`` derives them
    from resolutions): ask for ``package`` with the case's own text as evidence (every other version
    it quotes is kept) and say "hit" when the constraints file admits the version the resolution names,
    "miss" when it does not, "unknown" when the table gives no answer. ``>=`` and ``==`` questions use
    that version (``1.x`` stands for the newest of the 1 series, written 1.9999); ``<`` questions the
    newest known release below it."""
    tab = rules or table()
    hist = api_history() if histories is None else histories
    vs = version_set([package], evidence=evidence, rules=tab, histories=hist, apply_changes=apply_changes)
    pin = vs.pin(package)
    wanted: str | None = version[:-2] + ".9999" if version.endswith(".x") else version
    if pin is None:
        return "unknown", vs
    if relation == "<":
        # the newest known release below it; with no release list, the versions the answer names and the
        # one just below the named version (11.4 -> 11.3): a "<" question is a hit when one of them is admitted
        known = set(tab.releases.get(_name(package), ())) | {r for h in hist if h.package == _name(package)
                                                               for r in h.releases}
        if known:
            below = [Version(r) for r in known if Version(r) < Version(version)]
            wanted = str(max(below)) if below else None
        else:
            v = Version(version).release
            candidates = [s.version.removesuffix(".*") for s in SpecifierSet(pin.specifier)]
            candidates += [".".join(map(str, v[:-1] + (v[-1] - 1,)))] if v[-1] > 0 else []
            below = [c for c in candidates if _is_version(c) and Version(c) < Version(version) and pin.contains(c)]
            return ("hit" if below else "miss"), vs
    if wanted is None:
        return "unknown", vs
    return ("hit" if pin.contains(wanted) else "miss"), vs
