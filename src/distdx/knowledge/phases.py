"""Phase markers (``phases.yaml``): which stage of a job the input shows was running, and the
failure cues that say the input reports a problem at all."""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources

from distdx.errors import DistdxError
from distdx.knowledge.taxonomy import taxonomy
from distdx.yamlio import load_yaml


@lru_cache(maxsize=1)
def _data() -> dict:
    data = load_yaml(resources.files("distdx.knowledge").joinpath("phases.yaml").read_text(encoding="utf-8"))
    stages = set(taxonomy().ids("stage"))
    if (not isinstance(data, dict) or data.get("version") != 1 or set(data.get("phases", {})) - stages
            or not isinstance(data.get("failure"), list)):
        raise DistdxError("DX-KB-005", "phases.yaml must have `version: 1`, phases keyed by stage IDs and a `failure` list",
                          hint="fix src/distdx/knowledge/phases.yaml", exit_code=3)
    return data


@lru_cache(maxsize=1)
def phase_markers() -> dict[str, tuple[re.Pattern[str], ...]]:
    return {stage: tuple(re.compile(p) for p in patterns) for stage, patterns in _data()["phases"].items()}


@lru_cache(maxsize=1)
def failure_cues() -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p) for p in _data()["failure"])


_WORD = re.compile(r"[A-Za-z][a-z'-]+[,.;:]?")
# a logger's line (timestamp, level, bracketed source, a dict of metrics) is output, not prose
_LOGGED = re.compile(r"^\s*[\[{(<\d]|\b(?:INFO|DEBUG|WARN(?:ING)?|NOTICE)\b")
PROSE_WORDS = 10  # a line of at least this many plain words is someone describing what happened


def may_report_failure(text: str) -> bool:
    """Whether ``text`` may say that something went wrong: a failure cue anywhere, or prose (an
    issue is written to report a problem, in words no list of cues covers). Only a log with
    neither, or a blank input, reports nothing."""
    if any(p.search(text) for p in failure_cues()):
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
    return {stage: sum(1 for p in patterns if p.search(text)) for stage, patterns in phase_markers().items()}
