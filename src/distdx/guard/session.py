"""One rank's guard session: the store side channel, the collective ring, the heartbeat thread.

A session starts once the default process group exists. It talks to the other ranks only through
torch.distributed's key-value store (a second TCPStore client on MASTER_ADDR:MASTER_PORT, or the
default group's store), never through collectives, so a broken job cannot make the guard hang.
Every path catches its own exceptions: a guard failure becomes one ``guard_error`` event.
"""

from __future__ import annotations

import atexit
import collections
import hashlib
import json
import os
import socket
import sys
import threading
import time
import traceback
from typing import Any

from distdx.guard import compare
from distdx.guard.config import GuardConfig
from distdx.guard.events import EventLog, GuardEvent

_GUARD_DIR = os.path.dirname(os.path.abspath(__file__))


class GuardError(RuntimeError):
    """Raised only with ``fail_fast=True``: the guard found an error that will hang or corrupt the job."""


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _pid_alive(pid: int) -> bool:
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


class Session:
    def __init__(self, config: GuardConfig, dist: Any) -> None:
        self.config = config
        self.dist = dist
        self.rank = dist.get_rank()
        self.world = dist.get_world_size()
        self.backend = str(dist.get_backend())
        self.host = socket.gethostname()
        self.pid = os.getpid()
        self.log = EventLog(config.out_dir, self.rank)
        self.step = 0
        self.step_pending = False  # an optimizer step ended the step; the next batch or backward opens the next
        self.step_signal = False  # seen an optimizer step, a loss-scale update or guard.step
        self.site_calls: dict[str, int] = {}
        self.manual_steps = False
        self.beat = 0
        self.state = "running"
        self.act: list | None = None
        self.phase: list | None = None  # [name, since]: a known slow phase (checkpoint save, evaluation)
        self.phase_end = 0.0  # when the last slow phase ended: a wait is timed from then at the earliest
        self._pace: dict[tuple, list] = {}  # call -> [last start, recent periods]: its adaptive hang threshold
        self.ring: collections.deque = collections.deque(maxlen=config.ring)
        self.counts: dict[str, int] = {}
        self.last_by_group: dict[str, list] = {}
        self.groups: dict[str, list[int]] = {"world": list(range(self.world))}
        self._group_keys: dict[int, str] = {}
        self.seen_signatures: set[tuple] = set()
        self.loaders: dict[str, list] = {}
        self._loader_index: dict[int, str] = {}
        self.drift: list | None = None
        self.param_names: dict[int, str] = {}
        self.replicated: list[Any] = []  # data-parallel models whose replicas must stay equal
        self.drift_names: list[str] = []
        self.model_checks = 0
        self.exchanges: dict[str, int] = collections.Counter()
        self.fatal: compare.Finding | None = None
        self.reported: set[str] = set()
        self.problems = 0
        self.internal_errors = 0
        self.collectives = 0
        self._lock = threading.Lock()  # serialises our store client between threads
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._peer_beats: dict[int, tuple[int, float]] = {}
        self._lost: dict[int, str] = {}
        self._served_dump = ""
        self._main_ident = threading.main_thread().ident
        self._norms: collections.deque = collections.deque(maxlen=50)
        self._overflows = 0
        self._last_scale: float | None = None
        self._nonfinite_reported_step = -2
        self._uneven = False
        self.force_grad_check = False
        self.loss_scaling = False  # a GradScaler or DeepSpeed engine scales the loss before backward
        self.store = self._open_store()
        self._threads: list[threading.Thread] = []
        self._published_at = 0.0
        self._published: set[int] = set()  # ranks whose heartbeat and announcement keys exist

    # ------------------------------------------------------------------ store

    def _open_store(self) -> Any:
        from datetime import timedelta

        dist = self.dist
        prefix = "distdx-guard/{}/{}/".format(
            os.environ.get("TORCHELASTIC_RUN_ID", "run"), os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
        )
        base = None
        addr, port = os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT")
        if addr and port:
            try:
                base = dist.TCPStore(addr, int(port), is_master=False, timeout=timedelta(seconds=10), wait_for_workers=False)
            except Exception:  # noqa: BLE001 - fall back to the group's own client
                base = None
        if base is None:
            base = dist.distributed_c10d._get_default_store()
        store = dist.PrefixStore(prefix, base)
        return store

    def _set(self, key: str, value: str) -> None:
        with self._lock:
            self.store.set(key, value)

    def _get_many(self, keys: list[str]) -> list[bytes]:
        with self._lock:
            return self.store.multi_get(keys)

    def _check(self, keys: list[str]) -> bool:
        with self._lock:
            return self.store.check(keys)

    def exchange(self, name: str, value: object, timeout_s: float | None = None) -> dict[int, Any]:
        """Every rank publishes ``value`` under ``name``; returns what the ranks that answered in
        time published (a rank that did not is left out)."""
        n = self.exchanges[name]
        self.exchanges[name] += 1
        keys = [f"x/{name}/{n}/{r}" for r in range(self.world)]
        self._set(keys[self.rank], json.dumps(value, default=str))
        deadline = time.monotonic() + (self.config.preflight_timeout_s if timeout_s is None else timeout_s)
        present: list[int] = []
        delay = 0.005
        while True:
            present = [r for r in range(self.world) if self._check([keys[r]])]
            if len(present) == self.world or time.monotonic() > deadline:
                break
            time.sleep(delay)
            delay = min(delay * 2, 0.1)
        values = self._get_many([keys[r] for r in present])
        return {r: json.loads(v) for r, v in zip(present, values)}

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        self._set(f"act/{self.rank}", "null")
        self._set(f"st/{self.rank}", str(self.step))
        self.publish()
        self.preflight()
        self._threads.append(threading.Thread(target=self._loop, name="distdx-guard", daemon=True))
        if hasattr(os, "pidfd_open"):
            self._threads.append(threading.Thread(target=self._watch_peer_processes, name="distdx-guard-peers", daemon=True))
        for thread in self._threads:
            thread.start()
        atexit.register(self.close)
        self.emit_local(
            "guard_started",
            f"guard active on rank {self.rank} of {self.world} (backend {self.backend}, pid {self.pid}, host {self.host})",
            severity="info",
        )

    def on_uncaught(self, exc_type: type, exc: BaseException) -> None:
        if exc_type is GuardError or issubclass(exc_type, KeyboardInterrupt):
            return
        # the error text is in the job's own traceback: the event adds where (rank, step), and
        # keeps the text in a field so signature rules do not count it twice
        step = self.step if self.step_signal or not self.ring else self.ring[-1][7]
        self.emit_local(
            "exception",
            f"rank {self.rank} failed at step {step} with {exc_type.__name__} (its traceback is in the rank's log)",
            step=step,
            once="exception",
            echo=False,
            exception=exc_type.__name__,
            error=_short(exc, 400),
        )

    def close(self) -> None:
        if self.state == "exited":
            return
        self.state = "exited"
        self.act = None
        if self.step_pending:
            self.open_step()
        self._stop.set()
        self._wake.set()
        try:
            self.publish()
        except Exception:  # noqa: BLE001 - the store may be gone at exit
            pass
        # a daemon thread still inside a store call when the interpreter finalises is unwound
        # through C++ code that cannot unwind, and the process aborts ("terminate called without
        # an active exception", seen once in 20 guarded runs): let them finish first
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(timeout=2.0)
        self.emit_local(
            "summary",
            f"guard summary on rank {self.rank}: {self.collectives} collectives, {self.step} steps, "
            f"{self.problems} problems, {self.internal_errors} guard errors",
            severity="info",
            collectives=self.collectives,
            steps=self.step,
            problems=self.problems,
        )

    # ------------------------------------------------------------------ events

    def _event(self, kind: str, message: str, *, rank: int | None, step: int | None, severity: str, fields: dict) -> GuardEvent:
        return GuardEvent(
            kind=kind,
            message=message,
            rank=rank,
            step=step,
            severity=severity,
            host=self.host,
            time=time.time(),
            reporter=self.rank,
            fields=fields,
        )

    def _write(self, event: GuardEvent, *, echo: bool = True) -> None:
        self.log.append(event)
        if event.severity != "info":
            self.problems += 1
            if self.config.echo and echo:
                try:
                    sys.stderr.write(f"[distdx-guard] {event.message}\n")
                    sys.stderr.flush()
                except Exception:  # noqa: BLE001
                    pass

    def emit_local(self, kind: str, message: str, *, severity: str = "error", step: int | None = None, once: str = "",
                   echo: bool = True, **fields: Any) -> None:
        if once:
            if once in self.reported:
                return
            self.reported.add(once)
        event = self._event(kind, message, rank=self.rank, step=self.step if step is None else step, severity=severity, fields=fields)
        self._write(event, echo=echo)
        if severity == "error" and self.config.fail_fast and self.fatal is None:
            self.fatal = compare.Finding(kind=kind, message=message, ranks=(self.rank,), step=step)

    def emit(self, finding: compare.Finding, **extra: Any) -> bool:
        """Write a cross-rank finding once for the whole job (the first rank to claim its key)."""
        key = finding.key or finding.message
        if key in self.reported:
            return False
        self.reported.add(key)
        try:
            with self._lock:
                first = self.store.add(f"found/{key}", 1) == 1
        except Exception:  # noqa: BLE001 - without the store, report locally
            first = True
        if finding.severity == "error" and self.config.fail_fast and self.fatal is None:
            self.fatal = finding
        if not first:
            return False
        rank = finding.ranks[0] if finding.ranks else None
        fields = dict(finding.fields, ranks=list(finding.ranks), **extra)
        self._write(self._event(finding.kind, finding.message, rank=rank, step=finding.step, severity=finding.severity, fields=fields))
        return True

    def internal_error(self, where: str, exc: BaseException) -> None:
        self.internal_errors += 1
        if self.internal_errors > 5:
            return
        try:
            self.log.append(
                self._event(
                    "guard_error",
                    f"guard internal error in {where}: {type(exc).__name__}: {_short(exc)} (the job is not affected)",
                    rank=self.rank,
                    step=self.step,
                    severity="info",
                    fields={"traceback": traceback.format_exc(limit=5)},
                )
            )
        except Exception:  # noqa: BLE001
            pass

    def raise_if_fatal(self) -> None:
        if self.fatal is not None:
            finding, self.fatal = self.fatal, None
            raise GuardError(f"[distdx-guard] {finding.message} (fail_fast is on; see {self.log.path})")

    # ------------------------------------------------------------------ preflight

    def preflight(self) -> None:
        from distdx.guard import facts

        answers = self.exchange("facts", facts.local_facts(self.world, self.backend))
        missing = sorted(set(range(self.world)) - set(answers))
        if missing:
            self.emit(
                compare.Finding(
                    kind="preflight_incomplete",
                    message=f"preflight: {compare._rank_list(missing)} did not publish their facts within "
                    f"{self.config.preflight_timeout_s:.0f} s",
                    ranks=tuple(missing),
                    severity="warning",
                    key="preflight_incomplete",
                )
            )
        for finding in compare.compare_facts(answers):
            self.emit(finding)
        self.raise_if_fatal()

    def check_model(self, model: Any, *, replicated: bool = False, config: object = None) -> compare.Finding | None:
        from distdx.guard import facts

        names = {id(p): n for n, p in model.named_parameters()}
        self.param_names.update(names)
        if replicated and all(m is not model for m in self.replicated):
            self.replicated.append(model)
            self.drift_names = [n for n, _p in model.named_parameters()]
        details = facts.model_signature(model)
        digest = hashlib.sha256(json.dumps(details).encode()).hexdigest()[:16]
        value: dict[str, Any] = {"digest": digest}
        if config is not None:
            value["config"] = facts.fingerprint(config)
        self.model_checks += 1
        answers = self.exchange("model", value)
        result = None
        if len({a["digest"] for a in answers.values()}) > 1:
            full = self.exchange("model-detail", details)
            result = compare.compare_models(full)
            if result is not None:
                result = compare.Finding(
                    kind=result.kind,
                    message=result.message,
                    ranks=result.ranks,
                    step=self.step,
                    key=f"model_mismatch:{self.model_checks}",
                    fields=result.fields,
                )
                self.emit(result)
        configs = {r: a["config"] for r, a in answers.items() if "config" in a}
        if len(set(configs.values())) > 1:
            majority, minority, groups = compare.split_majority(configs)
            self.emit(
                compare.Finding(
                    kind="config_mismatch",
                    message="config mismatch across ranks: the engine config fingerprint is "
                    + " and ".join(f"{v} on {compare._rank_list(rs)}" for v, rs in groups.items()),
                    ranks=tuple(minority),
                    severity="error",
                    key=f"config_mismatch:{self.model_checks}",
                )
            )
        self.raise_if_fatal()
        return result

    # ------------------------------------------------------------------ collectives

    def group_key(self, group: Any) -> str:
        if group is None or group is self.dist.GroupMember.WORLD:
            return "world"
        if group is getattr(self.dist.GroupMember, "NON_GROUP_MEMBER", object()):
            return "outside"  # never in self.groups: the call is not recorded
        key = self._group_keys.get(id(group))
        if key is None:
            ranks = list(self.dist.get_process_group_ranks(group))
            key = "g" + ",".join(str(r) for r in ranks)
            self._group_keys[id(group)] = key
            self.groups[key] = ranks
        return key

    def before_collective(self, op: str, group: Any, shape: str, dtype: str, root: Any, site: str) -> list | None:
        self.raise_if_fatal()
        g = self.group_key(group)
        if self.rank not in self.groups.get(g, ()):
            return None  # torch returns at once for a rank outside the group: nothing to match
        seq = self.counts.get(g, 0) + 1
        self.counts[g] = seq
        rec = [g, seq, op, shape, dtype, root, site, self.current_step(site)]
        self.ring.append(rec)
        self.last_by_group[g] = rec
        self.collectives += 1
        now = time.time()
        self.act = ["collective", g, seq, op, site, now]
        self._tick((g, op, site), now)
        signature = (g, op, shape, dtype, root, site)
        if signature not in self.seen_signatures:
            self.seen_signatures.add(signature)
            self.handshake(rec)
            self.raise_if_fatal()
        else:
            self.announce(rec)
            if time.monotonic() - self._published_at > self.config.sync_publish_s:
                self.publish()
        return rec

    def handshake(self, rec: list) -> None:
        """First time this call is seen: publish now and wait (bounded) for the peers to reach the
        same sequence number, then compare, so a mismatch is named before the collective runs."""
        g, seq = rec[0], rec[1]
        self.publish()
        peers = [p for p in self.groups.get(g, []) if p != self.rank]
        deadline = time.monotonic() + self.config.handshake_s
        delay = 0.002
        while True:
            hbs = self.read_heartbeats(peers)
            pending = [
                p for p in peers
                if p not in self._lost and (hbs.get(p) or {}).get("state") != "exited"
                and (hbs.get(p) or {}).get("counts", {}).get(g, 0) < seq
            ]
            if not pending or time.monotonic() > deadline:
                break
            time.sleep(delay)
            delay = min(delay * 2, 0.05)
        hbs[self.rank] = self.heartbeat()
        for finding in compare.compare_rings({r: hb.get("ring", []) for r, hb in hbs.items() if hb}):
            self.emit(finding)

    def collective_failed(self, rec: list, exc: BaseException) -> None:
        self.emit_local(
            "collective_failed",
            f"collective failed at seq {rec[1]} on group {rec[0]} (step {rec[7]}): rank {self.rank} "
            f"{compare.describe_call(rec)} raised {type(exc).__name__}",
            echo=False,
            error=_short(exc, 400),
            step=rec[7],
            op=rec[2],
            seq=rec[1],
        )
        self.analyse_failure()  # still "in" the failed call: peers must not count it as completed
        self.act = None

    def backward_failed(self, exc: BaseException) -> None:
        self.emit_local(
            "collective_failed",
            f"collective failed in backward (DDP gradient all-reduce) at step {self.step} on rank {self.rank}: "
            f"raised {type(exc).__name__}",
            echo=False,
            error=_short(exc, 400),
            op="backward",
        )
        self.analyse_failure()
        self.act = None

    def analyse_failure(self) -> None:
        """After a collective failed here: compare with what the peers published last. A lost
        peer is looked for first, and again after the comparisons: the launcher tears this rank
        down moments after a peer dies, and a killed peer closes its sockets a moment before it
        shows as gone."""
        self.publish()
        hbs = self.read_heartbeats([r for r in range(self.world) if r != self.rank])
        hbs[self.rank] = self.heartbeat()
        self._emit_lost(hbs)
        for finding in compare.compare_rings({r: hb.get("ring", []) for r, hb in hbs.items() if hb}):
            self.emit(finding)
        for finding in compare.compare_loaders(hbs):
            self._uneven = True
            self.emit(finding)
        if not self._uneven:
            for finding in compare.find_skipped(hbs, time.time()):
                self.emit(finding)
        for _ in range(6):
            if self._lost:
                break
            time.sleep(0.05)
            self._emit_lost(hbs)

    def _emit_lost(self, hbs: dict[int, dict]) -> None:
        self._update_lost(hbs, grace=False)
        for finding in compare.find_lost(hbs, self._lost, lockstep=bool(self.replicated)):
            self.emit(finding)

    def collective_done(self) -> None:
        self.act = None

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
            if hb.get("host") == self.host and hb.get("pid") and not _pid_alive(int(hb["pid"])):
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

    # ------------------------------------------------------------------ numerics

    def current_step(self, site: str = "") -> int:
        """The step index; before any step signal (optimizer step, loss-scale update,
        ``guard.step``), the number of earlier calls from the same line, i.e. the loop iteration."""
        if self.step_signal:
            return self.step
        n = self.site_calls.get(site, 0)
        self.site_calls[site] = n + 1
        return n

    def open_step(self) -> None:
        if self.step_pending:
            self.step_pending = False
            self.step += 1
            self._announce_step()
            self._after_step_checks()

    def _announce_step(self) -> None:
        """One tiny key per step, so a rank that dies between heartbeats leaves its step behind."""
        self._tick(("step",), time.time())
        try:
            self._set(f"st/{self.rank}", str(self.step))
        except Exception as e:  # noqa: BLE001
            self.internal_error("step announcement", e)

    def on_backward(self, loss: Any, site: str) -> None:
        self.raise_if_fatal()
        self.open_step()
        now = time.time()
        self.act = ["backward", "ddp", self.step, "backward", site, now]
        self._tick(("backward", site), now)
        if self.config.numerics_every and self.step % self.config.numerics_every == 0 and loss.numel() == 1:
            self.check_loss(loss)

    def check_loss(self, loss: Any) -> None:
        import torch

        value = loss.detach()
        if not bool(torch.isfinite(value).all()):
            if self.loss_scaling and not bool(torch.isnan(value).any()):
                return  # a scaled loss overflowing is the loss scaler's business (see on_loss_scale)
            self.force_grad_check = True  # name the parameter at this very step
            if self._nonfinite_reported_step != self.step - 1:
                self.emit_local(
                    "nonfinite_loss",
                    f"non-finite loss at step {self.step} on rank {self.rank}: {float(value.float().reshape(-1)[0])}",
                    value=str(float(value.float().reshape(-1)[0])),
                )
            self._nonfinite_reported_step = self.step

    def check_grads(self, params: list[Any]) -> None:
        import torch

        grads = [p.grad for p in params if p.grad is not None]
        if not grads:
            return
        norms = torch._foreach_norm([g.detach() for g in grads]) if hasattr(torch, "_foreach_norm") else [g.detach().norm() for g in grads]
        total = float(torch.linalg.vector_norm(torch.stack([n.double().reshape(()) for n in norms])))
        if total != total or total in (float("inf"), float("-inf")):
            bad = next((p for p in params if p.grad is not None and not bool(torch.isfinite(p.grad).all())), None)
            if bad is None:
                return  # every gradient is finite; only their total norm overflows
            name = self.param_names.get(id(bad), f"a parameter of shape {list(bad.shape)}")
            kind = "nan" if bad is not None and bool(torch.isnan(bad.grad).any()) else "inf"
            self.emit_local(
                "nonfinite_grad",
                f"non-finite gradient at step {self.step} on rank {self.rank}: {name} has {kind}",
                once=f"nonfinite_grad:{self.step // 100}",
                parameter=name,
            )
            return
        if len(self._norms) >= 10:
            median = sorted(self._norms)[len(self._norms) // 2]
            if median > 0 and total > self.config.spike_factor * median:
                self.emit_local(
                    "grad_spike",
                    f"gradient norm spike at step {self.step} on rank {self.rank}: {total:.3g} vs median {median:.3g} of the last {len(self._norms)} steps",
                    severity="warning",
                    once=f"grad_spike:{self.step // 100}",
                    norm=total,
                    median=median,
                )
        self._norms.append(total)

    def on_loss_scale(self, before: float, after: float, overflow: bool | None = None) -> None:
        if overflow is None:
            overflow = after < before
        self._overflows = self._overflows + 1 if overflow else 0
        collapsed = self._overflows >= self.config.overflow_patience or after < self.config.min_loss_scale
        if collapsed:
            self.emit_local(
                "loss_scale_collapse",
                f"loss scale collapsed at step {self.step} on rank {self.rank}: {self._overflows} consecutive overflows, "
                f"loss scale {after:g}; the fp16 gradients overflow at every scale",
                once="loss_scale_collapse",
                scale=after,
                overflows=self._overflows,
            )

    def after_step(self, *, defer: bool = False) -> None:
        """The end of a step. Deferred (optimizer hooks): the count moves on at the next batch or
        backward, so a collective after ``optimizer.step()`` still belongs to its step."""
        self.step_signal = True
        if defer:
            self.step_pending = True
            return
        self.step += 1
        self._announce_step()
        self._after_step_checks()

    def _after_step_checks(self) -> None:
        every = self.config.drift_every
        if every and self.replicated and self.step % every == 0:
            import torch

            with torch.no_grad():
                sums = [float(p.detach().double().sum()) for p in self.replicated[0].parameters()]
            self.drift = [self.step, hashlib.sha256(repr(sums).encode()).hexdigest()[:16], sums[:500]]
            self._wake.set()

    # ------------------------------------------------------------------ data

    def loader_started(self, loader: Any, site: str) -> str:
        # a loader is known by where it is iterated: a new DataLoader object per epoch is
        # still the same loader, and the same code line is the same on every rank
        idx = site or f"loader {self._loader_index.setdefault(id(loader), str(len(self._loader_index)))}"
        try:
            length = len(loader)
        except TypeError:
            length = -1
        epoch = self.loaders[idx][0] + 1 if idx in self.loaders else 0
        self.loaders[idx] = [epoch, length, 0, False]
        self._wake.set()
        return idx

    def loader_next(self, idx: str) -> None:
        self.open_step()
        self.loaders[idx][2] += 1

    def loader_done(self, idx: str) -> None:
        self.loaders[idx][3] = True
        self._wake.set()
