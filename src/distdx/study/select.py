"""The study's selection criteria as named, composable filters, and the funnel they make.

The study kept closed issues labelled ``bug`` without a linked pull request (its step 1), then
dropped those without a clear description or without any comment (its dataset construction).
Each criterion here is a :class:`Filter` with a stable name; :func:`select` applies them in the
order given and counts what is left after each one. The manual parts of the study's screening
(internal framework fixes, non-bug questions) stay manual: that is what annotation is for.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Callable

from distdx.errors import DistdxError
from distdx.study.store import Store


@dataclass(frozen=True)
class MinedIssue:
    repo: str
    number: int
    title: str
    body: str
    state: str
    labels: tuple[str, ...]
    comments: int
    created_at: str | None
    closed_at: str | None
    url: str
    timeline_synced: bool
    linked_prs: tuple[str, ...] = ()  # "owner/repo#n" of pull requests linked to the issue
    case: dict | None = None  # case-format fields, for issues imported from a labelled file

    @property
    def key(self) -> str:
        return f"{self.repo}#{self.number}"


@dataclass(frozen=True)
class SelectOptions:
    bug_labels: tuple[str, ...] = ("bug",)
    min_comments: int = 1
    min_description_chars: int = 80


@dataclass(frozen=True)
class Filter:
    name: str
    description: str
    keep: Callable[[MinedIssue, SelectOptions], bool] = field(compare=False)


_HTML_COMMENT = re.compile(r"<!--.*?-->", re.S)
_TEMPLATE_LINE = re.compile(r"^\s*(#{1,6}\s.*|[-*]\s*\[[ xX]\]\s.*|\*\*[^*]{1,60}\*\*:?\s*)$", re.M)


def description_text(body: str) -> str:
    """The body without issue-template comments, headings and checkbox lines."""
    text = _HTML_COMMENT.sub("", body or "")
    text = _TEMPLATE_LINE.sub("", text)
    return re.sub(r"\s+", " ", text).strip()


FILTERS: dict[str, Filter] = {f.name: f for f in (
    Filter("closed", "closed issues", lambda i, o: i.state == "closed"),
    Filter("bug", "labelled as a bug", lambda i, o: any(l.lower() in {b.lower() for b in o.bug_labels} for l in i.labels)),
    Filter("no-linked-pr", "no linked pull request (timeline: connected, or referenced by a PR of the same repo)",
           lambda i, o: i.timeline_synced and not i.linked_prs),
    Filter("commented", "at least one comment", lambda i, o: i.comments >= o.min_comments),
    Filter("described", "a real description (template text removed)",
           lambda i, o: len(description_text(i.body)) >= o.min_description_chars),
)}
STUDY_ORDER = ("closed", "bug", "no-linked-pr", "commented", "described")


@dataclass(frozen=True)
class FunnelStep:
    name: str
    description: str
    remaining: int
    removed: int


@dataclass(frozen=True)
class Selection:
    repos: tuple[str, ...]
    total: int
    steps: tuple[FunnelStep, ...]
    selected: tuple[MinedIssue, ...]

    def to_dict(self) -> dict:
        return {
            "repos": list(self.repos),
            "total": self.total,
            "funnel": [vars(s) for s in self.steps],
            "selected": [i.key for i in self.selected],
        }


def parse_filters(spec: str | None) -> tuple[str, ...]:
    if not spec:
        return STUDY_ORDER
    names = tuple(n.strip() for n in spec.split(",") if n.strip())
    unknown = [n for n in names if n not in FILTERS]
    if unknown:
        raise DistdxError("DX-STUDY-040", f"unknown filter {unknown[0]!r}",
                          why="filters are " + ", ".join(FILTERS), hint="e.g. --filters closed,bug,commented")
    return names


def load_issues(store: Store, repos: tuple[str, ...] = ()) -> list[MinedIssue]:
    """Every issue in the database (of the given repositories), with its linked pull requests."""
    import sqlalchemy as sa

    t = store.t
    issues, events = t["issues"], t["events"]
    where = [issues.c.repo.in_(repos)] if repos else []
    linked: dict[tuple[str, int], list[str]] = {}
    with store.connect() as conn:
        rows = list(conn.execute(sa.select(issues).where(*where).order_by(issues.c.repo, issues.c.number)).mappings())
        ev_where = [events.c.repo.in_(repos)] if repos else []
        for ev in conn.execute(sa.select(events.c.repo, events.c.number, events.c.event, events.c.source_repo,
                                         events.c.source_number, events.c.source_is_pr)
                               .where(events.c.event.in_(("connected", "cross-referenced")), *ev_where)):
            if ev.event == "connected":
                linked.setdefault((ev.repo, ev.number), []).append("connected")
            elif ev.source_is_pr and (ev.source_repo or "").lower() == ev.repo.lower():
                linked.setdefault((ev.repo, ev.number), []).append(f"{ev.source_repo}#{ev.source_number}")
    out = []
    for r in rows:
        case = json.loads(r["case_json"]) if r["case_json"] else None
        out.append(MinedIssue(
            repo=r["repo"], number=r["number"], title=r["title"], body=r["body"], state=r["state"],
            labels=tuple(json.loads(r["labels"] or "[]")), comments=r["comments"], created_at=r["created_at"],
            closed_at=r["closed_at"], url=r["html_url"], timeline_synced=r["timeline_synced"] is not None or bool(case),
            linked_prs=tuple(sorted(set(linked.get((r["repo"], r["number"]), [])))), case=case,
        ))
    return out


def select(issues: list[MinedIssue], filters: tuple[str, ...] = STUDY_ORDER,
           options: SelectOptions = SelectOptions()) -> Selection:
    """Apply the named filters in order; the funnel counts what is left after each."""
    left = list(issues)
    steps = []
    for name in filters:
        f = FILTERS[name]
        kept = [i for i in left if f.keep(i, options)]
        steps.append(FunnelStep(name, f.description, len(kept), len(left) - len(kept)))
        left = kept
    repos = tuple(sorted({i.repo for i in issues}))
    return Selection(repos=repos, total=len(issues), steps=tuple(steps), selected=tuple(left))
