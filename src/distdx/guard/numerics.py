"""Steps and numerics: the step counter (optimizer steps, or guard.step), non-finite losses and gradients,
gradient-norm spikes and loss-scale collapse. A mixin of :class:`distdx.guard.session.Session`."""

from __future__ import annotations

import hashlib
import time
from typing import Any


class Numerics:
    """The step a rank is in, and the checks made at its end."""

    # ------------------------------------------------------------------ numerics

    def manual_step(self, *, loss: Any = None, model: Any = None, loss_scale: float | None = None) -> None:
        """A step the job marks itself (``distdx.guard.step``): check the loss, the model's gradients and
        the loss scale, then advance the step counter, which from now on replaces the automatic count
        from optimizer steps."""
        self.manual_steps = True
        if loss is not None:
            self.check_loss(loss)
        if model is not None:
            self.param_names.update({id(p): n for n, p in model.named_parameters()})
            self.check_grads(list(model.parameters()))
        if loss_scale is not None:
            if self._last_scale is not None:
                self.on_loss_scale(self._last_scale, float(loss_scale))
            self._last_scale = float(loss_scale)
        self.after_step()

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
