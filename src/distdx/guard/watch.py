"""Watching the peers: heartbeats, the adaptive hang threshold and slow phases, lost ranks (a pidfd per peer on
this host, heartbeat silence beyond it), and the stacks gathered when a hang is named. A mixin of
:class:`distdx.guard.session.Session`; the background thread runs :meth:`Watchers._loop`."""

from __future__ import annotations

import collections
import json
import os
import sys
import time
import traceback

from distdx.guard import compare


def pid_alive(pid: int) -> bool:
    """False when the process is gone or a zombie (killed, not yet reaped by its launcher)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return True


class Watchers:
    """Heartbeats out, the peers' in, and what the guard concludes from them."""

    # ------------------------------------------------------------------ heartbeat

    def _tick(self, call: tuple, now: float) -> None:
        """One more start of ``call``: the time since its last start is one period of it."""
        pace = self._pace.get(call)
        if pace is None:
            self._pace[call] = [now, collections.deque(maxlen=16)]
        else:
            pace[1].append(now - pace[0])
            pace[0] = now

    def _median_period(self, call: tuple) -> float | None:
        pace = self._pace.get(call)
        if pace is None or len(pace[1]) < self.config.hang_history:
            return None
        periods = sorted(list(pace[1]))  # list() first: the main thread may append meanwhile
        return periods[len(periods) // 2]

    def hang_threshold(self, act: list) -> float:
        """How long a wait in ``act`` may last before it is a hang: ``hang_factor`` times the
        median period of that call, or of the training step when steps are known and longer (a
        call made many times a step comes round faster than a peer may lag), floored at
        ``hang_floor_s``, once it has ``hang_history`` periods; ``hang_s`` before (the first
        steps, compilation, warm-up)."""
        cfg = self.config
        period = self._median_period((act[1], act[3], act[4]) if act[0] == "collective" else ("backward", act[4]))
        if not cfg.hang_factor or period is None:
            return cfg.hang_s
        period = max(period, self._median_period(("step",)) or 0.0)
        return round(max(cfg.hang_floor_s, cfg.hang_factor * period), 3)

    def enter_phase(self, name: str) -> list | None:
        """Mark the start of a known slow phase; returns the phase it nests in (for leave_phase)."""
        outer = self.phase
        if outer is None:
            self.phase = [name, time.time()]
        return outer

    def leave_phase(self, outer: list | None) -> None:
        if outer is None:
            self.phase = None
            self.phase_end = time.time()

    def heartbeat(self) -> dict:
        act = self.act
        return {
            "rank": self.rank,
            "t": time.time(),
            "pid": self.pid,
            "host": self.host,
            "beat": self.beat,
            "state": self.state,
            "step": self.step,
            "pending": self.step_pending,
            "counts": dict(self.counts),
            "groups": dict(self.groups),
            "act": act if act is None else [*act[:6], self.hang_threshold(act)],
            "phase": self.phase,
            "phase_end": self.phase_end,
            "ring": list(self.ring),
            "last": self.ring[-1] if self.ring else None,
            "last_by_group": dict(self.last_by_group),
            "loaders": dict(self.loaders),
            "drift": self.drift,
        }

    def announce(self, rec: list) -> None:
        """Before each collective: one small key with the call, so that a collective that kills
        the process still leaves its record (the full heartbeat is published less often)."""
        self._set(f"act/{self.rank}", json.dumps([*rec, time.time()], default=str, separators=(",", ":")))

    def publish(self) -> None:
        self._published_at = time.monotonic()
        self.beat += 1
        self._set(f"hb/{self.rank}", json.dumps(self.heartbeat(), default=str, separators=(",", ":")))

    def read_heartbeats(self, ranks: list[int]) -> dict[int, dict]:
        """The peers' heartbeats, each brought up to date with the collective it announced last."""
        present = [r for r in ranks if r in self._published or self._check([f"hb/{r}"])]
        self._published.update(present)
        if not present:
            return {}
        n = len(present)
        values = self._get_many([f"{k}/{r}" for k in ("hb", "act", "st") for r in present])
        out = {}
        for i, r in enumerate(present):
            hb = json.loads(values[i])
            announced = json.loads(values[n + i])
            if announced:
                compare.merge_announced(hb, announced)
            step = int(values[2 * n + i])
            if hb.get("step") is None or step > hb["step"]:
                hb["step"], hb["pending"] = step, False
            out[r] = hb
        return out

    def _update_lost(self, hbs: dict[int, dict], *, grace: bool = True) -> None:
        now = time.monotonic()
        for r, hb in hbs.items():
            if r == self.rank or r in self._lost or hb.get("state") == "exited":
                continue
            beat, since = self._peer_beats.get(r, (-1, now))
            if hb["beat"] != beat:
                self._peer_beats[r] = (hb["beat"], now)
                since = now
            if hb.get("host") == self.host and hb.get("pid") and not pid_alive(int(hb["pid"])):
                self._lost[r] = f"process {hb['pid']} on {hb['host']} is gone (killed or crashed)"
            elif grace and now - since > self.config.silent_s:
                self._lost[r] = f"stopped sending heartbeats {now - since:.1f} s ago (pid {hb.get('pid')} on {hb.get('host')})"

    def _watch_peer_processes(self) -> None:
        """Peers on this host: a pidfd turns readable the moment the process ends, so a killed
        rank is named before the launcher tears the rest of the job down. A peer that has not
        published its first heartbeat yet (it started later than this rank) is looked for again
        on each turn until every peer is either watched or known to run on another host."""
        import select

        fds: dict[int, int] = {}
        try:
            unseen = {r for r in range(self.world) if r != self.rank}
            poller = select.poll()
            while not self._stop.is_set() and (fds or unseen):
                if unseen:
                    for r, hb in self.read_heartbeats(sorted(unseen)).items():
                        unseen.discard(r)
                        if hb.get("host") != self.host or not hb.get("pid") or len(fds) >= 64:
                            continue
                        try:
                            fd = os.pidfd_open(int(hb["pid"]))
                        except OSError:
                            continue
                        fds[fd] = r
                        poller.register(fd, select.POLLIN)
                for fd, _mask in poller.poll(200):
                    rank = fds.pop(fd)
                    poller.unregister(fd)
                    os.close(fd)
                    self._peer_ended(rank)
        except Exception as e:  # noqa: BLE001
            self.internal_error("peer process watch", e)
        finally:
            for fd in fds:
                os.close(fd)

    def _peer_ended(self, rank: int) -> None:
        if self._stop.is_set():
            return
        hbs = self.read_heartbeats([r for r in range(self.world) if r != self.rank])
        hbs[self.rank] = self.heartbeat()
        peer = hbs.get(rank, {})
        if peer.get("state") == "exited":
            return  # a normal end: its guard said goodbye first
        self._lost[rank] = f"process {peer.get('pid')} on {peer.get('host')} is gone (killed or crashed)"
        for finding in compare.find_lost(hbs, {rank: self._lost[rank]}, lockstep=bool(self.replicated)):
            self.emit(finding)

    def _loop(self) -> None:
        failures = 0
        while not self._stop.is_set():
            self._wake.wait(self.config.interval_s)
            self._wake.clear()
            if self._stop.is_set():
                break
            try:
                self.publish()
                self._watch()
                failures = 0
            except Exception as e:  # noqa: BLE001 - the store can vanish when rank 0 exits
                failures += 1
                if failures == 3:
                    self.internal_error("heartbeat thread", e)
                if failures > 20:
                    return
            self._stop.wait(0.05)  # coalesce bursts of collectives into one publish

    def _watch(self) -> None:
        self._serve_dump()
        if self.world > 32 and self.rank not in (0, 1):
            return
        hbs = self.read_heartbeats([r for r in range(self.world) if r != self.rank])
        hbs[self.rank] = self.heartbeat()
        self._update_lost(hbs)
        live = [r for r in sorted(hbs) if r not in self._lost and hbs[r].get("state") != "exited"]
        if not live or live[0] != self.rank:
            return  # the lowest live rank is the job's watcher
        now = time.time()
        checks = (
            ("rings", lambda: compare.compare_rings({r: hb.get("ring", []) for r, hb in hbs.items()})),
            ("loaders", lambda: compare.compare_loaders(hbs)),
            # a rank past the others' last batch is explained by the data, not by a skipped call
            ("skipped", lambda: [] if self._uneven else compare.find_skipped(hbs, now, min_wait_s=2 * self.config.interval_s)),
            ("drift", lambda: compare.compare_drift(hbs, self.drift_names) if self.drift_names else []),
            ("lost", lambda: compare.find_lost(hbs, self._lost, lockstep=bool(self.replicated))),
        )
        for name, check in checks:
            try:
                for finding in check():
                    self._uneven = self._uneven or finding.kind == "uneven_batches"
                    self.emit(finding)
            except Exception as e:  # noqa: BLE001 - one broken check must not stop the others
                self.internal_error(f"{name} check", e)
        running = {r: hb for r, hb in hbs.items() if hb.get("state") != "exited"}
        gone = dict(self._lost) | {r: "has exited" for r, hb in hbs.items() if hb.get("state") == "exited"}
        hang = compare.find_hang(running, now, self.config.hang_s, gone, slow_phase_s=self.config.slow_phase_s)
        if hang is not None and hang.key not in self.reported:
            stacks = self._gather_stacks(hang.key, sorted(running))
            self.emit(hang, stacks=stacks)

    # ------------------------------------------------------------------ stacks

    def main_stack(self) -> str:
        frame = sys._current_frames().get(self._main_ident)
        return "".join(traceback.format_stack(frame)) if frame is not None else ""

    def _gather_stacks(self, token: str, ranks: list[int]) -> dict[str, str]:
        self._set("dump/req", token)
        self._serve_dump()
        keys = {r: f"dump/{token}/{r}" for r in ranks}
        deadline = time.monotonic() + max(3 * self.config.interval_s, 2.0)
        while time.monotonic() < deadline and not all(self._check([k]) for k in keys.values()):
            time.sleep(0.05)
        out = {}
        for r, k in keys.items():
            if self._check([k]):
                out[str(r)] = json.loads(self._get_many([k])[0])
        return out

    def _serve_dump(self) -> None:
        if not self._check(["dump/req"]):
            return
        token = self._get_many(["dump/req"])[0].decode()
        if token == self._served_dump:
            return
        self._served_dump = token
        payload = {"stack": self.main_stack(), "last_collectives": [compare.describe_call(r) + f" seq {r[1]}" for r in list(self.ring)[-5:]]}
        self._set(f"dump/{token}/{self.rank}", json.dumps(payload))
