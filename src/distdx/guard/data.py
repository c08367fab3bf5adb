"""Data loading: each DataLoader's epoch length and batch count per rank, compared so that uneven batches are
named before they hang a collective. A mixin of :class:`distdx.guard.session.Session`."""

from __future__ import annotations

from typing import Any


class DataChecks:
    """Where each rank's loaders are."""

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
