"""One rank's guard session: the store side channel, the collective ring, the heartbeat thread.

A session starts once the default process group exists. It talks to the other ranks only through
torch.distributed's key-value store (a second TCPStore client on MASTER_ADDR:MASTER_PORT, or the
default group's store), never through collectives, so a broken job cannot make the guard hang.
Every path catches its own exceptions: a guard failure becomes one ``guard_error`` event.

:class:`Session` is the façade; each concern is a mixin in its own module: the store side channel
(``store.StoreChannel``), heartbeats, hang detection, lost ranks and stacks (``watch.Watchers``),
steps and numerics (``numerics.Numerics``) and data loading (``data.DataChecks``). This module keeps
the lifecycle, events, preflight and the collective ring.
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
from distdx.guard.data import DataChecks
from distdx.guard.events import EventLog, GuardEvent, short
from distdx.guard.numerics import Numerics
from distdx.guard.store import StoreChannel
from distdx.guard.watch import Watchers

_GUARD_DIR = os.path.dirname(os.path.abspath(__file__))


class GuardError(RuntimeError):
    """Raised only with ``fail_fast=True``: the guard found an error that will hang or corrupt the job."""


class Session(StoreChannel, Watchers, Numerics, DataChecks):
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
            error=short(exc, 400),
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
                    f"guard internal error in {where}: {type(exc).__name__}: {short(exc)} (the job is not affected)",
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
            error=short(exc, 400),
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
            error=short(exc, 400),
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
