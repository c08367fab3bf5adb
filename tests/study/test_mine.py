"""Mining against a GitHub-shaped server on loopback: pagination, limits, errors, interruption."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from distdx.errors import DistdxError
from distdx.study.github import GitHubClient, find_token
from distdx.study.mine import MineOptions, StoreCache, mine
from distdx.study.store import open_store

from .fakegithub import FakeGitHub, Fault, Server, make_repo

REPO = "acme/widgets"
TOKEN = "ghp_" + "T0kenValue" * 4


class FakeTime:
    """Injected clock and sleep: waits are recorded and advance the clock, nothing blocks."""

    def __init__(self) -> None:
        self.now = time.time()
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def expected(data: dict, state: str = "all") -> dict:
    issues = {n: i for n, i in data["issues"].items() if "pull_request" not in i and (state == "all" or i["state"] == state)}
    comments = {e["id"] for n in issues for e in data["timelines"][n] if e["event"] == "commented"}
    events = sum(1 for n in issues for e in data["timelines"][n] if e["event"] != "commented")
    return {"issues": set(issues), "comments": comments, "events": events}


def contents(db: str) -> dict:
    import sqlalchemy as sa

    with open_store(db) as store, store.connect() as conn:
        t = store.t
        numbers = [r[0] for r in conn.execute(sa.select(t["issues"].c.number))]
        comment_ids = [r[0] for r in conn.execute(sa.select(t["comments"].c.comment_id))]
        events = conn.execute(sa.select(sa.func.count()).select_from(t["events"])).scalar()
        unsynced = conn.execute(sa.select(sa.func.count()).select_from(t["issues"])
                                .where(t["issues"].c.timeline_synced.is_(None))).scalar()
        state = conn.execute(sa.select(t["mine_state"])).mappings().first()
    assert len(numbers) == len(set(numbers)) and len(comment_ids) == len(set(comment_ids))
    return {"issues": set(numbers), "comments": set(comment_ids), "events": events, "unsynced": unsynced,
            "state": dict(state) if state else None}


def run_mine(db: str, gh: FakeGitHub, fake: FakeTime, token: str | None = TOKEN, **opts):
    with open_store(db) as store, GitHubClient(gh.url, token, cache=StoreCache(store), sleep=fake.sleep,
                                               clock=fake.clock, max_retries=4) as client:
        return mine(store, client, MineOptions(REPO, per_page=opts.pop("per_page", 4), **opts))


def test_paginates_and_stores_everything_once(tmp_path):
    db = str(tmp_path / "study.db")
    data = make_repo()
    with Server(FakeGitHub(data)) as gh:
        result = run_mine(db, gh, FakeTime())
        want = expected(data)
        got = contents(db)
        assert got["issues"] == want["issues"] and got["comments"] == want["comments"]
        assert got["events"] == want["events"] and got["unsynced"] == 0
        assert result.pull_requests_skipped == 4 and result.issues_listed == len(want["issues"])
        assert result.pages == 6  # 23 items, 4 a page: followed the Link header to the end
        assert got["state"]["phase"] == "done" and got["state"]["cursor"] == max(
            i["updated_at"] for i in data["issues"].values() if "pull_request" not in i)
        # the token went only into the Authorization header
        assert all(r["headers"].get("Authorization") == f"Bearer {TOKEN}" for r in gh.log)
    assert TOKEN.encode() not in Path(db).read_bytes()


def test_waits_on_primary_and_secondary_limits_and_retries_502(tmp_path):
    db = str(tmp_path / "study.db")
    data = make_repo()
    faults = [
        Fault(r"/issues$", "502", times=2),
        Fault(r"/issues$", "exhaust", reset_in=30),
        Fault(r"/timeline$", "secondary", retry_after=7),
        Fault(r"/issues/3/timeline$", "502", times=1),
    ]
    fake = FakeTime()
    with Server(FakeGitHub(data, faults=faults)) as gh:
        result = run_mine(db, gh, fake)
    reasons = [r for r, _ in result.waits]
    assert reasons.count("server-error") == 3
    backoffs = [s for r, s in result.waits if r == "server-error"]
    assert backoffs[:2] == [1.0, 2.0]  # exponential backoff within one request
    assert ("secondary-rate-limit", 7.0) in result.waits  # Retry-After honoured
    primary = [s for r, s in result.waits if r == "rate-limit"]
    assert len(primary) == 1 and 26 <= primary[0] <= 31  # until X-RateLimit-Reset (30 s, less 3 s of backoff)
    assert sum(fake.sleeps) == pytest.approx(sum(s for _, s in result.waits))
    got = contents(db)
    want = expected(data)
    assert got["issues"] == want["issues"] and got["comments"] == want["comments"]


def test_primary_limit_enforced_by_server_real_wait(tmp_path):
    """The server refuses requests until the reset time; the client really sleeps until then."""
    db = str(tmp_path / "study.db")
    data = make_repo(n=6)
    with Server(FakeGitHub(data, faults=[Fault(r"/issues$", "exhaust", reset_in=1, enforce=True)])) as gh:
        started = time.monotonic()
        with open_store(db) as store, GitHubClient(gh.url, None, cache=StoreCache(store), max_retries=3) as client:
            result = mine(store, client, MineOptions(REPO, per_page=2))
        elapsed = time.monotonic() - started
        refused = [r for r in gh.log if r["path"].endswith("/issues")]
    assert [r for r, _ in result.waits] == ["rate-limit"]
    assert 0.5 < elapsed < 8
    assert len(refused) == 3  # no request was refused: the client waited before asking again
    assert contents(db)["issues"] == expected(data)["issues"]


def test_secondary_limit_without_retry_after_waits_a_minute_then_doubles():
    fake = FakeTime()
    with Server(FakeGitHub(make_repo(n=2), faults=[Fault(r"/issues$", "secondary-bare", times=2)])) as gh:
        with GitHubClient(gh.url, None, sleep=fake.sleep, clock=fake.clock) as client:
            page = client.get_page(client.url(f"repos/{REPO}/issues", {"state": "all"}))
    assert [(w.reason, w.seconds) for w in client.waits] == [("secondary-rate-limit", 60.0),
                                                             ("secondary-rate-limit", 120.0)]
    assert [i["number"] for i in page.items] == [1, 2]


def test_gives_up_after_bounded_retries(tmp_path):
    fake = FakeTime()
    with Server(FakeGitHub(make_repo(n=2), faults=[Fault(r"/issues$", "502", times=100)])) as gh:
        with GitHubClient(gh.url, None, sleep=fake.sleep, clock=fake.clock, max_retries=3) as client:
            with pytest.raises(DistdxError) as err:
                client.get_page(client.url(f"repos/{REPO}/issues"))
        assert len(gh.log) == 4
    assert err.value.code == "DX-STUDY-023" and "resumes" in err.value.hint


def test_conditional_requests_reuse_cached_pages(tmp_path):
    db = str(tmp_path / "study.db")
    data = make_repo(n=8)
    with Server(FakeGitHub(data)) as gh:
        run_mine(db, gh, FakeTime(), since="2023-01-01")
        first = len(gh.log)
        again = run_mine(db, gh, FakeTime(), since="2023-01-01")
        second = gh.log[first:]
    assert again.not_modified == again.pages and again.pages > 0
    assert all(r["headers"].get("If-None-Match") for r in second if r["path"].endswith("/issues"))
    assert again.timelines == 0  # nothing changed, no timeline fetched again


def test_incremental_since_uses_the_cursor(tmp_path):
    db = str(tmp_path / "study.db")
    data = make_repo(n=10)
    with Server(FakeGitHub(data)) as gh:
        run_mine(db, gh, FakeTime())
        data["issues"][4]["updated_at"] = "2024-05-01T00:00:00Z"
        data["issues"][4]["comments"] += 1
        data["timelines"][4].append({"id": 99999, "event": "commented", "body": "late", "user": {"login": "x"},
                                     "created_at": "2024-05-01T00:00:00Z"})
        second = run_mine(db, gh, FakeTime())
        listed = [r for r in gh.log if r["path"].endswith("/issues")][-1]
    assert listed["query"]["since"] == max(i["updated_at"] for n, i in data["issues"].items() if n != 4 and n % 5)
    assert second.timelines == 1 and second.comments == data["issues"][4]["comments"]
    assert 99999 in contents(db)["comments"]


def test_interrupted_then_resumed_loses_and_duplicates_nothing(tmp_path):
    db = str(tmp_path / "study.db")
    data = make_repo(n=30)
    calls = {"n": 0}

    def interrupt_after_some(progress):
        calls["n"] += 1
        if progress.phase == "timelines" and progress.done == 5:
            raise KeyboardInterrupt

    with Server(FakeGitHub(data)) as gh:
        with open_store(db) as store, GitHubClient(gh.url, TOKEN, cache=StoreCache(store),
                                                   sleep=FakeTime().sleep) as client:
            with pytest.raises(KeyboardInterrupt):
                mine(store, client, MineOptions(REPO, per_page=4), progress=interrupt_after_some)
        middle = contents(db)
        assert middle["state"]["phase"] == "timelines" and middle["unsynced"] > 0
        resumed = run_mine(db, gh, FakeTime())
    assert resumed.resumed and resumed.pages == 0 and resumed.timelines == middle["unsynced"]
    got, want = contents(db), expected(data)
    assert got["issues"] == want["issues"] and got["comments"] == want["comments"] and got["events"] == want["events"]


@pytest.mark.slow
def test_killed_process_resumes_from_the_stored_page(tmp_path):
    """SIGKILL the CLI while it waits for page 3 of the listing; the rerun resumes from page 3."""
    db = str(tmp_path / "study.db")
    data = make_repo(n=40)
    env = {**os.environ, "GITHUB_TOKEN": TOKEN, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
    ordered = sorted(data["issues"].values(), key=lambda i: (i["updated_at"], i["number"]))
    on_first_two_pages = {i["number"] for i in ordered[:10] if "pull_request" not in i}
    with Server(FakeGitHub(data, hold_path=r"/issues$", hold_nth=3)) as gh:
        cmd = [sys.executable, "-m", "distdx", "study", "mine", REPO, "--db", db, "--api-url", gh.url,
               "--per-page", "5", "--no-progress"]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            assert gh.held.wait(timeout=60), "the miner never asked for page 3"
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
        gh.release.set()
        middle = contents(db)
        assert middle["state"]["phase"] == "list" and "page=3" in middle["state"]["next_url"]
        assert middle["issues"] == on_first_two_pages
        done = subprocess.run(cmd + ["--format", "json"], env=env, capture_output=True, timeout=120, text=True)
        assert done.returncode == 0, done.stderr
        summary = json.loads(done.stdout)
        assert TOKEN not in done.stdout + done.stderr
    assert summary["resumed"] is True and summary["pages"] == 6  # pages 3..8, not 1..8
    got, want = contents(db), expected(data)
    assert got["issues"] == want["issues"] and got["comments"] == want["comments"] and got["events"] == want["events"]


def test_find_token_reads_env_then_gh_config(tmp_path):
    hosts = tmp_path / "hosts.yml"
    hosts.write_text("github.com:\n    oauth_token: gho_fromgh\n    user: someone\n")
    assert find_token({"GITHUB_TOKEN": "ghp_env"}, hosts) == "ghp_env"
    assert find_token({}, hosts) == "gho_fromgh"
    assert find_token({}, tmp_path / "absent.yml") is None
    hosts.write_text("\x00\x01 not yaml: [")
    assert find_token({}, hosts) is None


def test_client_refuses_links_to_other_hosts():
    with GitHubClient("http://127.0.0.1:9", TOKEN) as client:
        with pytest.raises(DistdxError) as err:
            client.get_page("http://example.org/repos/a/b/issues")
    assert err.value.code == "DX-STUDY-021"
    assert TOKEN not in repr(GitHubClient("http://127.0.0.1:9", TOKEN))


def test_cli_shows_progress_and_waits_on_stderr_and_never_the_token(tmp_path):
    db = str(tmp_path / "study.db")
    env = {**os.environ, "GITHUB_TOKEN": TOKEN, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
    with Server(FakeGitHub(make_repo(n=8), faults=[Fault(r"/timeline$", "secondary", retry_after=1)])) as gh:
        done = subprocess.run([sys.executable, "-m", "distdx", "study", "mine", REPO, "--db", db, "--api-url", gh.url,
                               "--per-page", "3", "--progress"], env=env, capture_output=True, timeout=120)
    out, err = done.stdout.decode(), done.stderr.decode()
    assert done.returncode == 0, err
    assert "\rtimelines [" in err and "7/7" in err and "waiting 1s (secondary-rate-limit)" in err
    assert "7 issues listed on 3 pages (1 pull requests skipped)" in out
    assert TOKEN not in out + err


def test_cursor_not_advanced_when_issues_changed_during_the_run(tmp_path):
    db = str(tmp_path / "study.db")
    data = make_repo(n=6)
    with Server(FakeGitHub(data)) as gh:
        first = run_mine(db, gh, FakeTime())
        data["issues"][2]["updated_at"] = "2999-01-01T00:00:00Z"  # "during" the next run: after its start
        second = run_mine(db, gh, FakeTime())
    assert second.cursor == first.cursor  # not moved to 2999: the stretch is listed again next time
