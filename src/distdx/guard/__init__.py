"""Runtime guard for torch.distributed jobs: names the rank, step and exact difference of a
failure in seconds instead of at the collective timeout.

Contract
--------
- ``install(**options)`` switches the guard on in this process (idempotent); ``uninstall()`` puts
  everything back. ``guarded(**options)`` does both as a context manager or decorator. Launched
  through ``distdx run --guard``, an unmodified script gets it from a ``sitecustomize`` on
  ``PYTHONPATH`` (``DISTDX_GUARD=1``); options then come from ``DISTDX_GUARD_*`` variables
  (:class:`GuardConfig`).
- It wraps, when they are imported: the ``torch.distributed`` collectives, ``init_process_group``
  / ``destroy_process_group``, ``DistributedDataParallel``, ``DataLoader`` iteration, optimizer
  steps (global step hooks), ``Tensor.backward``, ``GradScaler.update``, ``deepspeed.initialize``
  and DeepSpeed's dynamic loss scaler. It works with any process group (gloo, NCCL, ...).
- Ranks talk only through torch.distributed's key-value store (never through collectives that
  could hang): before the first step they agree on versions, world size, the environment that
  matters, a config fingerprint and each model's parameter names, shapes, dtypes and
  requires_grad (digest first, details on mismatch); each collective's sequence number, op, shape,
  dtype, root, group and call site is recorded in a ring published by a heartbeat thread, checked
  against the peers on first sight of each call and on every heartbeat; a hang report names the
  stuck, lagging and lost ranks with every rank's Python stack. A wait is a hang past a threshold
  that follows the job's pace: ``hang_factor`` times the median period of the call waited in
  (floor ``hang_floor_s``), ``hang_s`` while a call has no history yet, ``slow_phase_s`` while a
  lagging rank saves a checkpoint, evaluates or is inside ``slow_phase(...)``. Numerics: non-finite loss or
  gradients (step, rank, parameter), loss-scale collapse, gradient-norm spikes, replica drift.
  Data: different batch counts per rank in an epoch.
- Output: one JSONL file per rank, ``$DISTDX_GUARD_DIR/guard-rank{r}.jsonl``, one event a line
  (:class:`GuardEvent`, ``"distdx": 1``); warnings and errors are also echoed to stderr as
  ``[distdx-guard] <message>``, the text the ``DX-GUARD-*`` signature rules match.
- It never takes the job down: every guard path catches its own exceptions (a ``guard_error``
  event). With ``fail_fast=True`` an error-level finding raises :class:`GuardError` at the next
  guarded call instead of letting the job hang.
- ``torch`` is imported only by the functions that need it.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

from distdx.guard.config import GuardConfig
from distdx.guard.events import GuardEvent, read_events
from distdx.guard.session import GuardError

__all__ = [
    "GuardConfig",
    "GuardError",
    "GuardEvent",
    "ModelCheck",
    "check_model",
    "guarded",
    "install",
    "is_active",
    "read_events",
    "slow_phase",
    "step",
    "uninstall",
]


@dataclass(frozen=True)
class ModelCheck:
    ok: bool
    message: str
    ranks: tuple[int, ...] = ()
    differences: tuple[str, ...] = ()


def install(**options: Any) -> GuardConfig:
    """Switch the guard on (again: a no-op). Options are :class:`GuardConfig` fields and override
    ``DISTDX_GUARD_*`` variables. Returns the configuration in force."""
    from distdx.guard import runtime

    if runtime.STATE.config is None:
        runtime.install(GuardConfig.from_env(**options))
    return runtime.STATE.config  # type: ignore[return-value]


def uninstall() -> None:
    """Stop the guard and restore every wrapped function."""
    from distdx.guard import runtime

    runtime.uninstall()


def is_active() -> bool:
    """True once the guard runs in a process group (installed and the group initialised)."""
    from distdx.guard import runtime

    return runtime.STATE.session is not None


class guarded(contextlib.ContextDecorator):
    """``with guarded(hang_s=30): train()`` or ``@guarded()`` on the training function."""

    def __init__(self, **options: Any) -> None:
        self.options = options
        self._owner = False

    def __enter__(self) -> GuardConfig:
        from distdx.guard import runtime

        self._owner = runtime.STATE.config is None
        return install(**self.options)

    def __exit__(self, *exc: object) -> bool:
        if self._owner:
            uninstall()
        return False


@contextlib.contextmanager
def slow_phase(name: str):  # type: ignore[no-untyped-def]
    """``with slow_phase("export to S3"): ...`` on the rank doing legitimately slow work alone
    while its peers wait for it: their wait is a hang only after ``slow_phase_s``, not after the
    adaptive threshold. ``torch.save``, torch.distributed.checkpoint saves and evaluation (a
    module in eval mode) are recognised without it."""
    from distdx.guard import runtime

    s = runtime.session()
    outer = s.enter_phase(name) if s is not None else None
    try:
        yield
    finally:
        if s is not None:
            s.leave_phase(outer)


def check_model(model: Any, *, replicated: bool = False, config: object = None) -> ModelCheck:
    """Compare ``model``'s parameters (names, shapes, dtypes, requires_grad) and, if given, a
    config across all ranks; every rank must call it. ``replicated=True`` also watches the
    replicas for drift (data parallelism). Without a process group there is nothing to compare."""
    from distdx.guard import runtime

    s = runtime.session()
    if s is None:
        return ModelCheck(ok=True, message="not checked: the guard is not active in a process group")
    finding = s.check_model(model, replicated=replicated, config=config)
    if finding is None:
        return ModelCheck(ok=True, message=f"model agrees on all {s.world} ranks")
    return ModelCheck(ok=False, message=finding.message, ranks=finding.ranks, differences=tuple(finding.fields.get("differences", ())))


def step(*, loss: Any = None, model: Any = None, loss_scale: float | None = None) -> int:
    """Mark the end of a training step: checks the loss and the model's gradients for NaN/Inf and
    norm spikes, tracks the loss scale, then advances the step counter (which replaces the
    automatic count from optimizer steps). Returns the index of the next step."""
    from distdx.guard import runtime

    s = runtime.session()
    if s is None:
        return 0
    s.raise_if_fatal()
    try:
        s.manual_step(loss=loss, model=model, loss_scale=loss_scale)
    except GuardError:
        raise
    except Exception as e:  # noqa: BLE001
        s.internal_error("step", e)
    s.raise_if_fatal()
    return s.step
