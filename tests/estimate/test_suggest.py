"""The suggester: each kind of change is proposed when it is the cheapest that fits, and only then."""

from __future__ import annotations

import pytest

from distdx.estimate import Setup, cost_model, estimate, figures, suggest
from distdx.estimate.models import ModelShape
from distdx.estimate.suggest import describe

LLAMA_7B = ModelShape(params=6_738_415_616, layers=32, hidden=4096, heads=32, kv_heads=32, head_dim=128, ffn=11008,
                      vocab=32000, largest_layer_params=131_072_000, source="test")
ONE_B = ModelShape(params=1_000_000_000, layers=24, hidden=2048, heads=16, kv_heads=16, head_dim=128, ffn=5504,
                   vocab=32000, largest_layer_params=65_536_000, source="test")
EIGHT = dict(gpus_per_node=8, dp=8)


def first(shape: ModelShape, setup: Setup, limit: int, **kw):
    found = suggest(shape, setup, limit, **kw)
    assert found, "expected a suggestion"
    return found[0]


def test_cost_model_is_ordered_sensibly() -> None:
    c = cost_model()
    assert c.flash_attention.cost == 0
    assert c.zero_stage[1].cost <= c.zero_stage[2].cost < c.zero_stage[3].cost
    assert c.checkpointing["selective"].cost < c.checkpointing["full"].cost
    assert c.offload_optimizer["cpu"].cost < c.offload_optimizer["nvme"].cost
    assert c.offload_params["cpu"].cost < c.offload_params["nvme"].cost
    assert all(x.why for x in (c.micro_batch_halving, c.tensor_parallel_doubling))


def test_fits_means_no_suggestion() -> None:
    result = estimate(ONE_B, Setup(**EIGHT, zero_stage=2), gpu_memory=80 * 2**30, gpu_memory_source="stated")
    assert result.fits is True and result.suggestions == ()


def test_unknown_gpu_memory_is_not_judged() -> None:
    result = estimate(ONE_B, Setup())
    assert result.fits is None and result.suggestions == ()
    assert any("not judged" in n for n in result.notes)


def test_flash_attention_first_when_it_alone_fits() -> None:
    setup = Setup(seq_len=8192, attention="eager", loss="chunked")
    limit = figures(ONE_B, setup.with_changes(attention="flash")).per_gpu
    s = first(ONE_B, setup, limit)
    assert s.changes == ("use flash attention",) and s.cost == 0


def test_selective_checkpointing_when_flash_is_unavailable() -> None:
    setup = Setup(seq_len=8192, attention="eager", loss="chunked")
    limit = figures(ONE_B, setup.with_changes(checkpointing="selective")).per_gpu
    s = first(ONE_B, setup, limit, allow_flash=False)
    assert s.changes == ("activation checkpointing none -> selective",)
    assert s.cost == pytest.approx(cost_model().checkpointing["selective"].cost)


def test_zero_1_when_enough_then_zero_2_then_zero_3() -> None:
    base = Setup(**EIGHT, attention="flash", checkpointing="full")
    z1 = figures(LLAMA_7B, base.with_changes(zero_stage=1)).per_gpu
    assert first(LLAMA_7B, base, z1).changes == ("ZeRO stage 0 -> 1",)
    z2 = figures(LLAMA_7B, base.with_changes(zero_stage=2)).per_gpu
    assert z2 < z1
    assert first(LLAMA_7B, base, z2).changes == ("ZeRO stage 0 -> 2",)
    z3 = figures(LLAMA_7B, base.with_changes(zero_stage=3)).per_gpu
    assert z3 < z2
    s = first(LLAMA_7B, base, z3)
    assert s.changes == ("ZeRO stage 0 -> 3",)
    assert s.cost == pytest.approx(cost_model().zero_stage[3].cost)


def test_micro_batch_halving_before_full_checkpointing() -> None:
    setup = Setup(micro_batch=8, attention="flash", seq_len=4096)
    limit = figures(ONE_B, setup.with_changes(micro_batch=4)).per_gpu
    s = first(ONE_B, setup, limit)
    assert s.changes[0].startswith("micro batch 8 -> 4") and len(s.changes) == 1
    quarter = figures(ONE_B, setup.with_changes(micro_batch=2)).per_gpu
    assert first(ONE_B, setup, quarter).cost == pytest.approx(2 * cost_model().micro_batch_halving.cost)


def test_full_checkpointing_when_the_micro_batch_is_already_1() -> None:
    setup = Setup(micro_batch=1, attention="flash", seq_len=32768)
    limit = figures(ONE_B, setup.with_changes(checkpointing="full")).per_gpu
    s = first(ONE_B, setup, limit)
    assert s.changes == ("activation checkpointing none -> full",)


def test_optimizer_offload_then_weight_offload() -> None:
    seventy = ModelShape(**{**LLAMA_7B.__dict__, "params": 70_000_000_000, "layers": 80, "hidden": 8192,
                            "heads": 64, "largest_layer_params": 262_144_000})
    base = Setup(**EIGHT, zero_stage=3, checkpointing="full", attention="flash")
    limit = figures(seventy, base.with_changes(offload_optimizer="cpu")).per_gpu
    s = first(seventy, base, limit)
    assert s.changes == ("offload the optimizer to cpu",)
    both = base.with_changes(offload_optimizer="cpu", offload_params="cpu")
    limit = figures(seventy, both).per_gpu
    s = first(seventy, base, limit)
    assert set(s.changes) == {"offload the optimizer to cpu", "offload the weights to cpu"}
    # host memory too small for the offloaded states: the states go to NVMe instead
    small_host = suggest(seventy, base, limit, cpu_memory=64 * 2**30)
    assert small_host
    for s in small_host:
        assert "nvme" in (s.setup.offload_optimizer, s.setup.offload_params)
        assert s.figures.per_node_cpu <= 64 * 2**30 and s.figures.per_node_nvme > 0
    # ... and with no room anywhere, nothing fits
    result = estimate(seventy, base, gpu_memory=limit, gpu_memory_source="stated", cpu_memory=2**30)
    assert result.fits is False and result.suggestions == ()
    assert any("fits: add GPUs or nodes" in n for n in result.notes)


def test_tensor_parallelism_only_when_allowed() -> None:
    base = Setup(**EIGHT, zero_stage=3, offload_optimizer="cpu", offload_params="cpu", checkpointing="full",
                 attention="flash", seq_len=65536)
    limit = figures(LLAMA_7B, base.with_changes(tp=2, dp=4)).per_gpu
    assert suggest(LLAMA_7B, base, limit) == ()
    result = estimate(LLAMA_7B, base, gpu_memory=limit, gpu_memory_source="stated")
    assert result.fits is False and any("--allow-tp" in n for n in result.notes)
    s = first(LLAMA_7B, base, limit, allow_tp=True)
    assert s.changes == ("tensor parallel 1 -> 2 (data parallel 8 -> 4)",)
    assert (s.setup.tp, s.setup.dp) == (2, 4)
    for other in suggest(LLAMA_7B, base, limit // 2, allow_tp=True):
        assert other.setup.tp <= 8 and LLAMA_7B.heads % other.setup.tp == 0


def test_never_lowers_what_the_user_chose() -> None:
    base = Setup(**EIGHT, zero_stage=2, checkpointing="selective", micro_batch=4, seq_len=4096)
    for s in suggest(LLAMA_7B, base, 20 * 2**30, limit=50):
        assert s.setup.zero_stage >= 2
        assert s.setup.checkpointing in ("selective", "selective-op", "full")
        assert s.setup.micro_batch <= 4


def test_order_dedupe_and_figures() -> None:
    base = Setup(**EIGHT, micro_batch=4, seq_len=4096)
    limit = 40 * 2**30
    found = suggest(LLAMA_7B, base, limit, limit=10)
    assert len(found) >= 3
    costs = [s.cost for s in found]
    assert costs == sorted(costs)
    searched = ("zero_stage", "offload_optimizer", "offload_params", "checkpointing", "attention", "micro_batch", "tp",
                "loss")
    touched = [{name for name in searched if getattr(s.setup, name) != getattr(base, name)} for s in found]
    for i, a in enumerate(touched):
        for b in touched[:i]:
            assert not a >= b, "a suggestion that touches what a cheaper one already settles"
    for s in found:
        assert s.figures == figures(LLAMA_7B, s.setup)
        assert s.figures.per_gpu <= limit
        assert describe(base, s.setup)[0] == s.changes


def test_pipeline_parallel_runs_get_no_zero_2_or_3() -> None:
    base = Setup(gpus_per_node=8, pp=2, dp=4, micro_batch=2, seq_len=4096)
    for s in suggest(LLAMA_7B, base, 30 * 2**30, limit=20):
        assert s.setup.zero_stage <= 1


def test_inference_suggests_a_smaller_batch_or_tp() -> None:
    base = Setup(mode="infer", micro_batch=16, seq_len=4096, gpus_per_node=2, dp=2)
    limit = figures(LLAMA_7B, base.with_changes(micro_batch=8)).per_gpu
    s = first(LLAMA_7B, base, limit)
    assert s.changes[0].startswith("batch 16 -> 8 (2 passes") or s.changes == ("use flash attention",)
    assert s.setup.zero_stage == 0 and s.setup.offload_optimizer == "none"


def test_a_broken_cost_entry_is_an_internal_error() -> None:
    from distdx.errors import DistdxError
    from distdx.estimate.suggest import _cost

    with pytest.raises(DistdxError) as info:
        _cost({"cost": "cheap"}, "zero_stage.3")
    assert info.value.code == "DX-ESTIMATE-006" and info.value.exit_code == 3
    assert _cost({"cost": 0.1, "why": "because"}, "x").cost == 0.1
