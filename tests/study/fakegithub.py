"""A GitHub-API-shaped HTTP server on 127.0.0.1 for the mining tests.

It serves ``/repos/{owner}/{repo}/issues`` (state, labels, since, sort=updated asc, per_page,
page, with ``Link`` headers and ``ETag``/``If-None-Match``) and ``.../issues/{n}/timeline``
from an in-memory repository, and answers with scripted faults when told: 502s, a secondary
rate limit (403 + Retry-After), an exhausted primary limit (X-RateLimit-Remaining: 0 and a
reset time, then 403 until that time), or a request held until released.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

LIMIT = 5000


def make_repo(repo: str = "acme/widgets", n: int = 23, seed: int = 7) -> dict:
    """Issues 1..n (every 5th a pull request) with comments, linked PRs and other events."""
    import random

    rnd = random.Random(seed)
    issues, timelines = {}, {}
    event_id = 1000
    for number in range(1, n + 1):
        is_pr = number % 5 == 0
        n_comments = rnd.choice([0, 1, 2, 3, 7, 12])
        created = f"2023-01-{1 + number % 28:02d}T10:00:00Z"
        updated = f"2023-03-{1 + (number * 7) % 28:02d}T{number % 24:02d}:00:00Z"
        item = {
            "number": number,
            "title": f"Issue {number}: NCCL timeout with {number} ranks",
            "body": "" if number % 7 == 0 else f"Running deepspeed with ZeRO-3 on {number} GPUs fails.\n```\nRuntimeError: boom {number}\n```",
            "state": "closed" if number % 3 else "open",
            "labels": [{"name": "bug"}] if number % 2 else [{"name": "question"}],
            "user": {"login": f"user{number}"},
            "comments": n_comments,
            "created_at": created,
            "updated_at": updated,
            "closed_at": updated if number % 3 else None,
            "html_url": f"https://github.com/{repo}/issues/{number}",
        }
        if is_pr:
            item["pull_request"] = {"url": f"https://api.github.com/repos/{repo}/pulls/{number}"}
        issues[number] = item
        events = [{"id": event_id, "event": "labeled", "created_at": created, "label": {"name": "bug"}}]
        event_id += 1
        for c in range(n_comments):
            events.append({"id": number * 100 + c, "event": "commented", "body": f"comment {c} on {number}",
                           "user": {"login": f"helper{c}"}, "author_association": "MEMBER",
                           "created_at": created})
        if number % 4 == 1:  # referenced by a pull request in the same repository: a linked PR
            events.append({"event": "cross-referenced", "created_at": updated, "source": {"type": "issue", "issue": {
                "number": 900 + number, "html_url": f"https://github.com/{repo}/pull/{900 + number}",
                "pull_request": {"url": "x"}, "repository": {"full_name": repo}}}})
        if number % 6 == 2:  # mentioned from another repository's issue: not a linked PR
            events.append({"event": "cross-referenced", "created_at": updated, "source": {"type": "issue", "issue": {
                "number": 5, "html_url": "https://github.com/other/thing/issues/5",
                "repository": {"full_name": "other/thing"}}}})
        if number == 9:
            events.append({"id": event_id, "event": "connected", "created_at": updated})
            event_id += 1
        if number % 3:
            events.append({"id": event_id, "event": "closed", "created_at": updated, "commit_id": None})
            event_id += 1
        timelines[number] = events
    return {"repo": repo, "issues": issues, "timelines": timelines}


@dataclass
class Fault:
    path: str  # regex on the path
    kind: str  # 502 | secondary | secondary-bare | exhaust
    times: int = 1
    retry_after: int = 7
    reset_in: int = 30
    enforce: bool = False  # exhaust: answer 403 until the reset time (real time)


@dataclass
class FakeGitHub:
    data: dict
    faults: list[Fault] = field(default_factory=list)
    log: list[dict] = field(default_factory=list)
    exhausted_until: float = 0.0
    held: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    url: str = ""
    hold_path: str | None = None  # hold the hold_nth request whose path matches, until release
    hold_nth: int = 0
    hold_seen: int = 0

    def take_fault(self, path: str) -> Fault | None:
        with self.lock:
            for f in self.faults:
                if f.times > 0 and re.search(f.path, path):
                    f.times -= 1
                    return f
        return None


def _link(base: str, query: dict, page: int, last: int) -> str:
    def at(p: int) -> str:
        q = dict(query)
        q["page"] = str(p)
        return base + "?" + "&".join(f"{k}={v}" for k, v in q.items())
    rels = []
    if page < last:
        rels.append(f'<{at(page + 1)}>; rel="next"')
        rels.append(f'<{at(last)}>; rel="last"')
    if page > 1:
        rels.append(f'<{at(1)}>; rel="first"')
        rels.append(f'<{at(page - 1)}>; rel="prev"')
    return ", ".join(rels)


class _Handler(BaseHTTPRequestHandler):
    server_version = "FakeGitHub/1"

    def log_message(self, *args):  # keep test output clean
        pass

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):  # noqa: N802
        gh: FakeGitHub = self.server.gh  # type: ignore[attr-defined]
        parts = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        gh.log.append({"path": parts.path, "query": query, "headers": dict(self.headers)})
        now = time.time()
        rate = {"X-RateLimit-Limit": str(LIMIT), "X-RateLimit-Remaining": "4000",
                "X-RateLimit-Reset": str(int(now) + 3600)}
        if gh.exhausted_until > now:
            rate.update({"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(gh.exhausted_until))})
            return self._send(403, b'{"message": "API rate limit exceeded for user."}', rate)
        fault = gh.take_fault(parts.path)
        if fault and fault.kind == "502":
            return self._send(502, b'{"message": "Server Error"}')
        if fault and fault.kind == "secondary":
            return self._send(403, b'{"message": "You have exceeded a secondary rate limit. Please wait a few '
                                   b'minutes before you try again."}', {"Retry-After": str(fault.retry_after)})
        if fault and fault.kind == "secondary-bare":
            return self._send(403, b'{"message": "You have exceeded a secondary rate limit."}')
        if gh.hold_path and re.search(gh.hold_path, parts.path):
            with gh.lock:
                gh.hold_seen += 1
                hold = gh.hold_seen == gh.hold_nth
            if hold:
                gh.held.set()
                gh.release.wait(timeout=30)
        repo = gh.data["repo"]
        m = re.fullmatch(rf"/repos/{re.escape(repo)}/issues(?:/(\d+)/timeline)?", parts.path)
        if not m:
            return self._send(404, b'{"message": "Not Found"}', rate)
        per_page = min(int(query.get("per_page", 30)), 100)
        page = int(query.get("page", 1))
        if m.group(1):
            number = int(m.group(1))
            if number not in gh.data["timelines"]:
                return self._send(404, b'{"message": "Not Found"}', rate)
            items = gh.data["timelines"][number]
        else:
            items = list(gh.data["issues"].values())
            state = query.get("state", "open")
            if state != "all":
                items = [i for i in items if i["state"] == state]
            if query.get("labels"):
                wanted = set(query["labels"].split(","))
                items = [i for i in items if wanted <= {l["name"] for l in i["labels"]}]
            if query.get("since"):
                items = [i for i in items if i["updated_at"] >= query["since"]]
            items.sort(key=lambda i: (i["updated_at"], i["number"]))
        last = max(1, -(-len(items) // per_page))
        chunk = items[(page - 1) * per_page: page * per_page]
        body = json.dumps(chunk).encode()
        etag = '"' + hashlib.sha1(body).hexdigest() + '"'
        headers = dict(rate)
        headers["ETag"] = etag
        link = _link(gh.url + parts.path, {k: v for k, v in query.items() if k != "page"}, page, last)
        if link:
            headers["Link"] = link
        if fault and fault.kind == "exhaust":
            reset = int(now) + fault.reset_in
            if fault.enforce:
                gh.exhausted_until = reset
            headers.update({"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(reset)})
        if self.headers.get("If-None-Match") == etag:
            return self._send(304, b"", headers)
        self._send(200, body, headers)


class Server:
    def __init__(self, gh: FakeGitHub) -> None:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.daemon_threads = True
        self.httpd.gh = gh  # type: ignore[attr-defined]
        gh.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.gh = gh
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self) -> FakeGitHub:
        self.thread.start()
        return self.gh

    def __exit__(self, *exc) -> None:
        self.gh.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)
