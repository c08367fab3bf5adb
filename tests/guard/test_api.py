"""The public surface in one process (a world of one on gloo): install/uninstall, step, check_model,
fail_fast, and wrappers that pass results and exceptions through unchanged."""

import math

import pytest

torch = pytest.importorskip("torch", reason="the guard wraps torch.distributed; torch is not installed")
dist = torch.distributed

import distdx.guard as guard  # noqa: E402
from distdx.guard import GuardError, read_events  # noqa: E402


@pytest.fixture
def world_of_one(tmp_path, monkeypatch):
    for var in ("MASTER_ADDR", "MASTER_PORT", "DISTDX_GUARD", "DISTDX_GUARD_DIR"):
        monkeypatch.delenv(var, raising=False)
    original = dist.all_reduce
    yield tmp_path
    guard.uninstall()
    if dist.is_initialized():
        dist.destroy_process_group()
    assert dist.all_reduce is original


def _init():
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)


def test_install_is_idempotent_and_uninstall_restores(world_of_one):
    original_reduce, original_backward = dist.all_reduce, torch.Tensor.backward
    cfg = guard.install(out_dir=str(world_of_one), echo=False)
    assert guard.install(hang_s=1) is cfg  # the second call changes nothing
    assert dist.all_reduce is not original_reduce
    assert not guard.is_active()
    _init()
    assert guard.is_active()
    guard.uninstall()
    assert dist.all_reduce is original_reduce and torch.Tensor.backward is original_backward
    assert not guard.is_active()


def test_step_reports_nan_loss_with_rank_and_step(world_of_one):
    guard.install(out_dir=str(world_of_one), echo=False)
    _init()
    x = torch.ones(3)
    dist.all_reduce(x)
    assert x.tolist() == [1.0, 1.0, 1.0]
    assert guard.step(loss=torch.tensor(0.5)) == 1
    assert guard.step(loss=torch.tensor(float("nan"))) == 2
    assert guard.check_model(torch.nn.Linear(2, 2)).ok
    guard.uninstall()
    events = read_events(world_of_one)
    kinds = [e.kind for e in events]
    assert kinds[0] == "guard_started" and kinds[-1] == "summary"
    (nan,) = [e for e in events if e.kind == "nonfinite_loss"]
    assert nan.rank == 0 and nan.step == 1 and nan.message == "non-finite loss at step 1 on rank 0: nan"
    assert events[-1].fields["collectives"] == 1


def test_gradient_nan_names_the_parameter_through_optimizer_hook(world_of_one):
    guard.install(out_dir=str(world_of_one), echo=False, grad_every=1)
    _init()
    model = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.Linear(3, 1))
    guard.check_model(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        loss = model(torch.ones(1, 2)).sum()
        loss.backward()
        if step == 2:
            model[1].weight.grad[0, 0] = math.inf
        opt.step()
        opt.zero_grad()
    guard.uninstall()
    (event,) = [e for e in read_events(world_of_one) if e.kind == "nonfinite_grad"]
    assert event.step == 2 and event.fields["parameter"] == "1.weight" and "1.weight has inf" in event.message


def test_fail_fast_raises_a_clear_error(world_of_one):
    with guard.guarded(out_dir=str(world_of_one), echo=False, fail_fast=True):
        _init()
        with pytest.raises(GuardError, match=r"\[distdx-guard\] non-finite loss at step 0"):
            guard.step(loss=torch.tensor(float("inf")))
    assert not guard.is_active()


def test_wrapped_collective_passes_exceptions_through(world_of_one):
    original = dist.all_reduce
    _init()
    with pytest.raises(Exception) as plain:
        original("not a tensor")
    guard.install(out_dir=str(world_of_one), echo=False)
    with pytest.raises(type(plain.value)):
        dist.all_reduce("not a tensor")


def test_without_a_process_group_nothing_is_compared(world_of_one):
    guard.install(out_dir=str(world_of_one), echo=False)
    result = guard.check_model(torch.nn.Linear(2, 2))
    assert result.ok and "not active" in result.message
    assert guard.step(loss=torch.tensor(float("nan"))) == 0


def test_slow_phases_are_published_in_the_heartbeat(world_of_one, tmp_path):
    from distdx.guard import runtime

    guard.install(out_dir=str(world_of_one), echo=False)
    _init()
    s = runtime.session()
    model = torch.nn.Linear(2, 2)
    with guard.slow_phase("upload"):
        assert s.heartbeat()["phase"][0] == "upload"
        torch.save(model.state_dict(), tmp_path / "inner.pt")  # nested: the outer phase stays
        assert s.heartbeat()["phase"][0] == "upload"
    assert s.heartbeat()["phase"] is None and s.heartbeat()["phase_end"] > 0
    model.eval()  # before any training step: not an evaluation phase
    assert s.heartbeat()["phase"] is None
    guard.step()
    model.eval()
    assert s.heartbeat()["phase"][0] == "evaluation"
    model.train()
    assert s.heartbeat()["phase"] is None
    guard.uninstall()
    assert torch.save.__name__ == "save" and not getattr(torch.save, "__distdx_guard__", False)
    with guard.slow_phase("outside a job"):  # no session: nothing to mark, no error
        pass
