"""Offline issue dumps -> the study database, so the study runs without network.

A dump is what a researcher saved from GitHub (or any tracker) by other means: a ``.json`` file
holding a list of issues (or ``{"issues": [...]}``), or a ``.jsonl`` file with one issue a line.
Each issue needs its ``url`` (or ``html_url``: ``https://github.com/OWNER/REPO/issues/N``); the
other fields are optional and take GitHub's REST names:

- ``title``, ``body``, ``state`` (``closed`` when ``closed_at`` is set and no state is given),
  ``created_at``, ``updated_at``, ``closed_at``, ``author`` or ``user.login``;
- ``labels``: names, or GitHub's ``{"name": ...}`` objects;
- ``comments``: a list of texts or of ``{"body", "author"|"user", "created_at", "id",
  "author_association"}`` objects (GitHub's count alone is accepted too);
- ``linked_prs``: pull requests that fixed the issue, as URLs or ``OWNER/REPO#N``.

Case-format records (``shared/cases/CASES.md``: ``id``, ``title``, ``context``, ``log``,
``resolution``, ...) are dumps too: the case is kept as written, so annotation shows it and
``annotate --export`` gives it back; its ``labels`` are not imported (that is ``annotate --import``).

An imported issue counts as having its timeline, so every selection filter applies to it,
``no-linked-pr`` through ``linked_prs``. Importing the same dump twice stores everything once.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from distdx import jsonio
from distdx.errors import DistdxError
from distdx.study.records import split_issue_url
from distdx.study.store import Store, dumps

_PR_REF = re.compile(r"^(?P<repo>[^/\s#]+/[^/\s#]+)#(?P<number>[0-9]{1,12})$")  # no issue number is longer
# Comments without an id get one below any real GitHub id, unique per issue and position.
_SYNTHETIC_ID_BASE = -(10 ** 12)


@dataclass(frozen=True)
class DumpImport:
    path: str
    issues: int
    comments: int
    linked_prs: int


def _bad(path: str | Path, where: str, what: str, hint: str = "see `distdx study import --help` for the dump format") -> DistdxError:
    return DistdxError("DX-STUDY-120", f"{path}:{where}: {what}", hint=hint)


def read_dump(path: str | Path) -> list[dict]:
    """The issue objects of a ``.json`` or ``.jsonl`` dump, in file order."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise DistdxError("DX-STUDY-121", f"no dump at {path}", hint="give the path of a .json or .jsonl file") from None
    except IsADirectoryError:
        raise DistdxError("DX-STUDY-121", f"{path} is a directory, not a dump",
                          hint="give one .json or .jsonl file (run the command once per file)") from None
    except UnicodeDecodeError as e:
        raise DistdxError("DX-STUDY-121", f"{path} is not UTF-8 text (byte {e.start})", hint="save it as UTF-8") from None
    except OSError as e:
        raise DistdxError("DX-STUDY-121", f"cannot read {path}: {e.strerror}", hint="check the path and its permissions") from None
    if p.suffix.lower() == ".jsonl":
        items = []
        for lineno, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    items.append((str(lineno), jsonio.loads(line)))
                except json.JSONDecodeError as e:
                    raise _bad(path, str(lineno), f"not JSON ({e.msg})") from None
    else:
        try:
            data = jsonio.loads(text)
        except json.JSONDecodeError as e:
            raise _bad(path, f"{e.lineno}:{e.colno}", f"not JSON ({e.msg})") from None
        if isinstance(data, dict) and isinstance(data.get("issues"), list):
            data = data["issues"]
        if not isinstance(data, list):
            raise _bad(path, "1", "a .json dump is a list of issues or an object with an `issues` list")
        items = [(f"issue {n}", item) for n, item in enumerate(data, 1)]
    for where, item in items:
        if not isinstance(item, dict):
            raise _bad(path, where, "an issue is not a JSON object")
    return [item for _, item in items]


def _storable_id(cid: object) -> bool:
    """A comment id the store can keep: a whole number below SQLite's 2**63 (GitHub's are near 10**10)."""
    if isinstance(cid, bool) or not isinstance(cid, (int, str)):
        return False
    text = str(cid)
    return text.isascii() and text.isdigit() and len(text) <= 18


def _login(value: object) -> str:
    if isinstance(value, dict):
        return str(value.get("login") or "")
    return str(value or "")


def _pr_ref(value: object) -> tuple[str, int] | None:
    text = str(value or "").strip()
    m = _PR_REF.match(text)
    if m:
        return m.group("repo"), int(m.group("number"))
    return split_issue_url(text)


def dump_rows(path: str | Path, item: dict, where: str) -> tuple[dict, list[dict], list[dict]]:
    """One dumped issue as an issue row, its comment rows and its linked-PR event rows."""
    url = str(item.get("html_url") or item.get("url") or "").strip()
    found = split_issue_url(url)
    if not found:
        raise _bad(path, where, f"url {url!r} is not an issue URL",
                   hint="every issue needs `url`: https://github.com/OWNER/REPO/issues/N")
    repo, number = found
    raw_comments = item.get("comments")
    comments: list[dict] = []
    if isinstance(raw_comments, list):
        for n, c in enumerate(raw_comments):
            c = c if isinstance(c, dict) else {"body": c}
            cid = c.get("id")
            comments.append(dict(
                repo=repo, number=number,
                comment_id=int(cid) if _storable_id(cid) else _SYNTHETIC_ID_BASE - number * 10_000 - n,
                author=_login(c.get("author") or c.get("user")), association=str(c.get("author_association") or ""),
                body=str(c.get("body") or ""), created_at=c.get("created_at")))
        count = len(comments)
    elif isinstance(raw_comments, int) and not isinstance(raw_comments, bool) and 0 <= raw_comments < 2**31:
        count = raw_comments
    elif raw_comments is None:
        count = 0
    else:
        raise _bad(path, where, "`comments` is neither a list of comments nor a count")
    is_case = "context" in item
    labels = [] if is_case else item.get("labels") or []
    if not isinstance(labels, list):
        raise _bad(path, where, "`labels` is not a list")
    names = sorted({str(l.get("name", "")) if isinstance(l, dict) else str(l) for l in labels} - {""})
    closed_at = item.get("closed_at")
    state = str(item.get("state") or ("closed" if closed_at or is_case else "open")).lower()
    created = item.get("created_at") or item.get("created") or None
    updated = item.get("updated_at") or closed_at or created
    body = str(item.get("body") or "")
    case_json = None
    if is_case:
        case = {k: v for k, v in item.items() if k not in ("url", "html_url", "labels", "annotations")}
        body = body or "\n\n".join(x for x in (str(case.get("context") or ""),
                                               f"```\n{case['log']}\n```" if case.get("log") else "") if x)
        case_json = dumps(case)
    issue = dict(
        repo=repo, number=number, title=str(item.get("title") or ""), body=body,
        state=state, labels=dumps(names), author=_login(item.get("author") or item.get("user")),
        comments=count, created_at=created, updated_at=updated, closed_at=closed_at,
        html_url=url, timeline_synced=str(updated or "dump"), case_json=case_json)
    events = []
    refs = item.get("linked_prs") or []
    if isinstance(refs, str):
        refs = [refs]
    if not isinstance(refs, list):
        raise _bad(path, where, f"linked_prs is {type(refs).__name__}, not a list of pull-request URLs")
    for ref in refs:
        pr = _pr_ref(ref)
        if not pr:
            raise _bad(path, where, f"linked pull request {ref!r} is neither a URL nor OWNER/REPO#N")
        events.append(dict(repo=repo, number=number, event_key=f"dump:{pr[0]}#{pr[1]}"[:120], event="cross-referenced",
                           created_at=None, source_repo=pr[0], source_number=pr[1], source_is_pr=True, commit_id=None))
    return issue, comments, events


def import_dump(store: Store, path: str | Path) -> DumpImport:
    """Store a dump's issues, comments and linked pull requests (upserts: a re-import changes nothing)."""
    rows = [dump_rows(path, item, f"issue {n}") for n, item in enumerate(read_dump(path), 1)]
    with store.begin() as conn:
        store.upsert(conn, "issues", [r[0] for r in rows])
        store.upsert(conn, "comments", [c for r in rows for c in r[1]])
        store.upsert(conn, "events", [e for r in rows for e in r[2]])
    return DumpImport(str(path), len(rows), sum(len(r[1]) for r in rows), sum(len(r[2]) for r in rows))
