"""Open a local page in headless Chromium and report what the page saw, over the DevTools pipe.

The DevTools protocol runs over ``--remote-debugging-pipe`` (commands on fd 3, replies on fd 4,
each JSON message ended by a NUL byte), so no WebSocket library is needed.
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import shutil
import signal
import subprocess
import time
from pathlib import Path

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_chromium() -> str | None:
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


class _Pipe:
    def __init__(self, proc: subprocess.Popen, write_fd: int, read_fd: int, deadline: float, log: Path) -> None:
        self.proc, self.write_fd, self.read_fd, self.deadline, self.log = proc, write_fd, read_fd, deadline, log
        self.buf = b""
        self.next_id = 0
        self.events: list[dict] = []

    def _read_message(self) -> dict:
        while b"\0" not in self.buf:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("chromium did not answer in time")
            ready, _, _ = select.select([self.read_fd], [], [], min(left, 1.0))
            if ready:
                chunk = os.read(self.read_fd, 1 << 16)
                if not chunk:
                    raise RuntimeError("chromium closed the DevTools pipe: " + self.log.read_text(errors="replace")[-2000:])
                self.buf += chunk
        raw, self.buf = self.buf.split(b"\0", 1)
        return json.loads(raw)

    def call(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.write_fd, json.dumps(msg).encode() + b"\0")
        while True:
            reply = self._read_message()
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method: str) -> dict:
        for ev in self.events:
            if ev.get("method") == method:
                return ev
        while True:
            ev = self._read_message()
            self.events.append(ev)
            if ev.get("method") == method:
                return ev


PROBE = """JSON.stringify({
  title: document.title,
  figures: document.querySelectorAll('figure').length,
  images: Array.from(document.images).map(i => ({ok: i.complete && i.naturalWidth > 0, width: i.naturalWidth})),
  tables: document.querySelectorAll('table').length,
  text: document.body.innerText.slice(0, 20000)
})"""


def open_page(chromium: str, page: Path, user_data_dir: Path, timeout: float = 90.0) -> dict:
    """Load ``page``; return the probe's answer plus ``errors``: console errors, exceptions, failed loads."""
    to_browser_r, to_browser_w = os.pipe()
    from_browser_r, from_browser_w = os.pipe()
    # move the child's ends above 9, so that mapping them onto 3 and 4 cannot clobber one another
    for name in ("to_browser_r", "from_browser_w"):
        fd = locals()[name]
        high = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
        os.close(fd)
        if name == "to_browser_r":
            to_browser_r = high
        else:
            from_browser_w = high
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--no-first-run", "--disable-dev-shm-usage",
             f"--user-data-dir={user_data_dir}", "--remote-debugging-pipe", "about:blank"]
    # bash puts our pipe ends on the fds Chromium expects: 3 = commands in, 4 = replies out
    script = f'exec "$0" "$@" 3<&{to_browser_r} 4>&{from_browser_w} {to_browser_r}<&- {from_browser_w}>&-'
    user_data_dir.mkdir(parents=True, exist_ok=True)
    log = user_data_dir / "chromium-stderr.log"
    with open(log, "wb") as err:
        # its own session, so that the browser's helper processes are ended with it
        proc = subprocess.Popen(["bash", "-c", script, chromium, *flags], pass_fds=(to_browser_r, from_browser_w),
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                start_new_session=True)
    os.close(to_browser_r)
    os.close(from_browser_w)
    pipe = _Pipe(proc, to_browser_w, from_browser_r, time.monotonic() + timeout, log)
    try:
        target = pipe.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = pipe.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            pipe.call(f"{domain}.enable", session=session)
        pipe.call("Page.navigate", {"url": page.resolve().as_uri()}, session=session)
        pipe.wait_event("Page.loadEventFired")
        probe = pipe.call("Runtime.evaluate", {"expression": PROBE, "returnByValue": True}, session=session)
        result = json.loads(probe["result"]["value"])
        errors = []
        for ev in pipe.events:
            method, params = ev.get("method"), ev.get("params", {})
            if method == "Runtime.exceptionThrown":
                details = params.get("exceptionDetails", {})
                errors.append(f'{details.get("text", "exception")} {details.get("exception", {}).get("description", "")}')
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                errors.append(str(params.get("args")))
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                errors.append(params["entry"].get("text", ""))
        result["errors"] = errors
        try:
            pipe.call("Browser.close")
        except (RuntimeError, TimeoutError):
            pass
        return result
    finally:
        os.close(to_browser_w)
        os.close(from_browser_r)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the group is ours: the browser and its helpers
        except ProcessLookupError:
            pass
        proc.wait(timeout=10)
