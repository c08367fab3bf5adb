"""A small GitHub REST client that is polite under limits and never leaks the token.

- Pagination follows the ``Link`` header (``rel="next"``), only to the API's own host.
- Conditional requests: a page's ``ETag`` is kept in a cache (the study database); the next
  request sends ``If-None-Match`` and a ``304 Not Modified`` reuses the cached page.
- Primary rate limit: when ``X-RateLimit-Remaining`` reaches 0 the client waits until
  ``X-RateLimit-Reset`` before the next request.
- Secondary rate limit (403/429): wait ``Retry-After`` seconds when given, else until the reset
  when the remaining count is 0, else at least a minute, doubling on repeats (GitHub's advice).
- 5xx answers and dropped connections are retried with exponential backoff, a bounded number
  of times.

``sleep`` and ``clock`` are parameters so that tests exercise every wait without waiting.
The token is sent only in the ``Authorization`` header: never stored, logged or put in errors.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol
from urllib.parse import urlencode, urlsplit

from distdx.errors import EXIT_FINDINGS, DistdxError

DEFAULT_API_URL = "https://api.github.com"
API_VERSION = "2022-11-28"
SECONDARY_MIN_WAIT = 60.0
MAX_BACKOFF = 300.0


@dataclass(frozen=True)
class Page:
    """One page of a list endpoint."""

    url: str
    items: list
    next_url: str | None
    last_url: str | None = None
    not_modified: bool = False  # answered 304: items come from the cache


@dataclass(frozen=True)
class Wait:
    reason: str  # rate-limit | secondary-rate-limit | server-error | connection
    seconds: float
    url: str


class PageCache(Protocol):
    def get(self, url: str) -> tuple[str, str, str | None, str | None] | None: ...
    def put(self, url: str, etag: str, body: str, next_url: str | None, last_url: str | None) -> None: ...


def find_token(env: dict[str, str] | None = None, gh_hosts: Path | None = None, host: str = "github.com") -> str | None:
    """GITHUB_TOKEN (or GH_TOKEN), else the ``oauth_token`` gh keeps in ``~/.config/gh/hosts.yml``."""
    env = os.environ if env is None else env
    for name in ("GITHUB_TOKEN", "GH_TOKEN"):
        if env.get(name, "").strip():
            return env[name].strip()
    if gh_hosts is None:
        config = env.get("GH_CONFIG_DIR") or str(Path(env.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "gh")
        gh_hosts = Path(config) / "hosts.yml"
    try:
        import yaml

        data = yaml.safe_load(gh_hosts.read_text(encoding="utf-8"))
    except Exception:  # absent, unreadable or not YAML: no token from gh
        return None
    entry = data.get(host) if isinstance(data, dict) else None
    token = entry.get("oauth_token") if isinstance(entry, dict) else None
    return str(token) if token else None


def _header_float(headers, name: str) -> float | None:
    value = headers.get(name)
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


class GitHubClient:
    """GET pages from the GitHub REST API; see the module docstring for the policies."""

    def __init__(
        self,
        api_url: str = DEFAULT_API_URL,
        token: str | None = None,
        *,
        cache: PageCache | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
        max_retries: int = 6,
        timeout: float = 30.0,
        on_wait: Callable[[Wait], None] | None = None,
    ) -> None:
        parts = urlsplit(api_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise DistdxError("DX-STUDY-020", f"--api-url {api_url!r} is not an http(s) URL",
                              hint="use https://api.github.com or https://HOST/api/v3 for GitHub Enterprise")
        try:
            import httpx
        except ImportError:
            raise DistdxError("DX-STUDY-001", "mining needs httpx", hint="pip install 'distdx[study]'") from None
        self.api_url = api_url.rstrip("/")
        self._origin = (parts.scheme, parts.netloc)
        headers = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": API_VERSION,
                   "User-Agent": "distdx-study"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self._http = httpx.Client(headers=headers, timeout=timeout, follow_redirects=False)
        self._httpx = httpx
        self.cache = cache
        self.sleep = sleep
        self.clock = clock
        self.max_retries = max_retries
        self.on_wait = on_wait
        self.requests = 0
        self.waits: list[Wait] = []
        self._blocked_until = 0.0

    def __repr__(self) -> str:  # never show headers: they hold the token
        return f"GitHubClient({self.api_url!r})"

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "GitHubClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def url(self, path: str, params: dict[str, object] | None = None) -> str:
        query = urlencode({k: v for k, v in (params or {}).items() if v is not None})
        return f"{self.api_url}/{path.lstrip('/')}" + (f"?{query}" if query else "")

    def _wait(self, reason: str, seconds: float, url: str) -> None:
        seconds = max(0.0, min(seconds, 3600.0))
        wait = Wait(reason, seconds, url)
        self.waits.append(wait)
        if self.on_wait:
            self.on_wait(wait)
        self.sleep(seconds)

    def _check_origin(self, url: str) -> None:
        parts = urlsplit(url)
        if (parts.scheme, parts.netloc) != self._origin:
            raise DistdxError("DX-STUDY-021", f"the API pointed to another host ({parts.netloc})",
                              why="following it would send the token elsewhere",
                              hint="check --api-url", exit_code=EXIT_FINDINGS)

    def get_page(self, url: str) -> Page:
        """GET one page (a JSON list), honouring limits; raises DistdxError when it cannot."""
        self._check_origin(url)
        cached = self.cache.get(url) if self.cache else None
        backoff = 1.0
        secondary_wait = SECONDARY_MIN_WAIT
        for attempt in range(self.max_retries + 1):
            now = self.clock()
            if self._blocked_until > now:
                self._wait("rate-limit", self._blocked_until - now, url)
            headers = {"If-None-Match": cached[0]} if cached else {}
            self.requests += 1
            try:
                resp = self._http.get(url, headers=headers)
            except self._httpx.TransportError as e:
                if attempt == self.max_retries:
                    raise DistdxError("DX-STUDY-022", f"cannot reach {urlsplit(url).netloc}: {type(e).__name__}",
                                      hint="check the network or --api-url", exit_code=EXIT_FINDINGS) from None
                self._wait("connection", backoff, url)
                backoff = min(backoff * 2, MAX_BACKOFF)
                continue
            remaining = _header_float(resp.headers, "x-ratelimit-remaining")
            reset = _header_float(resp.headers, "x-ratelimit-reset")
            if remaining is not None and remaining <= 0 and reset is not None:
                self._blocked_until = reset + 1.0
            status = resp.status_code
            if status == 304 and cached:
                return Page(url, json.loads(cached[1]), cached[2], cached[3], not_modified=True)
            if status == 200:
                return self._page(url, resp)
            if status in (403, 429) and self._is_rate_limited(resp, remaining):
                if attempt == self.max_retries:
                    break
                retry_after = _header_float(resp.headers, "retry-after")
                if retry_after is not None:
                    self._wait("secondary-rate-limit", retry_after, url)
                elif remaining is not None and remaining <= 0 and reset is not None:
                    self._wait("rate-limit", max(0.0, reset + 1.0 - self.clock()), url)
                    self._blocked_until = 0.0
                else:
                    self._wait("secondary-rate-limit", secondary_wait, url)
                    secondary_wait = min(secondary_wait * 2, 3600.0)
                continue
            if status >= 500:
                if attempt == self.max_retries:
                    break
                self._wait("server-error", backoff, url)
                backoff = min(backoff * 2, MAX_BACKOFF)
                continue
            raise self._error(status, url, resp)
        raise DistdxError("DX-STUDY-023", f"GitHub kept failing for {url} after {self.max_retries} retries",
                          hint="run the same command again later: it resumes where it stopped",
                          exit_code=EXIT_FINDINGS)

    @staticmethod
    def _is_rate_limited(resp, remaining: float | None) -> bool:
        if resp.status_code == 429 or "retry-after" in resp.headers or remaining == 0:
            return True
        try:
            message = str(resp.json().get("message", ""))
        except (ValueError, AttributeError):
            message = resp.text[:500]
        return "rate limit" in message.lower()

    def _page(self, url: str, resp) -> Page:
        try:
            items = resp.json()
        except ValueError:
            raise DistdxError("DX-STUDY-024", f"GitHub answered {url} with something that is not JSON",
                              hint="check --api-url", exit_code=EXIT_FINDINGS) from None
        if not isinstance(items, list):
            raise DistdxError("DX-STUDY-024", f"GitHub answered {url} with a JSON object, not a list",
                              hint="check --api-url", exit_code=EXIT_FINDINGS)
        next_url = resp.links.get("next", {}).get("url")
        last_url = resp.links.get("last", {}).get("url")
        if next_url:
            self._check_origin(next_url)
        etag = resp.headers.get("etag")
        if etag and self.cache:
            self.cache.put(url, etag, resp.text, next_url, last_url)
        return Page(url, items, next_url, last_url)

    @staticmethod
    def _error(status: int, url: str, resp) -> DistdxError:
        try:
            message = str(resp.json().get("message", ""))[:200]
        except (ValueError, AttributeError):
            message = ""
        path = urlsplit(url).path
        if status == 401:
            return DistdxError("DX-STUDY-025", "GitHub rejected the token (401 Bad credentials)",
                               hint="set GITHUB_TOKEN to a valid token, or run `gh auth login`")
        if status in (404, 410):
            return DistdxError("DX-STUDY-026", f"GitHub has no {path} ({status})",
                               why=message or None, hint="check the repository name (OWNER/REPO)")
        return DistdxError("DX-STUDY-027", f"GitHub answered {status} for {path}", why=message or None,
                           hint="check the token's permissions and the repository name", exit_code=EXIT_FINDINGS)
