"""Mine one repository's issues, comments and timeline events into the study database.

A run has two phases. *list* walks ``GET /repos/{repo}/issues`` (sorted by update time, oldest
first, from ``since``) page by page; each page's issues and the URL of the next page are
committed in one transaction. *timelines* then fetches ``GET /repos/{repo}/issues/{n}/timeline``
for every issue whose timeline is older than the issue; the ``commented`` events are the
comments (one request series instead of two), ``connected`` and ``cross-referenced`` events
tell which pull requests are linked. An issue's timeline and its "synced" mark are committed
together. Killed at any point, the next run resumes from the stored state; because every write
is an upsert, a page or timeline fetched twice leaves one copy.

When a run completes, the largest ``updated_at`` it listed becomes the repository's cursor, and
the next run without ``--since`` asks only for issues updated since then. Page-number pagination
over a list that changes can skip an item (an issue updated mid-run moves to the end and shifts
the rest up); when the listing saw an update newer than the run's start, the cursor is therefore
not advanced, so the next run lists that stretch again.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable
from urllib.parse import parse_qs, urlsplit

from distdx.errors import DistdxError
from distdx.study.github import GitHubClient, Page
from distdx.study.records import split_issue_url
from distdx.study.store import Store, dumps

_REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})?)?$")


@dataclass(frozen=True)
class MineOptions:
    repo: str
    state: str = "all"  # all | open | closed
    labels: str | None = None  # comma-separated label names the API filters on
    since: str | None = None  # ISO date/time; None: continue from the last complete run
    per_page: int = 100
    restart: bool = False  # drop an unfinished run instead of resuming it


@dataclass(frozen=True)
class MineProgress:
    phase: str  # list | timelines
    done: int
    total: int | None
    detail: str = ""


@dataclass(frozen=True)
class MineResult:
    repo: str
    resumed: bool
    since: str | None
    pages: int
    issues_listed: int
    pull_requests_skipped: int
    timelines: int
    comments: int
    events: int
    requests: int
    not_modified: int
    waits: tuple[tuple[str, float], ...]
    cursor: str | None
    issues_total: int

    def to_dict(self) -> dict:
        out = dict(vars(self))
        out["waits"] = [{"reason": r, "seconds": round(s, 3)} for r, s in self.waits]
        return out


class StoreCache:
    """ETag cache of pages, kept in the study database (``http_cache``)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def get(self, url: str):
        import sqlalchemy as sa

        t = self.store.t["http_cache"]
        with self.store.connect() as conn:
            row = conn.execute(sa.select(t.c.etag, t.c.body, t.c.next_url, t.c.last_url).where(t.c.url == url)).first()
        return tuple(row) if row else None

    def put(self, url: str, etag: str, body: str, next_url: str | None, last_url: str | None) -> None:
        with self.store.begin() as conn:
            self.store.upsert(conn, "http_cache", [dict(url=url, etag=etag, body=body, next_url=next_url,
                                                        last_url=last_url)])


def check_options(options: MineOptions) -> None:
    if not _REPO.match(options.repo):
        raise DistdxError("DX-STUDY-030", f"{options.repo!r} is not a repository name",
                          hint="give it as OWNER/REPO, e.g. microsoft/DeepSpeed")
    if options.state not in ("all", "open", "closed"):
        raise DistdxError("DX-STUDY-031", f"--state {options.state!r} is not all, open or closed",
                          hint="use --state closed for the study's criterion")
    if options.since and not _DATE.match(options.since):
        raise DistdxError("DX-STUDY-032", f"--since {options.since!r} is not an ISO date",
                          hint="use YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ")
    if not 1 <= options.per_page <= 100:
        raise DistdxError("DX-STUDY-033", "--per-page must be between 1 and 100",
                          why="GitHub serves at most 100 items a page", hint="leave it at 100")


def _since_param(since: str | None) -> str | None:
    if since and "T" not in since:
        return since + "T00:00:00Z"
    return since


def issue_row(repo: str, item: dict) -> dict:
    user = item.get("user") or {}
    return dict(
        repo=repo,
        number=int(item["number"]),
        title=str(item.get("title") or ""),
        body=str(item.get("body") or ""),
        state=str(item.get("state") or ""),
        labels=dumps(sorted(str(l.get("name", "")) for l in item.get("labels") or [] if isinstance(l, dict))),
        author=str(user.get("login") or ""),
        comments=int(item.get("comments") or 0),
        created_at=item.get("created_at"),
        updated_at=item.get("updated_at"),
        closed_at=item.get("closed_at"),
        html_url=str(item.get("html_url") or ""),
    )


def timeline_rows(repo: str, number: int, events: list[dict]) -> tuple[list[dict], list[dict]]:
    """Split timeline events into comment rows and event rows, keyed stably."""
    comments, rows, seen = [], [], set()
    for ev in events:
        if not isinstance(ev, dict):
            continue
        kind = str(ev.get("event") or "")
        if kind == "commented" and ev.get("id") is not None:
            who = ev.get("user") or ev.get("actor") or {}
            comments.append(dict(repo=repo, comment_id=int(ev["id"]), number=number,
                                 author=str(who.get("login") or ""), association=str(ev.get("author_association") or ""),
                                 body=str(ev.get("body") or ""), created_at=ev.get("created_at")))
            continue
        source = (ev.get("source") or {}).get("issue") or {}
        src = split_issue_url(str(source.get("html_url") or "")) if source else None
        source_repo = ((source.get("repository") or {}).get("full_name") or (src[0] if src else None)) if source else None
        source_number = source.get("number") if source else None
        # cross-referenced events have no id: key them by what they say
        key = str(ev.get("id") or ev.get("node_id") or f"{kind}:{ev.get('created_at')}:{source_repo}#{source_number}")[:120]
        if key in seen:
            continue
        seen.add(key)
        rows.append(dict(repo=repo, number=number, event_key=key, event=kind, created_at=ev.get("created_at"),
                         source_repo=source_repo, source_number=int(source_number) if source_number else None,
                         source_is_pr=bool(source.get("pull_request")) if source else False,
                         commit_id=ev.get("commit_id")))
    return comments, rows


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _pages_total(page: Page) -> int | None:
    for url in (page.last_url,):
        if url:
            values = parse_qs(urlsplit(url).query).get("page")
            if values and values[0].isdigit():
                return int(values[0])
    return None


def mine(store: Store, client: GitHubClient, options: MineOptions,
         progress: Callable[[MineProgress], None] | None = None) -> MineResult:
    """Mine ``options.repo`` into ``store``, resuming an unfinished run; see the module docstring."""
    import sqlalchemy as sa

    check_options(options)
    report = progress or (lambda p: None)
    t = store.t
    repo = options.repo
    params = {"state": options.state, "labels": options.labels}
    with store.connect() as conn:
        state = conn.execute(sa.select(t["mine_state"]).where(t["mine_state"].c.repo == repo)).mappings().first()
    resumed = bool(state and state["phase"] in ("list", "timelines") and not options.restart)
    stored = json.loads(state["params"]) if state else {}
    if resumed and {k: stored.get(k) for k in params} != params:
        raise DistdxError("DX-STUDY-034", f"an unfinished run for {repo} used other options "
                          f"(state {stored.get('state')}, labels {stored.get('labels')})",
                          hint="run it again with those options, or add --restart")
    if resumed:
        since, phase, next_url = state["since"], state["phase"], state["next_url"]
        high_water = state["high_water"]
        started_at = stored.get("started_at")
    else:
        started_at = _iso(client.clock())
        since = _since_param(options.since) or (state["cursor"] if state else None)
        phase, high_water = "list", None
        next_url = client.url(f"repos/{repo}/issues", {"state": options.state, "labels": options.labels,
                                                       "since": since, "sort": "updated", "direction": "asc",
                                                       "per_page": options.per_page})
        with store.begin() as conn:
            store.upsert(conn, "mine_state", [dict(repo=repo, phase=phase, next_url=next_url, since=since,
                                                   high_water=None, cursor=state["cursor"] if state else None,
                                                   params=dumps({**params, "started_at": started_at}))])
    pages = listed = prs = timelines = n_comments = n_events = not_modified = 0
    start_requests = client.requests
    seen_urls: set[str] = set()
    total_pages: int | None = None
    while phase == "list" and next_url:
        if next_url in seen_urls:
            raise DistdxError("DX-STUDY-035", "GitHub's Link header points back to a page already read",
                              hint="check --api-url")
        seen_urls.add(next_url)
        page = client.get_page(next_url)
        pages += 1
        not_modified += page.not_modified
        total_pages = _pages_total(page) or total_pages
        rows = []
        for item in page.items:
            if not isinstance(item, dict) or "number" not in item:
                continue
            if item.get("pull_request"):
                prs += 1  # the issues endpoint lists pull requests too
                continue
            rows.append(issue_row(repo, item))
            if item.get("updated_at") and (high_water is None or item["updated_at"] > high_water):
                high_water = item["updated_at"]
        listed += len(rows)
        next_url = page.next_url
        phase = "list" if next_url else "timelines"
        with store.begin() as conn:  # the page and the cursor after it, together
            store.upsert(conn, "issues", rows)
            conn.execute(t["mine_state"].update().where(t["mine_state"].c.repo == repo)
                         .values(phase=phase, next_url=next_url, high_water=high_water))
        report(MineProgress("list", pages, total_pages, f"{listed} issues"))

    issues = t["issues"]
    with store.connect() as conn:
        todo = [r for r in conn.execute(
            sa.select(issues.c.number, issues.c.updated_at).where(
                issues.c.repo == repo, issues.c.case_json.is_(None),
                sa.or_(issues.c.timeline_synced.is_(None), issues.c.timeline_synced != issues.c.updated_at))
            .order_by(issues.c.number))]
    for i, (number, updated_at) in enumerate(todo, 1):
        events: list = []
        url: str | None = client.url(f"repos/{repo}/issues/{number}/timeline", {"per_page": options.per_page})
        seen_urls = set()
        while url:
            if url in seen_urls:
                raise DistdxError("DX-STUDY-035", "GitHub's Link header points back to a page already read",
                                  hint="check --api-url")
            seen_urls.add(url)
            try:
                page = client.get_page(url)
            except DistdxError as e:
                if e.code == "DX-STUDY-026":  # deleted or transferred issue: nothing to store
                    break
                raise
            not_modified += page.not_modified
            events.extend(page.items)
            url = page.next_url
        comment_rows, event_rows = timeline_rows(repo, number, events)
        with store.begin() as conn:  # the timeline and the mark that it is stored, together
            store.upsert(conn, "comments", comment_rows)
            store.upsert(conn, "events", event_rows)
            conn.execute(issues.update().where(issues.c.repo == repo, issues.c.number == number)
                         .values(timeline_synced=updated_at))
        timelines += 1
        n_comments += len(comment_rows)
        n_events += len(event_rows)
        report(MineProgress("timelines", i, len(todo), f"#{number}"))

    with store.begin() as conn:
        previous = conn.execute(sa.select(t["mine_state"].c.cursor).where(t["mine_state"].c.repo == repo)).scalar()
        cursor = max(filter(None, (previous, high_water)), default=None)
        if high_water and started_at and high_water >= started_at:
            # an issue changed while the listing ran, so the pages may have shifted under us and
            # skipped one: keep the old cursor, and the next run lists that stretch again
            cursor = previous
        conn.execute(t["mine_state"].update().where(t["mine_state"].c.repo == repo)
                     .values(phase="done", next_url=None, cursor=cursor))
        total = conn.execute(sa.select(sa.func.count()).select_from(issues).where(issues.c.repo == repo)).scalar()
    return MineResult(
        repo=repo, resumed=resumed, since=since, pages=pages, issues_listed=listed, pull_requests_skipped=prs,
        timelines=timelines, comments=n_comments, events=n_events, requests=client.requests - start_requests,
        not_modified=not_modified, waits=tuple((w.reason, w.seconds) for w in client.waits), cursor=cursor,
        issues_total=int(total or 0),
    )
