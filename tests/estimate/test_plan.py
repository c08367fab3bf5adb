"""Parallel layout resolution and every rule that rejects a combination (one trip, one pass each)."""

from __future__ import annotations

from pathlib import Path

import pytest

from distdx.errors import DistdxError
from distdx.estimate import Setup, resolve_parallel, validate
from distdx.estimate.models import ModelShape
from distdx.estimate.plan import problem

SHAPE = ModelShape(params=7_000_000_000, layers=32, hidden=4096, heads=32, kv_heads=8, head_dim=128, ffn=11008,
                   vocab=32000, largest_layer_params=131_072_000, source="test")


@pytest.mark.parametrize("kwargs,expected", [
    ({}, dict(world_size=1, gpus_per_node=1, nodes=1, dp=1)),
    (dict(tp=2, pp=2), dict(world_size=4, gpus_per_node=4, nodes=1, dp=1)),
    (dict(world_size=16), dict(world_size=16, gpus_per_node=16, nodes=1, dp=16)),
    (dict(world_size=16, nodes=2, tp=2), dict(world_size=16, gpus_per_node=8, nodes=2, dp=8)),
    (dict(world_size=16, gpus_per_node=8, cp=2), dict(world_size=16, gpus_per_node=8, nodes=2, dp=8)),
    (dict(gpus_per_node=8, nodes=4, tp=4, pp=2), dict(world_size=32, gpus_per_node=8, nodes=4, dp=4)),
    (dict(nodes=3), dict(world_size=3, gpus_per_node=1, nodes=3, dp=3)),
    (dict(dp=4, tp=2), dict(world_size=8, gpus_per_node=8, nodes=1, dp=4)),
    (dict(world_size=8, gpus_per_node=4, nodes=2, dp=8), dict(world_size=8, gpus_per_node=4, nodes=2, dp=8)),
])
def test_resolve_parallel(kwargs, expected) -> None:
    assert resolve_parallel(**kwargs) == expected


@pytest.mark.parametrize("kwargs,words", [
    (dict(world_size=0), "--world-size is 0"),
    (dict(tp=-1), "--tp is -1"),
    (dict(world_size=16, gpus_per_node=8, nodes=3), "is not --gpus-per-node 8 x --nodes 3"),
    (dict(world_size=10, nodes=4), "does not split over --nodes 4"),
    (dict(world_size=12, gpus_per_node=8), "not a multiple of --gpus-per-node 8"),
    (dict(world_size=12, tp=8), "not divisible by tp x pp x cp"),
    (dict(world_size=16, tp=2, dp=4), "--dp 4 does not match"),
])
def test_impossible_parallel_sizes(kwargs, words) -> None:
    with pytest.raises(DistdxError) as info:
        resolve_parallel(**kwargs)
    assert info.value.code == "DX-ESTIMATE-004"
    assert words in info.value.message
    assert info.value.hint


GOOD = Setup(zero_stage=3, offload_optimizer="cpu", offload_params="cpu", tp=2, pp=1, dp=4, gpus_per_node=8,
             sequence_parallel=True)

# (rule, a setup that trips it, the words of the message)
RULES = [
    ("unknown dtype", dict(dtype="fp8"), "--dtype fp8"),
    ("int weights are for inference", dict(dtype="int8"), "not available for train"),
    ("unknown kv dtype", dict(kv_dtype="fp4"), "--kv-dtype fp4"),
    ("unknown optimizer", dict(optimizer="lion"), "--optimizer lion"),
    ("unknown checkpointing", dict(checkpointing="some"), "--checkpointing some"),
    ("unknown offload device", dict(offload_optimizer="disk"), "--offload-optimizer disk"),
    ("micro batch", dict(micro_batch=0), "micro batch 0"),
    ("buffer factor", dict(buffer_factor=0.0), "--buffer-factor"),
    ("zero stage", dict(zero_stage=4), "--zero 4"),
    ("offload needs ZeRO", dict(zero_stage=0, offload_params="none"), "needs ZeRO"),
    ("param offload needs stage 3", dict(zero_stage=2, offload_params="cpu"), "needs ZeRO stage 3"),
    ("param offload without optimizer offload", dict(offload_optimizer="none"), "without --offload-optimizer"),
    ("NVMe needs stage 3", dict(zero_stage=2, offload_params="none", offload_optimizer="nvme"), "NVMe offload"),
    ("ZeRO-2 with pipeline", dict(zero_stage=2, offload_params="none", offload_optimizer="none", pp=2, tp=1, dp=4,
                                  sequence_parallel=False), "ZeRO stage 2 with pipeline parallelism"),
    ("amp with ZeRO", dict(amp=True), "--amp goes with"),
    ("unknown attention", dict(attention="paged"), "--attention paged"),
    ("sequence parallel needs tp", dict(tp=1, dp=8), "--sequence-parallel with --tp 1"),
    ("tp divides heads", dict(tp=64, dp=1, gpus_per_node=64), "does not divide the 32 attention heads"),
    ("pp at most layers", dict(zero_stage=1, offload_params="none", pp=64, tp=1, dp=1, sequence_parallel=False,
                               gpus_per_node=64), "is more than the 32 layers"),
    ("cp divides seq", dict(cp=2, dp=2, seq_len=2047), "--cp 2 does not divide"),
    ("layout adds up", dict(dp=3), "is not the world size"),
]


def test_the_good_setup_passes() -> None:
    assert problem(SHAPE, GOOD) is None
    validate(SHAPE, GOOD)


@pytest.mark.parametrize("rule,changes,words", RULES, ids=[r[0] for r in RULES])
def test_each_rule_trips(rule, changes, words) -> None:
    with pytest.raises(DistdxError) as info:
        validate(SHAPE, GOOD.with_changes(**changes))
    assert words in info.value.message, rule
    assert info.value.why and info.value.hint
    assert info.value.code in ("DX-ESTIMATE-004", "DX-ESTIMATE-005")


def test_inference_ignores_training_only_rules() -> None:
    assert problem(SHAPE, Setup(mode="infer", dtype="int4", zero_stage=0, offload_params="cpu", pp=2,
                                gpus_per_node=2)) is None


def test_expert_parallel_rules() -> None:
    from distdx.estimate import shape_from_config

    mixtral = shape_from_config(Path(__file__).parent / "configs" / "mixtral-8x7b.json")
    assert problem(SHAPE, Setup(gpus_per_node=8, dp=8, ep=2)).code == "DX-ESTIMATE-005"
    assert "does not divide the 8 experts" in problem(mixtral, Setup(gpus_per_node=8, dp=8, ep=16)).message
    assert problem(mixtral, Setup(gpus_per_node=8, dp=8, ep=8)) is None
