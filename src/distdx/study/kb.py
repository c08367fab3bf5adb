"""Adjudicated issues -> the known-issue index that ``distdx diagnose`` cites and learns from."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from distdx.errors import DistdxError
from distdx.knowledge.known_issues import KnownIssue, index_text, issue_from_case, read_cases, user_index_path
from distdx.paths import write_atomic


@dataclass(frozen=True)
class KbBuild:
    sources: tuple[str, ...]
    out: Path
    issues: int
    skipped_duplicates: int


def known_issues_from(source: str, skip_splits: tuple[str, ...] = ()) -> list[KnownIssue]:
    """Known issues from a case-format JSONL file, or from a study database's adjudicated issues.
    Cases whose ``split`` is in ``skip_splits`` (a frozen test split, say) are left out."""
    if source.endswith(".jsonl"):
        label = Path(source).name
        return [issue_from_case(c, label, (source, n)) for n, c in enumerate(read_cases(source), 1)
                if c.get("split") not in skip_splits]
    if "://" not in source and not Path(source).is_file():
        raise DistdxError("DX-STUDY-100", f"nothing to build from at {source}",
                          hint="give a case-format .jsonl file or a study database (path or SQLAlchemy URL)")
    from distdx.study.annotate import export_records
    from distdx.study.store import open_store

    with open_store(source) as store:
        records = export_records(store, final=True)
    if not records:
        raise DistdxError("DX-STUDY-101", f"{source} has no adjudicated issue",
                          hint="run `distdx study adjudicate` first")
    label = Path(source).name if "://" not in source else source.split("://")[0]
    return [issue_from_case({"id": r.id, "url": r.url, **r.case, "labels": r.labels.to_dict()}, label, (source, n))
            for n, r in enumerate(records, 1) if r.case.get("split") not in skip_splits]


def build_kb(sources: str | list[str] | tuple[str, ...], out: str | Path | None = None,
             skip_splits: tuple[str, ...] = (), force: bool = False) -> KbBuild:
    """One index from one or more sources; an issue in several (the same id) is indexed once,
    from the first source that has it. Written to ``out`` or the user's index (never into the
    installed package unless ``out`` says so), atomically; an existing file is replaced only with
    ``force``."""
    sources = (sources,) if isinstance(sources, str) else tuple(sources)
    issues = [issue for source in sources for issue in known_issues_from(source, skip_splits)]
    unique: dict[str, KnownIssue] = {}
    for issue in issues:  # the same issue twice (e.g. two imports) is indexed once
        unique.setdefault(issue.id, issue)
    target = Path(out) if out else user_index_path()
    if target.exists() and not force:
        raise DistdxError("DX-STUDY-103", f"{target} exists already",
                          why="replacing it would lose the index it holds",
                          hint="pass --force to replace it, or --out another path")
    try:
        write_atomic(target, index_text(list(unique.values())), force=True, what="index")
    except DistdxError as e:  # the index's own code, with write_atomic's account of the cause
        raise DistdxError("DX-STUDY-102", e.message, why=e.why, hint="pick another --out") from None
    return KbBuild(sources, target, len(unique), len(issues) - len(unique))
