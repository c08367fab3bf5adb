"""Guard options: one frozen record, filled from keyword arguments and ``DISTDX_GUARD_*`` variables."""

from __future__ import annotations

import os
from dataclasses import dataclass, fields, replace

from distdx.errors import DistdxError


@dataclass(frozen=True)
class GuardConfig:
    out_dir: str = "distdx-guard"
    """Folder of the per-rank event files ``guard-rank{r}.jsonl`` (``DISTDX_GUARD_DIR``)."""
    interval_s: float = 0.5
    """How often each rank publishes its heartbeat and last collectives to the store."""
    hang_s: float = 20.0
    """A rank inside a collective (or backward) this long while a peer is elsewhere is a hang, for a
    call with too little history to know its pace (the first steps, a first compiled step)."""
    hang_factor: float = 10.0
    """Once a call has come round ``hang_history`` times, a wait in it longer than this many times
    its median period (the time from one call at that line to the next, i.e. the step time) is a
    hang; 0 turns the adaptive threshold off and ``hang_s`` applies to every call."""
    hang_floor_s: float = 5.0
    """The adaptive threshold is never below this (fast loops, jitter, a slow rank's first batch)."""
    hang_history: int = 2
    """How many periods of a call are needed before its adaptive threshold replaces ``hang_s``."""
    slow_phase_s: float = 600.0
    """While a lagging rank is in a known slow phase (``torch.save`` or a distributed checkpoint
    save, evaluation with the model in eval mode after training began, or
    ``distdx.guard.slow_phase(...)``), a wait is a hang only after this long."""
    silent_s: float = 5.0
    """A peer whose heartbeat has not changed this long is reported as lost."""
    sync_publish_s: float = 0.05
    """Publish before a collective when the last publish is older than this, so a collective that
    crashes the process leaves its record behind; between two, the heartbeat thread publishes."""
    handshake_s: float = 5.0
    """On a collective signature seen for the first time, wait this long for the peers' records."""
    preflight_timeout_s: float = 30.0
    """How long the agreement checks wait for every rank's facts."""
    numerics_every: int = 1
    """Check the loss for NaN/Inf every N steps (one scalar check; a sync on GPU)."""
    grad_every: int = 10
    """Check the gradients (NaN/Inf, norm spikes) every N steps, and at any step whose loss is not
    finite; a pass over all gradients, so not every step by default."""
    drift_every: int = 200
    """Compare parameter checksums across data-parallel replicas every N steps; 0 turns it off."""
    spike_factor: float = 10.0
    """A gradient norm this many times the median of the last 50 steps is a spike."""
    overflow_patience: int = 8
    """This many consecutive loss-scale reductions is a collapse."""
    min_loss_scale: float = 1.0
    """A loss scale below this is a collapse."""
    ring: int = 16
    """How many recent collectives each rank keeps and publishes."""
    fail_fast: bool = False
    """Raise :class:`GuardError` at the next guarded call after an error-level finding instead of
    letting the job hang; off by default, so the guard never takes a job down."""
    echo: bool = True
    """Also write each warning or error event as one ``[distdx-guard] ...`` line to stderr."""

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None, **overrides: object) -> "GuardConfig":
        env = os.environ if environ is None else environ
        values: dict[str, object] = {}
        for f in fields(cls):
            name = "DISTDX_GUARD_DIR" if f.name == "out_dir" else f"DISTDX_GUARD_{f.name.upper()}"
            if name in env:
                values[f.name] = _convert(name, env[name], f.type)
        cfg = cls(**values)
        return cfg.with_options(**overrides) if overrides else cfg

    def with_options(self, **overrides: object) -> "GuardConfig":
        known = {f.name: f.type for f in fields(self)}
        for key, value in overrides.items():
            if key not in known:
                raise DistdxError(
                    "DX-GUARDCFG-001",
                    f"unknown guard option {key!r}",
                    hint="valid options: " + ", ".join(sorted(known)),
                )
            overrides[key] = _convert(key, value, known[key]) if isinstance(value, str) else value
        return replace(self, **overrides)


def _convert(name: str, raw: str, kind: object) -> object:
    kind = str(kind)
    try:
        if kind == "bool":
            if raw.strip().lower() in ("1", "true", "yes", "on"):
                return True
            if raw.strip().lower() in ("0", "false", "no", "off", ""):
                return False
            raise ValueError(raw)
        if kind == "int":
            return int(raw)
        if kind == "float":
            return float(raw)
        return raw
    except ValueError:
        raise DistdxError(
            "DX-GUARDCFG-003",
            f"{name}={raw!r} is not a valid {kind}",
            hint=f"set {name} to a {kind} value or unset it",
        ) from None
