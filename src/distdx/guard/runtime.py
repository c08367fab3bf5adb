"""Install and remove the guard: wrap torch.distributed, DDP, DataLoader, optimizers, GradScaler and
deepspeed.initialize, directly when they are already imported, otherwise right after their import.

Every wrapper does its bookkeeping inside ``try`` and then calls the original exactly as called;
the original's result and exceptions pass through unchanged.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.util
import inspect
import os
import sys
import threading
from typing import Any, Callable

from distdx.guard.config import GuardConfig
from distdx.guard.session import GuardError, Session

# op -> (name of the tensor that defines the call's shape or None, name of the root argument or None)
COLLECTIVES: dict[str, tuple[str | None, str | None]] = {
    "all_reduce": ("tensor", None),
    "broadcast": ("tensor", "src"),
    "all_gather": ("tensor", None),
    "all_gather_into_tensor": ("input_tensor", None),
    "reduce_scatter_tensor": ("input", None),
    "reduce": ("tensor", "dst"),
    "barrier": (None, None),
    "all_to_all_single": ("input", None),
    "gather": ("tensor", "dst"),
    "scatter": ("tensor", "src"),
    "reduce_scatter": ("output", None),
    "all_to_all": (None, None),
    "all_gather_object": (None, None),
    "broadcast_object_list": (None, "src"),
    "gather_object": (None, "dst"),
    "scatter_object_list": (None, "src"),
    "monitored_barrier": (None, None),
}

_SKIP_DIRS: tuple[str, ...] = (os.path.dirname(os.path.abspath(__file__)) + os.sep,)


class _State:
    def __init__(self) -> None:
        self.config: GuardConfig | None = None
        self.session: Session | None = None
        self.undo: list[Callable[[], None]] = []
        self.patched: set[str] = set()
        self.local = threading.local()
        self.finder: _PostImportFinder | None = None
        self.start_error: str = ""


STATE = _State()


def session() -> Session | None:
    return STATE.session


def _site() -> str:
    f = sys._getframe(2)
    while f is not None and f.f_code.co_filename.startswith(_SKIP_DIRS):
        f = f.f_back
    if f is None:
        return ""
    return f"{os.path.basename(f.f_code.co_filename)}:{f.f_lineno}"


def _set_attr(owner: Any, name: str, value: Any) -> None:
    old = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
    setattr(owner, name, value)
    STATE.undo.append(lambda: setattr(owner, name, old))


# ---------------------------------------------------------------- torch.distributed


def _describe_tensor(t: Any) -> tuple[str, str]:
    shape = getattr(t, "shape", None)
    if shape is None:
        return "", ""
    return str(list(shape)), str(t.dtype).replace("torch.", "")


def _wrap_collective(op: str, fn: Callable) -> Callable:
    tensor_name, root_name = COLLECTIVES[op]
    params = list(inspect.signature(fn).parameters)
    t_idx = params.index(tensor_name) if tensor_name in params else -1
    r_idx = params.index(root_name) if root_name in params else -1
    g_idx = params.index("group") if "group" in params else -1
    split_names = [p for p in params if p.endswith("split_sizes")]

    @functools.wraps(fn)
    def guarded_collective(*args: Any, **kwargs: Any) -> Any:
        s = STATE.session
        local = STATE.local
        if s is None or getattr(local, "depth", 0):
            return fn(*args, **kwargs)
        local.depth = 1
        try:
            rec = None
            try:
                tensor = args[t_idx] if 0 <= t_idx < len(args) else kwargs.get(tensor_name) if tensor_name else None
                shape, dtype = _describe_tensor(tensor)
                if tensor_name is None and op in ("all_to_all",):
                    shape = "*"
                elif split_names and any(kwargs.get(n) is not None for n in split_names) or (
                    split_names and len(args) > 2 and any(a is not None for a in args[2:4])
                ):
                    shape = "*"
                root = args[r_idx] if 0 <= r_idx < len(args) else kwargs.get(root_name) if root_name else None
                group = args[g_idx] if 0 <= g_idx < len(args) else kwargs.get("group")
                rec = s.before_collective(op, group, shape, dtype, root if isinstance(root, int) else None, _site())
            except GuardError:
                raise
            except Exception as e:  # noqa: BLE001 - the guard never breaks the call
                s.internal_error(f"before {op}", e)
            try:
                result = fn(*args, **kwargs)
            except Exception as e:
                if rec is not None:
                    try:
                        s.collective_failed(rec, e)
                    except Exception as inner:  # noqa: BLE001
                        s.internal_error(f"after failed {op}", inner)
                raise
            if rec is not None:
                s.collective_done()
            return result
        finally:
            local.depth = 0

    guarded_collective.__distdx_guard__ = True  # type: ignore[attr-defined]
    return guarded_collective


def _start_session() -> None:
    if STATE.session is not None or STATE.config is None:
        return
    import torch.distributed as dist

    if not dist.is_available() or not dist.is_initialized():
        return
    try:
        s = Session(STATE.config, dist)
    except Exception as e:  # noqa: BLE001
        STATE.start_error = f"{type(e).__name__}: {e}"
        return
    STATE.session = s
    previous_hook = sys.excepthook

    def excepthook(exc_type: type, exc: BaseException, tb: Any) -> None:
        try:
            if STATE.session is not None:
                STATE.session.on_uncaught(exc_type, exc)
        except Exception:  # noqa: BLE001
            pass
        previous_hook(exc_type, exc, tb)

    _set_attr(sys, "excepthook", excepthook)
    try:
        s.start()
    except GuardError:
        raise
    except Exception as e:  # noqa: BLE001
        s.internal_error("start", e)


def _patch_distributed() -> None:
    if "distributed" in STATE.patched:
        return
    import torch.distributed as dist

    if not dist.is_available():
        return
    STATE.patched.add("distributed")
    c10d = dist.distributed_c10d
    for op in COLLECTIVES:
        original = getattr(c10d, op, None)
        if original is None or getattr(original, "__distdx_guard__", False):
            continue
        wrapped = _wrap_collective(op, original)
        _set_attr(c10d, op, wrapped)
        if getattr(dist, op, None) is original:
            _set_attr(dist, op, wrapped)

    init = c10d.init_process_group

    @functools.wraps(init)
    def init_process_group(*args: Any, **kwargs: Any) -> Any:
        result = init(*args, **kwargs)
        _start_session()
        return result

    _set_attr(c10d, "init_process_group", init_process_group)
    _set_attr(dist, "init_process_group", init_process_group)

    destroy = c10d.destroy_process_group

    @functools.wraps(destroy)
    def destroy_process_group(*args: Any, **kwargs: Any) -> Any:
        group = args[0] if args else kwargs.get("group")
        s = STATE.session
        if s is not None and group is None:
            try:
                s.close()
            except Exception as e:  # noqa: BLE001
                s.internal_error("destroy_process_group", e)
            STATE.session = None
        return destroy(*args, **kwargs)

    _set_attr(c10d, "destroy_process_group", destroy_process_group)
    _set_attr(dist, "destroy_process_group", destroy_process_group)
    _start_session()


# ---------------------------------------------------------------- models, data, numerics


def _patch_ddp() -> None:
    if "ddp" in STATE.patched:
        return
    from torch.nn.parallel import DistributedDataParallel as DDP

    STATE.patched.add("ddp")
    init = DDP.__init__

    @functools.wraps(init)
    def __init__(self: Any, module: Any, *args: Any, **kwargs: Any) -> None:
        s = STATE.session
        if s is not None:
            try:
                s.check_model(module, replicated=True)
            except GuardError:
                raise
            except Exception as e:  # noqa: BLE001
                s.internal_error("DistributedDataParallel", e)
        init(self, module, *args, **kwargs)

    _set_attr(DDP, "__init__", __init__)
    forward = DDP.forward

    @functools.wraps(forward)
    def guarded_forward(self: Any, *args: Any, **kwargs: Any) -> Any:
        s = STATE.session
        if s is not None and s.step_pending:
            s.open_step()  # a forward pass after an optimizer step starts the next step
        return forward(self, *args, **kwargs)

    _set_attr(DDP, "forward", guarded_forward)


class _CountingIterator:
    """Counts the batches of one pass over a DataLoader and reports the end of the pass."""

    def __init__(self, inner: Any, session: Session, idx: str) -> None:
        self._inner = inner
        self._session = session
        self._idx = idx

    def __iter__(self) -> "_CountingIterator":
        return self

    def __next__(self) -> Any:
        try:
            item = next(self._inner)
        except StopIteration:
            try:
                self._session.loader_done(self._idx)
            except Exception as e:  # noqa: BLE001
                self._session.internal_error("DataLoader end", e)
            raise
        self._session.loader_next(self._idx)
        return item

    def __len__(self) -> int:
        return len(self._inner)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _patch_dataloader() -> None:
    if "dataloader" in STATE.patched:
        return
    from torch.utils.data import DataLoader

    STATE.patched.add("dataloader")
    original = DataLoader.__iter__

    @functools.wraps(original)
    def __iter__(self: Any) -> Any:
        it = original(self)
        s = STATE.session
        if s is None:
            return it
        try:
            return _CountingIterator(it, s, s.loader_started(self, _site()))
        except Exception as e:  # noqa: BLE001
            s.internal_error("DataLoader", e)
            return it

    _set_attr(DataLoader, "__iter__", __iter__)


def _patch_numerics() -> None:
    if "numerics" in STATE.patched:
        return
    import torch
    from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

    STATE.patched.add("numerics")
    first_optimizer: list[int] = []

    def pre_hook(optimizer: Any, args: Any, kwargs: Any) -> None:
        s = STATE.session
        if s is None:
            return
        try:
            s.raise_if_fatal()
            every = s.config.grad_every
            if s.force_grad_check or (every and s.step % every == 0):
                s.force_grad_check = False
                s.check_grads([p for group in optimizer.param_groups for p in group["params"]])
        except GuardError:
            raise
        except Exception as e:  # noqa: BLE001
            s.internal_error("optimizer step", e)

    def post_hook(optimizer: Any, args: Any, kwargs: Any) -> None:
        s = STATE.session
        if s is None or s.manual_steps:
            return
        if not first_optimizer:
            first_optimizer.append(id(optimizer))
        if id(optimizer) != first_optimizer[0]:
            return  # several optimizers (GANs, ...) still make one step
        try:
            s.act = None
            s.after_step(defer=True)
        except Exception as e:  # noqa: BLE001
            s.internal_error("optimizer step", e)

    handles = [register_optimizer_step_pre_hook(pre_hook), register_optimizer_step_post_hook(post_hook)]
    STATE.undo.extend(h.remove for h in handles)

    backward = torch.Tensor.backward

    @functools.wraps(backward)
    def guarded_backward(self: Any, *args: Any, **kwargs: Any) -> Any:
        s = STATE.session
        if s is not None:
            try:
                s.on_backward(self, _site())
            except GuardError:
                raise
            except Exception as e:  # noqa: BLE001
                s.internal_error("backward", e)
        try:
            result = backward(self, *args, **kwargs)
        except Exception as e:
            if s is not None and STATE.patched and s.replicated:
                try:
                    s.backward_failed(e)
                except Exception as inner:  # noqa: BLE001
                    s.internal_error("after failed backward", inner)
            raise
        if s is not None and s.act is not None and s.act[0] == "backward":
            s.act = None
        return result

    _set_attr(torch.Tensor, "backward", guarded_backward)

    try:
        from torch.amp.grad_scaler import GradScaler
    except ImportError:
        return
    update = GradScaler.update

    @functools.wraps(update)
    def guarded_update(self: Any, *args: Any, **kwargs: Any) -> Any:
        s = STATE.session
        before = None
        if s is not None and getattr(self, "_enabled", False) and getattr(self, "_scale", None) is not None:
            try:
                before = float(self._scale)
            except Exception:  # noqa: BLE001
                before = None
        result = update(self, *args, **kwargs)
        if s is not None and before is not None:
            try:
                s.loss_scaling = True
                s.after_step(defer=True)  # a skipped optimizer step still ends the training step
                s.on_loss_scale(before, float(self._scale))
            except Exception as e:  # noqa: BLE001
                s.internal_error("GradScaler.update", e)
        return result

    _set_attr(GradScaler, "update", guarded_update)
    scale = GradScaler.scale

    @functools.wraps(scale)
    def guarded_scale(self: Any, outputs: Any) -> Any:
        s = STATE.session
        if s is not None and getattr(self, "_enabled", False):
            s.loss_scaling = True
        return scale(self, outputs)

    _set_attr(GradScaler, "scale", guarded_scale)


def _phase_wrapper(name: str, fn: Callable) -> Callable:
    @functools.wraps(fn)
    def in_phase(*args: Any, **kwargs: Any) -> Any:
        s = STATE.session
        if s is None:
            return fn(*args, **kwargs)
        outer = s.enter_phase(name)
        try:
            return fn(*args, **kwargs)
        finally:
            s.leave_phase(outer)

    in_phase.__distdx_guard__ = True  # type: ignore[attr-defined]
    return in_phase


def _patch_slow_phases() -> None:
    """Calls that are legitimately slow on one rank while the others wait: a checkpoint save
    (``torch.save``, which DeepSpeed and Lightning save through, and torch.distributed.checkpoint),
    and evaluation (a module put in eval mode once training has begun)."""
    if "phases" in STATE.patched:
        return
    import torch

    STATE.patched.add("phases")
    _set_attr(torch, "save", _phase_wrapper("checkpoint save", torch.save))
    train = torch.nn.Module.train

    @functools.wraps(train)
    def guarded_train(self: Any, mode: bool = True) -> Any:
        s = STATE.session
        if s is not None and s.step_signal:
            phase = s.phase
            if not mode and phase is None:
                s.enter_phase("evaluation")
            elif mode and phase is not None and phase[0] == "evaluation":
                s.leave_phase(None)
        return train(self, mode)

    _set_attr(torch.nn.Module, "train", guarded_train)

    def patch_dcp(module: Any) -> None:
        for name in ("save", "save_state_dict", "async_save"):
            fn = getattr(module, name, None)
            if fn is not None and not getattr(fn, "__distdx_guard__", False):
                _set_attr(module, name, _phase_wrapper("checkpoint save", fn))

    _when_imported("torch.distributed.checkpoint", patch_dcp)


# ---------------------------------------------------------------- deepspeed


def _patch_deepspeed(module: Any = None) -> None:
    if "deepspeed" in STATE.patched:
        return
    import deepspeed

    STATE.patched.add("deepspeed")
    initialize = deepspeed.initialize

    @functools.wraps(initialize)
    def guarded_initialize(*args: Any, **kwargs: Any) -> Any:
        params = list(inspect.signature(initialize).parameters)
        bound = dict(zip(params, args)) | kwargs
        if STATE.session is None:
            # deepspeed.initialize would do this first thing; doing it here lets the model be
            # compared across ranks before the engine broadcasts its parameters
            try:
                import torch.distributed as dist
                from deepspeed.accelerator import get_accelerator

                if not dist.is_initialized() and bound.get("dist_init_required", None) is not False:
                    port = {"distributed_port": bound["distributed_port"]} if "distributed_port" in bound else {}
                    deepspeed.init_distributed(
                        dist_backend=get_accelerator().communication_backend_name(),
                        dist_init_required=bound.get("dist_init_required"),
                        **port,
                    )
            except Exception:  # noqa: BLE001 - let deepspeed.initialize do it and raise its own errors
                pass
            _start_session()
        s = STATE.session
        if s is not None:
            try:
                s.loss_scaling = True
                model = bound.get("model")
                config = bound.get("config") or bound.get("config_params")
                if config is None and bound.get("args") is not None:
                    config = getattr(bound["args"], "deepspeed_config", None)
                if model is not None:
                    s.check_model(model, config=config)
            except GuardError:
                raise
            except Exception as e:  # noqa: BLE001
                s.internal_error("deepspeed.initialize", e)
        return initialize(*args, **kwargs)

    _set_attr(deepspeed, "initialize", guarded_initialize)
    try:
        from deepspeed.runtime.fp16.loss_scaler import DynamicLossScaler
    except ImportError:
        return
    update_scale = DynamicLossScaler.update_scale

    @functools.wraps(update_scale)
    def guarded_update_scale(self: Any, overflow: Any) -> Any:
        s = STATE.session
        if s is not None:
            try:
                s.loss_scaling = True
                s.after_step(defer=True)  # a loss-scale update ends the step, skipped or not
                s.on_loss_scale(float(self.cur_scale), float(self.cur_scale), bool(overflow))
            except Exception as e:  # noqa: BLE001
                s.internal_error("DynamicLossScaler.update_scale", e)
        return update_scale(self, overflow)

    _set_attr(DynamicLossScaler, "update_scale", guarded_update_scale)
    from deepspeed.runtime.fp16.loss_scaler import LossScalerBase

    scaled_backward = LossScalerBase.backward

    @functools.wraps(scaled_backward)
    def guarded_scaled_backward(self: Any, *args: Any, **kwargs: Any) -> Any:
        if STATE.session is not None:
            STATE.session.loss_scaling = True
        return scaled_backward(self, *args, **kwargs)

    _set_attr(LossScalerBase, "backward", guarded_scaled_backward)


# ---------------------------------------------------------------- import hooks


class _GuardedLoader(importlib.abc.Loader):
    def __init__(self, inner: Any, after: Callable[[Any], None]) -> None:
        self._inner = inner
        self._after = after

    def create_module(self, spec: Any) -> Any:
        return self._inner.create_module(spec)

    def exec_module(self, module: Any) -> None:
        module.__loader__ = self._inner
        if getattr(module, "__spec__", None) is not None:
            module.__spec__.loader = self._inner
        self._inner.exec_module(module)
        self._after(module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _PostImportFinder(importlib.abc.MetaPathFinder):
    """Runs callbacks right after a module finishes importing (torch, deepspeed)."""

    def __init__(self) -> None:
        self.callbacks: dict[str, list[Callable[[Any], None]]] = {}
        self._busy: set[str] = set()

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname not in self.callbacks or fullname in self._busy:
            return None
        self._busy.add(fullname)
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self._busy.discard(fullname)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _GuardedLoader(spec.loader, lambda module: self._run(fullname, module))
        return spec

    def _run(self, fullname: str, module: Any) -> None:
        for callback in self.callbacks.pop(fullname, []):
            try:
                callback(module)
            except GuardError:
                raise
            except Exception as e:  # noqa: BLE001 - a broken patch leaves the module as it was
                STATE.start_error = f"patching {fullname}: {type(e).__name__}: {e}"


def _when_imported(name: str, callback: Callable[[Any], None]) -> None:
    if name in sys.modules:
        callback(sys.modules[name])
        return
    if STATE.finder is None:
        STATE.finder = _PostImportFinder()
        sys.meta_path.insert(0, STATE.finder)
    STATE.finder.callbacks.setdefault(name, []).append(callback)


def _patch_torch(_module: Any = None) -> None:
    for patch in (_patch_numerics, _patch_ddp, _patch_dataloader, _patch_slow_phases, _patch_distributed):
        try:
            patch()
        except GuardError:
            raise
        except Exception as e:  # noqa: BLE001
            STATE.start_error = f"{patch.__name__}: {type(e).__name__}: {e}"


def install(config: GuardConfig) -> None:
    if STATE.config is not None:
        return
    STATE.config = config
    _when_imported("torch", _patch_torch)
    _when_imported("deepspeed", _patch_deepspeed)


def uninstall() -> None:
    s = STATE.session
    if s is not None:
        s.close()
    while STATE.undo:
        STATE.undo.pop()()
    if STATE.finder is not None and STATE.finder in sys.meta_path:
        sys.meta_path.remove(STATE.finder)
    STATE.__init__()  # type: ignore[misc]
