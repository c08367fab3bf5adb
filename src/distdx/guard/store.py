"""The guard's side channel: torch.distributed's key-value store, never a collective, so a broken job cannot
make the guard hang. A mixin of :class:`distdx.guard.session.Session`."""

from __future__ import annotations

import json
import os
import time
from typing import Any


class StoreChannel:
    """Set, get and exchange values through the store (one client, serialised between threads)."""

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
