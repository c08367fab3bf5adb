"""Phase markers (``phases.yaml``): which stage of a job the input shows was running, the failure
cues that say the input reports a problem at all, and the symptom cues that say what kind of failure
it was (a symptom per stage)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from distdx.errors import DistdxError
from distdx.knowledge.rules import Pattern, fold_case
from distdx.knowledge.taxonomy import taxonomy
from distdx.yamlio import load_yaml


def _validated(raw: bytes) -> dict:
    data = load_yaml(raw.decode("utf-8"))
    tax = taxonomy()
    stages = set(tax.ids("stage"))
    if (not isinstance(data, dict) or data.get("version") != 1 or set(data.get("phases", {})) - stages
            or not isinstance(data.get("failure"), list)):
        raise DistdxError("DX-KB-005", "phases.yaml must have `version: 1`, phases keyed by stage IDs, a `failure` list and well-formed symptom families",
                          hint="fix src/distdx/knowledge/phases.yaml", exit_code=3)
    for family in data.get("symptoms") or []:
        mapping = family.get("symptoms") if isinstance(family, dict) else None
        if (not isinstance(mapping, dict) or not mapping or not family.get("family")
                or not isinstance(family.get("patterns"), list) or not family["patterns"]
                or any(tax.stage_of(str(symptom)) != stage for stage, symptom in mapping.items())):
            raise DistdxError("DX-KB-005", f"phases.yaml: symptom family {family!r:.80} is malformed",
                              why="each family needs a name, patterns, and per stage a symptom of that stage",
                              hint="fix src/distdx/knowledge/phases.yaml", exit_code=3)
    return data


@dataclass(frozen=True)
class SymptomFamily:
    """A kind of failure told in words (``symptoms`` in ``phases.yaml``) and its symptom in each stage."""

    name: str
    symptoms: dict[str, str]  #: stage -> symptom
    patterns: tuple[Pattern, ...]


def _phases_file() -> bytes:
    return resources.files("distdx.knowledge").joinpath("phases.yaml").read_bytes()


def _build(data: bytes, prepare: bool = True) -> tuple[dict[str, tuple[Pattern, ...]], tuple[Pattern, ...],
                                                      tuple[SymptomFamily, ...]]:
    doc = _validated(data)
    markers = {stage: tuple(Pattern(p) for p in patterns) for stage, patterns in doc["phases"].items()}
    cues = tuple(Pattern(p) for p in doc["failure"])
    families = tuple(SymptomFamily(str(f["family"]), {str(k): str(v) for k, v in f["symptoms"].items()},
                                   tuple(Pattern(p) for p in f["patterns"])) for f in doc.get("symptoms") or [])
    for pattern in (*(p for ps in markers.values() for p in ps), *cues, *(p for f in families for p in f.patterns)):
        pattern.compiled  # noqa: B018 - a broken expression fails here, not in the middle of a diagnosis
        if prepare:
            pattern.prepare()
    return markers, cues, families


@lru_cache(maxsize=1)
def _patterns() -> tuple[dict[str, tuple[Pattern, ...]], tuple[Pattern, ...], tuple[SymptomFamily, ...]]:
    """The markers and cues as :class:`Pattern` objects with their required literals, which spare
    the search of an expression whose literal is absent; kept in the knowledge cache like the rules."""
    from distdx.paths import cache_dir, cached

    data = _phases_file()
    if cache_dir() is None:  # working out the literals pays only when they are kept
        return _build(data, prepare=False)
    taxonomy_file = resources.files("distdx.knowledge").joinpath("taxonomy.yaml").read_bytes()
    return cached("phases", [data, taxonomy_file], lambda: _build(data))


def phase_markers() -> dict[str, tuple[Pattern, ...]]:
    return _patterns()[0]


def failure_cues() -> tuple[Pattern, ...]:
    return _patterns()[1]


def symptom_families() -> tuple[SymptomFamily, ...]:
    return _patterns()[2]


_WORD = re.compile(r"[A-Za-z][a-z'-]+[,.;:]?")
# a logger's line (timestamp, level, bracketed source, a dict of metrics) is output, not prose
_LOGGED = re.compile(r"^\s*[\[{(<\d]|\b(?:INFO|DEBUG|WARN(?:ING)?|NOTICE)\b")
PROSE_WORDS = 10  # a line of at least this many plain words is someone describing what happened


def may_report_failure(text: str) -> bool:
    """Whether ``text`` may say that something went wrong: a failure cue anywhere, or prose (an
    issue is written to report a problem, in words no list of cues covers). Only a log with
    neither, or a blank input, reports nothing."""
    lowered = fold_case(text)
    if any(p.search(text, lowered) for p in failure_cues()):
        return True
    for line in text.splitlines():
        if _LOGGED.search(line):
            continue
        tokens = line.split()
        if len(tokens) >= PROSE_WORDS and sum(1 for t in tokens if _WORD.fullmatch(t)) >= 0.5 * len(tokens):
            return True
    return False


def phase_evidence(text: str) -> dict[str, int]:
    """Number of distinct markers of each stage found in ``text``."""
    lowered = fold_case(text)
    return {stage: sum(1 for p in patterns if p.search(text, lowered)) for stage, patterns in phase_markers().items()}


def symptom_evidence(text: str) -> tuple[tuple[SymptomFamily, int], ...]:
    """The symptom families ``text`` tells of, each with its number of distinct cues found."""
    lowered = fold_case(text)
    found = ((f, sum(1 for p in f.patterns if p.search(text, lowered))) for f in symptom_families())
    return tuple((f, n) for f, n in found if n)
