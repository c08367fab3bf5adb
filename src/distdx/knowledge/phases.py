"""Phase markers (``phases.yaml``): which stage of a job the input shows was running."""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources

from distdx.errors import DistdxError
from distdx.knowledge.taxonomy import taxonomy
from distdx.knowledge.yamlio import load_yaml


@lru_cache(maxsize=1)
def phase_markers() -> dict[str, tuple[re.Pattern[str], ...]]:
    data = load_yaml(resources.files("distdx.knowledge").joinpath("phases.yaml").read_text(encoding="utf-8"))
    stages = set(taxonomy().ids("stage"))
    if not isinstance(data, dict) or data.get("version") != 1 or set(data.get("phases", {})) - stages:
        raise DistdxError("DX-KB-005", "phases.yaml must have `version: 1` and phases keyed by stage IDs",
                          hint="fix src/distdx/knowledge/phases.yaml", exit_code=3)
    return {stage: tuple(re.compile(p) for p in patterns) for stage, patterns in data["phases"].items()}


def phase_evidence(text: str) -> dict[str, int]:
    """Number of distinct markers of each stage found in ``text``."""
    return {stage: sum(1 for p in patterns if p.search(text)) for stage, patterns in phase_markers().items()}
