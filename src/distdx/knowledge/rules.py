"""Signature rules: typed loader and validator for ``rules/*.yaml``.

A rule file is YAML with ``version: 1`` and a list ``rules``. Each rule::

    - code: DX-NCCL-001            # stable, never reused: DX-<AREA>-NNN
      title: NCCL watchdog timed out on a collective
      status: stable               # stable | preview (fires; not yet a text-model document) | deprecated
      since: 0.2.0                 # the distdx release that introduced it (absent on older rules)
      severity: error              # error | warning | info
      weight: 1.0                  # strength of the evidence, 0 < w <= 1 (vague cues lower)
      patterns:                    # Python regexes; the rule fires on a line any of them matches
        - 'Watchdog caught collective operation timeout'
      requires: []                 # regexes that must also occur somewhere in the input
      excludes: []                 # regexes that veto the rule when they occur anywhere
      symptoms: {"4.7": 1.0}       # weighted taxonomy targets (stage follows from the symptom)
      root_causes: {R4.7: 0.6, R4.1: 0.4}
      fix_patterns: {F3: 0.7, F4: 0.3}
      why: Why this happens, in a few sentences.
      fix:                         # concrete steps: commands, config keys, environment variables
        - Set NCCL_DEBUG=INFO ...
      references:
        - {url: "https://...", title: "..."}
      fixtures:
        match: ["a trimmed real log line or block that must fire the rule"]
        no_match: ["a near miss that must not"]
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources

from distdx.errors import DistdxError
from distdx.knowledge.catalogue import (
    Reference,
    catalogue_error,
    entries,
    fix_steps,
    lifecycle,
    references,
    severity_of,
    words,
)
from distdx.knowledge.taxonomy import taxonomy
from distdx.yamlio import load_yaml

CODE_RE = re.compile(r"^DX-[A-Z0-9]+-\d{3}$")


class Pattern:
    """A rule's regular expression, compiled on first use and skipped without compiling when a
    literal it requires is absent from the text.

    The required literals (groups of runs of plain characters: every match contains one literal of
    each group) come from parsing the expression, which costs as much as compiling it, so they are
    worked out only by :meth:`prepare` when the rules are cached (``distdx.paths.cached``); a
    pattern without them simply compiles on first use.
    """

    __slots__ = ("pattern", "literals", "fold", "_compiled")

    def __init__(self, source: str) -> None:
        self.pattern = source
        self.literals: tuple[tuple[str, ...], ...] | None = None  # every match contains one of each group
        self.fold = False  # the expression ignores case: the literals are lower case, compare lower case
        self._compiled: re.Pattern[str] | None = None

    @property
    def compiled(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(self.pattern)
        return self._compiled

    def search(self, text: str, lowered: str | None = None) -> re.Match[str] | None:
        """``pattern.search(text)``; ``lowered`` is ``fold_case(text)`` when the caller has it."""
        return self.compiled.search(text) if self.could_occur(text, lowered) else None

    def could_occur(self, text: str, lowered: str | None = None) -> bool:
        """False only when no match can be in ``text`` (no literal of a required group is in it);
        ``lowered`` is ``fold_case(text)`` when the caller has it. Checked once over a whole document, it
        also spares the per-line search of patterns that cannot fire anywhere in it."""
        groups = self.literals
        if groups is None:
            return True
        hay = (lowered if lowered is not None else fold_case(text)) if self.fold else text
        for group in groups:
            for lit in group:
                if lit in hay:
                    break
            else:
                return False
        return True

    def prepare(self) -> None:
        """Work out the required literals (used before the rules are cached)."""
        self.literals, self.fold = required_literals(self.pattern)

    def __getstate__(self) -> tuple[str, tuple[tuple[str, ...], ...] | None, bool]:
        return self.pattern, self.literals, self.fold

    def __setstate__(self, state: tuple[str, tuple[tuple[str, ...], ...] | None, bool]) -> None:
        self.pattern, self.literals, self.fold = state
        self._compiled = None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Pattern) and other.pattern == self.pattern

    def __hash__(self) -> int:
        return hash(self.pattern)

    def __repr__(self) -> str:
        return f"Pattern({self.pattern!r})"


MIN_LITERAL = 3
# the characters that an ignore-case expression matches to an ASCII letter but whose str.lower()
# is not that letter (re folds one character at a time; "İ".lower() is two characters)
_FOLD_FIXES = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s"})


def fold_case(text: str) -> str:
    """``text`` lower-cased so that a literal of an ignore-case expression is in it whenever the
    expression can match in ``text`` (the haystack for :meth:`Pattern.could_occur`)."""
    lowered = text.lower()
    return lowered if lowered.isascii() else text.translate(_FOLD_FIXES).lower()


MAX_LITERAL_GROUPS = 4  # checking more of them costs more than the searches they spare


def required_literals(source: str) -> tuple[tuple[tuple[str, ...], ...] | None, bool]:
    """Groups of literals such that every match of ``source`` contains a literal of each group
    (None when none can be told), and whether they are compared ignoring case (the whole expression
    or a part of it, ``(?i:...)``, ignores case; the literals are then lower case). In a sequence
    every literal run, group and repeated-at-least-once item is required; alternatives (``a|b``)
    give a group of one literal each. Groups whose shortest literal is under MIN_LITERAL characters
    are left out, the longest ones are kept first."""
    try:
        from re import _constants as sre_constants  # type: ignore[attr-defined]
        from re import _parser as sre_parse  # type: ignore[attr-defined]
    except ImportError:  # Python 3.10
        import sre_constants  # type: ignore[no-redef]
        import sre_parse  # type: ignore[no-redef]
    try:
        parsed = sre_parse.parse(source)
    except Exception:
        return None, False
    ignore_case = bool(parsed.state.flags & re.IGNORECASE)
    folded = [ignore_case]  # some literal is matched ignoring case: all are then compared lower case
    literal, branch, subpattern = sre_constants.LITERAL, sre_constants.BRANCH, sre_constants.SUBPATTERN
    repeats = (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT)

    def score(group: tuple[str, ...]) -> int:
        return min(map(len, group))

    def of_sequence(items) -> list[tuple[str, ...]]:
        """The groups (of MIN_LITERAL characters or more) every match of ``items`` satisfies."""
        groups: list[tuple[str, ...]] = []
        run: list[str] = []
        for op, arg in list(items) + [(None, None)]:
            if op is literal:
                run.append(chr(arg))
                continue
            if run:
                groups.append(("".join(run),))
                run = []
            if op is subpattern:
                if arg[1] & re.IGNORECASE:  # a group with scoped flags: (?i:...)
                    folded[0] = True
                groups.extend(of_sequence(arg[3]))
            elif op is branch:
                best = [max(of_sequence(p), key=score, default=None) for p in arg[1]]
                if all(best):
                    groups.append(tuple(a for b in best for a in b))  # type: ignore[union-attr]
            elif op in repeats and arg[0] >= 1:
                groups.extend(of_sequence(arg[2]))
        return [g for g in groups if score(g) >= MIN_LITERAL]

    groups = of_sequence(parsed)
    fold = folded[0]
    # compared lower case, a literal is found in fold_case(text) whenever the expression can match
    # (a case-sensitive one too), but str.lower() is not re's case folding beyond ASCII
    found = sorted((g for g in groups if not fold or all(a.isascii() for a in g)), key=score, reverse=True)
    found = found[:MAX_LITERAL_GROUPS]
    if not found:
        return None, fold
    lowered = (tuple(dict.fromkeys(a.lower() if fold else a for a in group)) for group in found)
    return tuple(dict.fromkeys(lowered)), fold


@dataclass(frozen=True)
class Rule:
    code: str
    title: str
    patterns: tuple[Pattern, ...]
    symptoms: dict[str, float]
    root_causes: dict[str, float]
    fix_patterns: dict[str, float]
    why: str
    fix: tuple[str, ...]
    status: str = "stable"
    since: str = ""  # the distdx release that introduced it ("" for rules older than the field)
    severity: str = "error"
    weight: float = 1.0
    cascade: bool = False
    requires: tuple[Pattern, ...] = ()
    excludes: tuple[Pattern, ...] = ()
    references: tuple[Reference, ...] = ()
    fixtures_match: tuple[str, ...] = ()
    fixtures_no_match: tuple[str, ...] = ()
    source: str = ""  # the YAML file the rule came from
    stages: dict[str, float] = field(default_factory=dict)  # derived from symptoms

    def first_match(self, line: str, lowered: str | None = None) -> re.Match[str] | None:
        for pattern in self.patterns:
            m = pattern.search(line, lowered)
            if m:
                return m
        return None

    def applies_to(self, whole_text: str, requires_text: str | None = None) -> bool:
        """The document-level conditions: every ``requires`` occurs (in ``requires_text`` when
        given, else in ``whole_text``) and no ``excludes`` occurs in ``whole_text``."""
        within = whole_text if requires_text is None else requires_text
        if any(p.search(within) is None for p in self.requires):
            return False
        return not any(p.search(whole_text) for p in self.excludes)

    def matches_text(self, text: str) -> bool:
        """Whether the rule fires anywhere in ``text`` (used by fixtures and docs)."""
        if not self.applies_to(text):
            return False
        return any(self.first_match(line) for line in text.splitlines())


def _fail(source: str, code: str, what: str) -> DistdxError:
    return catalogue_error("DX-KB-001", f"src/distdx/knowledge/rules/{source}" if source else "a rule file", code, what)


def _compile(source: str, code: str, patterns: object, key: str) -> tuple[Pattern, ...]:
    if patterns is None:
        return ()
    if isinstance(patterns, str):
        patterns = [patterns]
    if not isinstance(patterns, list):
        raise _fail(source, code, f"{key} must be a list of regexes")
    compiled = []
    for p in patterns:
        pattern = Pattern(str(p))
        try:
            pattern.compiled  # noqa: B018 - validated when loaded, so a broken rule never silently stops firing
        except re.error as e:
            raise _fail(source, code, f"{key} regex {p!r} does not compile: {e}") from None
        compiled.append(pattern)
    return tuple(compiled)


def _weights(source: str, code: str, spec: dict, key: str, dimension: str) -> dict[str, float]:
    raw = spec.get(key) or {}
    if not isinstance(raw, dict) or not raw:
        raise _fail(source, code, f"{key} must be a non-empty mapping of {dimension} IDs to weights")
    tax = taxonomy()
    out: dict[str, float] = {}
    for node_id, w in raw.items():
        node_id = str(node_id)
        if node_id not in tax or tax.nodes[node_id].dimension != dimension:
            raise _fail(source, code, f"{key} names {node_id!r}, which is not a {dimension} ID")
        if not isinstance(w, (int, float)) or not 0 < float(w) <= 1:
            raise _fail(source, code, f"{key}[{node_id}] weight must be in (0, 1]")
        out[node_id] = float(w)
    total = sum(out.values())
    return {k: v / total for k, v in out.items()}


def _parse_rule(source: str, spec: dict, cascade_rules: frozenset[str] = frozenset()) -> Rule:
    code = str(spec.get("code", ""))
    if not CODE_RE.match(code):
        raise _fail(source, code, "code must look like DX-AREA-001")
    for required in ("title", "patterns", "why", "fix"):
        if not spec.get(required):
            raise _fail(source, code, f"missing {required}")
    status, since = lifecycle(spec, code="DX-KB-001", data_file=f"src/distdx/knowledge/rules/{source}", entry=code)
    severity = spec.get("severity", "error")
    severity_of(severity, code="DX-KB-001", data_file=f"src/distdx/knowledge/rules/{source}", entry=code)
    weight = float(spec.get("weight", 1.0))
    if not 0 < weight <= 1:
        raise _fail(source, code, "weight must be in (0, 1]")
    symptoms = _weights(source, code, spec, "symptoms", "symptom")
    stages: dict[str, float] = {}
    tax = taxonomy()
    for sym, w in symptoms.items():
        stage = tax.nodes[sym].stage
        stages[stage] = stages.get(stage, 0.0) + w  # type: ignore[index]
    fixtures = spec.get("fixtures") or {}
    refs = references(spec.get("references"), code="DX-KB-001", data_file=f"src/distdx/knowledge/rules/{source}",
                      entry=code)
    if "cascade" in spec:
        raise _fail(source, code, "whether a rule's line is a consequence of a failure elsewhere is said in "
                                  "src/distdx/cascade.yaml (its `rules` list), not in the rule")
    return Rule(
        code=code,
        title=str(spec["title"]),
        patterns=_compile(source, code, spec["patterns"], "patterns"),
        requires=_compile(source, code, spec.get("requires"), "requires"),
        excludes=_compile(source, code, spec.get("excludes"), "excludes"),
        symptoms=symptoms,
        root_causes=_weights(source, code, spec, "root_causes", "root_cause"),
        fix_patterns=_weights(source, code, spec, "fix_patterns", "fix_pattern"),
        why=words(spec["why"]),
        fix=fix_steps(spec["fix"]),
        status=status,
        since=since,
        severity=severity,
        weight=weight,
        cascade=code in cascade_rules,
        references=refs,
        fixtures_match=tuple(str(s) for s in fixtures.get("match") or ()),
        fixtures_no_match=tuple(str(s) for s in fixtures.get("no_match") or ()),
        source=source,
        stages=stages,
    )


def parse_rule_file(source: str, text: str, cascade_rules: frozenset[str] = frozenset()) -> list[Rule]:
    """The rules of one file; ``cascade_rules`` are the codes ``cascade.yaml`` lists as consequences."""
    specs = entries(text, "rules", code="DX-KB-001", data_file=f"src/distdx/knowledge/rules/{source}")
    return [_parse_rule(source, spec if isinstance(spec, dict) else {}, cascade_rules) for spec in specs]


def cascade_file() -> bytes:
    return resources.files("distdx").joinpath("cascade.yaml").read_bytes()


def cascade_rules(data: bytes | None = None) -> frozenset[str]:
    """The codes of the signature rules that ``distdx/cascade.yaml`` lists as consequences."""
    doc = load_yaml((data if data is not None else cascade_file()).decode("utf-8"))
    return frozenset(str(c) for c in (doc.get("rules") or ()))


def rule_files() -> list[tuple[str, bytes]]:
    """(name, bytes) of the bundled rule files, in name order."""
    folder = resources.files("distdx.knowledge").joinpath("rules")
    return [(e.name, e.read_bytes()) for e in sorted(folder.iterdir(), key=lambda e: e.name) if e.name.endswith(".yaml")]


@lru_cache(maxsize=1)
def load_rules() -> tuple[Rule, ...]:
    """All rules of the bundled knowledge base, in file then definition order; codes are unique.
    Parsed once per version of the rule files and then read from the knowledge cache."""
    from distdx.paths import cache_dir, cached

    files = rule_files()
    cascade = cascade_file()
    if cache_dir() is None:  # working out the literals pays only when they are kept
        return _parse_rule_files(files, cascade, prepare=False)
    taxonomy_file = resources.files("distdx.knowledge").joinpath("taxonomy.yaml").read_bytes()
    return cached("rules", [b for _, b in files] + [taxonomy_file, cascade],
                  lambda: _parse_rule_files(files, cascade))


def _parse_rule_files(files: list[tuple[str, bytes]], cascade: bytes, prepare: bool = True) -> tuple[Rule, ...]:
    rules: list[Rule] = []
    seen: dict[str, str] = {}
    consequences = cascade_rules(cascade)
    for name, data in files:
        for rule in parse_rule_file(name, data.decode("utf-8"), consequences):
            if rule.code in seen:
                raise _fail(name, rule.code, f"code already used in {seen[rule.code]}")
            seen[rule.code] = name
            rules.append(rule)
    unknown = sorted(consequences - set(seen))
    if unknown:
        raise catalogue_error("DX-KB-001", "src/distdx/cascade.yaml", unknown[0],
                              "its `rules` list names a code that is no signature rule")
    for rule in rules if prepare else ():
        for pattern in (*rule.patterns, *rule.requires, *rule.excludes):
            pattern.prepare()
    return tuple(rules)


PROVENANCES = ("source", "issues", "lab", "guard", "mixed")


@dataclass(frozen=True)
class RuleArea:
    """One area of the rule codes (``areas.yaml``): what its rules are about, the one file that
    holds them, and where they came from."""

    area: str
    subject: str
    file: str
    provenance: str


def _area_fail(area: str, what: str) -> DistdxError:
    return catalogue_error("DX-KB-001", "src/distdx/knowledge/areas.yaml", area, what)


@lru_cache(maxsize=1)
def rule_areas() -> dict[str, RuleArea]:
    """The areas of the rule codes, by area name (``DX-<AREA>-NNN``), in file order."""
    data = load_yaml(resources.files("distdx.knowledge").joinpath("areas.yaml").read_text(encoding="utf-8"))
    if not isinstance(data, dict) or data.get("version") != 1 or not isinstance(data.get("areas"), dict):
        raise _area_fail("", "the file is a mapping with `version: 1` and a mapping `areas`")
    files = {name for name, _ in rule_files()}
    out: dict[str, RuleArea] = {}
    for area, spec in data["areas"].items():
        area = str(area)
        if not re.fullmatch(r"[A-Z0-9]+", area) or not isinstance(spec, dict):
            raise _area_fail(area, "an area is upper-case letters and digits, mapped to subject, file and provenance")
        missing = [k for k in ("subject", "file", "provenance") if not spec.get(k)]
        if missing:
            raise _area_fail(area, f"missing {', '.join(missing)}")
        if spec["file"] not in files:
            raise _area_fail(area, f"file {spec['file']!r} is not a rule file")
        if spec["provenance"] not in PROVENANCES:
            raise _area_fail(area, f"provenance must be one of {PROVENANCES}")
        out[area] = RuleArea(area, " ".join(str(spec["subject"]).split()), str(spec["file"]), str(spec["provenance"]))
    return out

