"""Typed records shared by the study's modules: one issue's labels, and a labelled issue."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from distdx.errors import DistdxError
from distdx.knowledge.taxonomy import UNKNOWN, taxonomy

# The five things an annotator decides per issue, in the order the terminal asks them.
DIMENSIONS = ("stage", "symptom", "root_cause", "fix_pattern", "distributed_specific")
TAXONOMY_DIMENSIONS = DIMENSIONS[:4]

# Repositories whose issues the case format names `<framework>-<number>`.
FRAMEWORK_OF_REPO = {
    "microsoft/deepspeed": "deepspeed",
    "deepspeedai/deepspeed": "deepspeed",
    "nvidia/megatron-lm": "megatron-lm",
    "hpcaitech/colossalai": "colossalai",
    "pytorch/pytorch": "torch.distributed",
}

_ISSUE_URL = re.compile(r"^https?://[^/]+/(?P<repo>[^/\s]+/[^/\s]+)/(?:issues|pull)/(?P<number>[0-9]{1,12})/?$")


def bad_labels(where: str, what: str) -> DistdxError:
    return DistdxError(
        "DX-STUDY-010",
        f"{where}: {what}",
        why="labels must be IDs of the study's taxonomy (S1..S5, 1.1..5.11, R1.1..R5.6, F1..F6) or 'unknown'",
        hint="run `distdx taxonomy` to list the IDs",
    )


def parse_bool_label(value: object, where: str = "<labels>") -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "yes", "y", "1"):
        return True
    if text in ("false", "no", "n", "0"):
        return False
    if text in ("", UNKNOWN, "none", "null", "u"):
        return None
    raise bad_labels(where, f"distributed_specific={value!r} is not true, false or unknown")


@dataclass(frozen=True)
class LabelSet:
    """One annotator's (or the adjudicated) labels for one issue."""

    stage: str = UNKNOWN
    symptom: str = UNKNOWN
    root_cause: str = UNKNOWN
    fix_pattern: str = UNKNOWN
    distributed_specific: bool | None = None

    def value(self, dimension: str) -> str:
        """The label as a category name: taxonomy ID, ``true``/``false``, or ``unknown``."""
        raw = getattr(self, dimension)
        if dimension == "distributed_specific":
            return UNKNOWN if raw is None else ("true" if raw else "false")
        return raw

    def to_dict(self) -> dict[str, object]:
        return {d: getattr(self, d) for d in DIMENSIONS}

    @classmethod
    def from_dict(cls, data: object, where: str = "<labels>") -> "LabelSet":
        if not isinstance(data, dict):
            raise bad_labels(where, "labels are not an object")
        tax = taxonomy()
        values: dict[str, object] = {}
        for dim in TAXONOMY_DIMENSIONS:
            value = data.get(dim, UNKNOWN)
            value = UNKNOWN if value in (None, "") else str(value).strip()
            if value != UNKNOWN and (value not in tax or tax.nodes[value].dimension != dim):
                raise bad_labels(where, f"{dim}={value!r} is not a {dim.replace('_', ' ')} ID")
            values[dim] = value
        values["distributed_specific"] = parse_bool_label(data.get("distributed_specific"), where)
        return cls(**values)  # type: ignore[arg-type]

    def differences(self, other: "LabelSet") -> tuple[str, ...]:
        return tuple(d for d in DIMENSIONS if self.value(d) != other.value(d))


@dataclass(frozen=True)
class LabelledIssue:
    """An issue with final labels, as the report and the knowledge base see it."""

    id: str
    url: str
    framework: str
    title: str
    labels: LabelSet
    comments: int | None = None  # number of comments, where the data has it
    open_days: float | None = None  # created -> closed, where the data has it
    label_source: str = ""
    annotations: dict[str, LabelSet] = field(default_factory=dict)


def split_issue_url(url: str) -> tuple[str, int] | None:
    """``https://github.com/owner/repo/issues/12`` -> ``("owner/repo", 12)``."""
    m = _ISSUE_URL.match(url.strip())
    return (m["repo"], int(m["number"])) if m else None


def case_id(repo: str, number: int) -> str:
    """The case format's id: ``<framework>-<number>`` for the study's repos, else ``owner-repo-number``."""
    framework = FRAMEWORK_OF_REPO.get(repo.lower())
    if framework and framework != "torch.distributed":
        return f"{framework}-{number}"
    return f"{repo.replace('/', '-').lower()}-{number}"
