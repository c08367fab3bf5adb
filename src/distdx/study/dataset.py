"""A labelled data set, from a case-format JSONL file or from a study database's final labels."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from distdx.errors import DistdxError
from distdx.study.records import FRAMEWORK_OF_REPO, LabelledIssue, LabelSet


def _days(created: object, closed: object) -> float | None:
    if not created or not closed:
        return None
    try:
        start = datetime.fromisoformat(str(created).replace("Z", "+00:00"))
        end = datetime.fromisoformat(str(closed).replace("Z", "+00:00"))
    except ValueError:
        return None
    return max(0.0, (end - start).total_seconds() / 86400.0)


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def from_case(case: dict, where: str) -> LabelledIssue:
    if not case.get("id"):
        raise DistdxError("DX-STUDY-080", f"{where}: a case has no id", hint="see shared/cases/CASES.md")
    annotations = case.get("annotations") if isinstance(case.get("annotations"), dict) else {}
    return LabelledIssue(
        id=str(case["id"]),
        url=str(case.get("url") or ""),
        framework=str(case.get("framework") or ""),
        title=str(case.get("title") or ""),
        labels=LabelSet.from_dict(case.get("labels"), where),
        comments=_int_or_none(case.get("comments")),
        open_days=_days(case.get("created_at"), case.get("closed_at")),
        label_source=str(case.get("label_source") or ""),
        annotations={str(k): LabelSet.from_dict(v, f"{where} annotations.{k}") for k, v in annotations.items()},
    )


def load_dataset(source: str) -> list[LabelledIssue]:
    """Read ``source``: a ``.jsonl`` case file, else a study database (path or SQLAlchemy URL)."""
    if source.endswith(".jsonl"):
        from distdx.knowledge.known_issues import read_cases

        return [from_case(c, f"{source}:{n}") for n, c in enumerate(read_cases(source), 1)]
    if "://" not in source and not Path(source).is_file():
        raise DistdxError("DX-STUDY-081", f"no data set at {source}",
                          hint="give a case-format .jsonl file or a study database made by `distdx study mine`")
    from distdx.study.annotate import export_records
    from distdx.study.store import open_store

    with open_store(source) as store:
        records = export_records(store, final=True)
    out = []
    for r in records:
        case = {"id": r.id, "url": r.url, **r.case, "labels": r.labels.to_dict()}
        out.append(from_case(json.loads(json.dumps(case)), f"{source}:{r.id}"))
    return out


def framework_of(issue: LabelledIssue) -> str:
    if issue.framework:
        return issue.framework
    parts = issue.url.split("/")
    return FRAMEWORK_OF_REPO.get("/".join(parts[3:5]).lower(), "other") if len(parts) > 4 else "other"
