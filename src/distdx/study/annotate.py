"""Blind labelling and adjudication in the terminal, and the labels' storage.

The sessions take ``ask`` (one line of input, ``EOFError`` at the end) and ``say`` (one block of
output) so they work over ssh with plain ``input()``/``print`` and are driven by scripted stdin
in tests. Each issue's labels are committed as soon as they are complete; a session started
again offers only the issues this annotator has not labelled yet. The engine's suggestion is
shown only when a ``suggest`` function is given (off by default: labelling is blind).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable, Iterable

from distdx.errors import DistdxError
from distdx.knowledge.taxonomy import UNKNOWN, taxonomy
from distdx.study.labelio import LabelRecord
from distdx.study.records import DIMENSIONS, FRAMEWORK_OF_REPO, LabelSet, case_id, split_issue_url
from distdx.study.select import MinedIssue, load_issues
from distdx.study.store import Store, dumps

Ask = Callable[[str], str]
Say = Callable[[str], None]
BODY_LINES = 40
COMMENT_LINES = 8
COMMENTS_SHOWN = 3
_FENCE = re.compile(r"```[^\n]*\n(.*?)```", re.S)


@dataclass(frozen=True)
class StoredAnnotation:
    repo: str
    number: int
    annotator: str
    round: int
    labels: LabelSet
    note: str


@dataclass(frozen=True)
class SessionResult:
    annotator: str
    labelled: int
    skipped: int
    remaining: int
    stopped: bool  # the annotator quit (or input ended) before the queue was empty


class _Quit(Exception):
    pass


class _Skip(Exception):
    pass


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# -- storage --------------------------------------------------------------------------------
def save_annotation(store: Store, repo: str, number: int, annotator: str, labels: LabelSet,
                    round_no: int = 1, note: str = "") -> None:
    with store.begin() as conn:
        store.upsert(conn, "annotations", [dict(repo=repo, number=number, annotator=annotator, round=round_no,
                                                labels=dumps(labels.to_dict()), note=note, created_at=_now())])


def load_annotations(store: Store, annotators: tuple[str, ...] = ()) -> list[StoredAnnotation]:
    import sqlalchemy as sa

    t = store.t["annotations"]
    where = [t.c.annotator.in_(annotators)] if annotators else []
    with store.connect() as conn:
        rows = conn.execute(sa.select(t).where(*where).order_by(t.c.repo, t.c.number, t.c.annotator)).mappings()
        return [StoredAnnotation(r["repo"], r["number"], r["annotator"], r["round"],
                                 LabelSet.from_dict(json.loads(r["labels"])), r["note"]) for r in rows]


def save_adjudication(store: Store, repo: str, number: int, labels: LabelSet, source: str,
                      adjudicator: str = "", note: str = "") -> None:
    with store.begin() as conn:
        store.upsert(conn, "adjudications", [dict(repo=repo, number=number, labels=dumps(labels.to_dict()),
                                                  source=source, adjudicator=adjudicator, note=note,
                                                  created_at=_now())])


def load_adjudications(store: Store) -> dict[tuple[str, int], tuple[LabelSet, str, str]]:
    """(repo, number) -> (final labels, source, note)."""
    import sqlalchemy as sa

    t = store.t["adjudications"]
    with store.connect() as conn:
        return {(r["repo"], r["number"]): (LabelSet.from_dict(json.loads(r["labels"])), r["source"], r["note"])
                for r in conn.execute(sa.select(t)).mappings()}


# -- import / export ------------------------------------------------------------------------
def _issue_key(record: LabelRecord) -> tuple[str, int]:
    found = split_issue_url(record.url) if record.url else None
    if not found:
        raise DistdxError("DX-STUDY-070", f"label record {record.id!r} has no GitHub issue URL",
                          why="the URL says which repository and issue the labels belong to",
                          hint="add a `url` (https://github.com/OWNER/REPO/issues/N) to each record")
    return found


def import_labels(store: Store, records: list[LabelRecord], *, annotator: str = "", round_no: int = 1,
                  final: bool = False, adjudicator: str = "") -> int:
    """Store imported labels as annotations (or as final labels); unknown issues are added from the record."""
    import sqlalchemy as sa

    issues = store.t["issues"]
    count = 0
    for r in records:
        repo, number = _issue_key(r)
        with store.begin() as conn:
            exists = conn.execute(sa.select(sa.func.count()).select_from(issues)
                                  .where(issues.c.repo == repo, issues.c.number == number)).scalar()
            if not exists:
                case = {"id": r.id, **{k: v for k, v in r.case.items() if k not in ("annotations",)}}
                body = "\n\n".join(x for x in (str(case.get("context") or ""),
                                               f"```\n{case['log']}\n```" if case.get("log") else "") if x)
                conn.execute(issues.insert().values(
                    repo=repo, number=number, title=str(case.get("title") or ""), body=body, state="closed",
                    labels="[]", author="", comments=int(case.get("comments") or 0),
                    created_at=case.get("created_at"), updated_at=case.get("closed_at"),
                    closed_at=case.get("closed_at"), html_url=r.url, case_json=dumps(case)))
        if final:
            source = str(r.case.get("label_source") or "adjudicated")
            save_adjudication(store, repo, number, r.labels, source, adjudicator, r.note)
        else:
            who = annotator or r.annotator
            if not who:
                raise DistdxError("DX-STUDY-071", f"label record {r.id!r} names no annotator",
                                  hint="pass --annotator NAME")
            save_annotation(store, repo, number, who, r.labels, round_no, r.note)
        count += 1
    return count


def code_blocks(text: str, limit: int = 4000) -> str:
    """The fenced code blocks of a Markdown text: the machine output a report quotes."""
    return "\n".join(b.strip("\n") for b in _FENCE.findall(text or ""))[:limit]


def case_fields(issue: MinedIssue, summary: str = "") -> dict:
    """Case-format fields for an issue: an imported case's own, or our summary and its code blocks."""
    if issue.case:
        return {k: v for k, v in issue.case.items() if k not in ("id", "url", "labels", "annotations")}
    out = {
        "framework": FRAMEWORK_OF_REPO.get(issue.repo.lower(), ""),
        "title": issue.title,
        "context": summary or issue.title,
        "log": code_blocks(issue.body),
        "comments": issue.comments,
        "created_at": issue.created_at,
        "closed_at": issue.closed_at,
    }
    return out


def export_records(store: Store, *, annotator: str | None = None, final: bool = False) -> list[LabelRecord]:
    """Annotations of one annotator (or every one), or the final labels, as label records."""
    issues = {(i.repo, i.number): i for i in load_issues(store)}
    out = []
    if final:
        for (repo, number), (labels, source, note) in sorted(load_adjudications(store).items()):
            issue = issues[(repo, number)]
            case = case_fields(issue, note)
            case["label_source"] = source
            case["annotations"] = {a.annotator: a.labels.to_dict() for a in load_annotations(store)
                                   if (a.repo, a.number) == (repo, number)}
            out.append(LabelRecord(_record_id(issue), issue.url, labels, "", note, case))
        return out
    for a in load_annotations(store, (annotator,) if annotator else ()):
        issue = issues[(a.repo, a.number)]
        out.append(LabelRecord(_record_id(issue), issue.url, a.labels, a.annotator, a.note, case_fields(issue, a.note)))
    return out


def _record_id(issue: MinedIssue) -> str:
    return str(issue.case.get("id")) if issue.case and issue.case.get("id") else case_id(issue.repo, issue.number)


# -- the terminal ---------------------------------------------------------------------------
def issue_text(issue: MinedIssue, comments: list[str], full: bool = False) -> str:
    def clip(text: str, lines: int) -> str:
        parts = text.strip().splitlines()
        if full or len(parts) <= lines:
            return "\n".join(parts)
        return "\n".join(parts[:lines]) + f"\n  ... ({len(parts) - lines} more lines: type ? to see all)"

    out = [f"{issue.title}", f"{issue.url}   comments: {issue.comments}   labels: {', '.join(issue.labels) or '-'}",
           "-" * 72, clip(issue.body or "(no description)", BODY_LINES)]
    shown = comments if full else comments[:COMMENTS_SHOWN]
    for n, c in enumerate(shown, 1):
        out += [f"--- comment {n} ---", clip(c, COMMENT_LINES)]
    if len(comments) > len(shown):
        out.append(f"... {len(comments) - len(shown)} more comments (type ? to see all)")
    return "\n".join(out)


def load_comments(store: Store, issue: MinedIssue) -> list[str]:
    import sqlalchemy as sa

    t = store.t["comments"]
    with store.connect() as conn:
        return [r[0] for r in conn.execute(sa.select(t.c.body).where(t.c.repo == issue.repo, t.c.number == issue.number)
                                           .order_by(t.c.created_at, t.c.comment_id))]


def _options(dimension: str, stage: str | None) -> list[tuple[str, str]]:
    tax = taxonomy()
    if dimension == "distributed_specific":
        return [("y", "true: only in distributed frameworks"), ("n", "false: seen in general frameworks too")]
    ids = [i for i in tax.ids(dimension) if dimension in ("stage", "fix_pattern") or tax.nodes[i].stage == stage]
    return [(i, tax.nodes[i].name) for i in ids]


def _choose(ask: Ask, say: Say, dimension: str, stage: str | None, show_full: Callable[[], None]) -> str:
    options = _options(dimension, stage)
    allow_unknown = dimension != "stage"
    lines = [f"{dimension.replace('_', ' ')}:"]
    for n, (value, name) in enumerate(options, 1):
        key = value if dimension == "distributed_specific" else str(n)
        lines.append(f"  {key:>2}  {'' if dimension == 'distributed_specific' else value:<6} {name}")
    extra = "  u unknown" if allow_unknown else ""
    lines.append(f"  keys: number or ID{extra}   ? full text   s skip issue   q quit")
    say("\n".join(lines))
    while True:
        raw = ask(f"{dimension}> ").strip()
        low = raw.lower()
        if low == "q":
            raise _Quit
        if low == "s":
            raise _Skip
        if low == "?":
            show_full()
            continue
        if allow_unknown and low in ("u", UNKNOWN):
            return UNKNOWN
        if dimension == "distributed_specific":
            if low in ("y", "n"):
                return "true" if low == "y" else "false"
        elif raw.isdigit() and 1 <= int(raw) <= len(options):
            return options[int(raw) - 1][0]
        else:
            for value, _ in options:
                if value.lower() == low:
                    return value
        say(f"not a choice here: {raw!r}")


def annotate_session(store: Store, queue: list[MinedIssue], annotator: str, ask: Ask, say: Say, *,
                     round_no: int = 1, suggest: Callable[[str], LabelSet | None] | None = None) -> SessionResult:
    """Label every issue in ``queue`` this annotator has not labelled; saves after each issue."""
    done = {(a.repo, a.number) for a in load_annotations(store, (annotator,))}
    todo = [i for i in queue if (i.repo, i.number) not in done]
    labelled = skipped = 0
    for position, issue in enumerate(todo, 1):
        comments = load_comments(store, issue)
        say(f"\n=== [{position}/{len(todo)}] {issue.key}   annotator {annotator}, round {round_no} ===")
        say(issue_text(issue, comments))
        if suggest:
            hint = suggest(f"{issue.title}\n\n{issue.body}")
            say("engine suggests: " + (" / ".join(hint.value(d) for d in DIMENSIONS) if hint else "nothing"))
        try:
            values: dict[str, str] = {}
            for dim in DIMENSIONS:
                values[dim] = _choose(ask, say, dim, values.get("stage"),
                                      lambda: say(issue_text(issue, comments, full=True)))
        except _Skip:
            skipped += 1
            say("skipped")
            continue
        except (_Quit, EOFError):
            return SessionResult(annotator, labelled, skipped, len(todo) - labelled - skipped, True)
        try:
            note, ended = ask("note (optional, one line)> ").strip(), False
        except EOFError:  # the labels are complete: keep them, then stop
            note, ended = "", True
        save_annotation(store, issue.repo, issue.number, annotator, LabelSet.from_dict(values), round_no, note)
        labelled += 1
        say(f"saved {issue.key}")
        if ended:
            return SessionResult(annotator, labelled, skipped, len(todo) - labelled - skipped, True)
    return SessionResult(annotator, labelled, skipped, len(todo) - labelled - skipped, False)


@dataclass(frozen=True)
class AdjudicationResult:
    agreed: int
    adjudicated: int
    remaining: int
    stopped: bool


def adjudicate_session(store: Store, ask: Ask, say: Say, *, annotators: tuple[str, ...] = (),
                       adjudicator: str = "", decisions: Iterable[LabelRecord] = ()) -> AdjudicationResult:
    """Record final labels: unanimous issues at once (``agreed``), the others from a third reading's
    ``decisions`` where it covers them, else by asking (``adjudicated``). A decision only settles the
    dimensions the annotators differ on; where they agree, their label stands."""
    third = {_issue_key(r): r for r in decisions}
    by_issue: dict[tuple[str, int], dict[str, LabelSet]] = {}
    for a in load_annotations(store, annotators):
        by_issue.setdefault((a.repo, a.number), {})[a.annotator] = a.labels
    decided = load_adjudications(store)
    issues = {(i.repo, i.number): i for i in load_issues(store)}
    agreed = adjudicated = 0
    pending = []
    for key, labels in sorted(by_issue.items()):
        if key in decided or len(labels) < 2:
            continue
        first = next(iter(labels.values()))
        if all(not first.differences(other) for other in labels.values()):
            save_adjudication(store, key[0], key[1], first, "agreed", adjudicator)
            agreed += 1
        else:
            pending.append((key, labels))
    undecided = []
    for key, labels in pending:
        decision = third.get(key)
        if decision is None:
            undecided.append((key, labels))
            continue
        final = {dim: (values[0] if len(set(values)) == 1 else decision.labels.value(dim))
                 for dim in DIMENSIONS for values in [[l.value(dim) for l in labels.values()]]}
        save_adjudication(store, key[0], key[1], LabelSet.from_dict(final), "adjudicated",
                          adjudicator or decision.annotator, decision.note)
        adjudicated += 1
    pending = undecided
    for n, (key, labels) in enumerate(pending, 1):
        issue = issues[key]
        say(f"\n=== [{n}/{len(pending)}] {issue.key}: the annotators differ ===")
        say(issue_text(issue, load_comments(store, issue)))
        names = list(labels)
        final: dict[str, object] = {}
        try:
            for dim in DIMENSIONS:
                values = [labels[a].value(dim) for a in names]
                if len(set(values)) == 1:
                    final[dim] = values[0]
                    continue
                say(f"{dim}: " + "   ".join(f"{i}) {a}: {v}" for i, (a, v) in enumerate(zip(names, values), 1)))
                while True:
                    raw = ask(f"{dim}> ").strip()
                    if raw.lower() == "q":
                        raise _Quit
                    choice = values[int(raw) - 1] if raw.isdigit() and 1 <= int(raw) <= len(values) else raw
                    try:
                        LabelSet.from_dict({dim: choice})
                    except DistdxError:
                        say(f"not a {dim} here: {raw!r} (pick a number or type an ID)")
                        continue
                    final[dim] = choice
                    break
            note = ask("note (optional, one line)> ").strip()
        except (_Quit, EOFError):
            return AdjudicationResult(agreed, adjudicated, len(pending) - (n - 1), True)
        save_adjudication(store, key[0], key[1], LabelSet.from_dict(final), "adjudicated", adjudicator, note)
        adjudicated += 1
        say(f"saved {issue.key}")
    return AdjudicationResult(agreed, adjudicated, 0, False)


def engine_suggestion(text: str) -> LabelSet | None:
    """The diagnosis engine's top labels for an issue's text, or None when it has none."""
    from distdx.diagnose import diagnose_text  # lazy: the engine loads rules and the text model

    diagnosis = diagnose_text(text)
    values = {d: diagnosis.top(d) or UNKNOWN for d in DIMENSIONS[:4]}
    try:
        return LabelSet.from_dict(values)
    except DistdxError:
        return None
