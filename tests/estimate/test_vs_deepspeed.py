"""Model states equal DeepSpeed's own estimators, number for number, on a grid of inputs.

DeepSpeed's ``estimate_zero{2,3}_model_states_mem_needs_all_cold`` print a table whose numbers come
from ``estimate_zero{2,3}_model_states_mem_needs``; both are compared: the integers exactly, and
the printed table row for row."""

from __future__ import annotations

import itertools
import re

import pytest

pytest.importorskip("deepspeed", reason="the side-by-side needs deepspeed installed (it is in the dev venv)")

from deepspeed.runtime.zero import stage3, stage_1_and_2  # noqa: E402

from distdx.estimate import Setup, estimate  # noqa: E402
from distdx.estimate.formulas import model_states  # noqa: E402
from distdx.estimate.models import ModelShape  # noqa: E402

TOTALS = (1, 7, 1_000_003, 124_439_808, 6_738_415_616, 7_000_000_000, 70_000_000_000, 175_000_000_000,
          1_000_000_000_000)
LARGEST = (1, 131_072_000, 1_000_000_007)
GPUS_PER_NODE = (1, 2, 3, 8)
NODES = (1, 2, 3, 7, 64)
BUFFER_FACTORS = (1.0, 1.5, 1.25, 2.3)


def shape(total: int, largest: int) -> ModelShape:
    return ModelShape(params=total, layers=1, hidden=128, heads=1, kv_heads=1, head_dim=128, ffn=512, vocab=1,
                      largest_layer_params=largest, source="test")


def setup(stage: int, gpn: int, nodes: int, abf: float, *, cpu_offload: bool, cpu_offload_params: bool = False,
          zero_init: bool = True) -> Setup:
    return Setup(dtype="bf16", optimizer="adam", zero_stage=stage, offload_optimizer="cpu" if cpu_offload else "none",
                 offload_params="cpu" if cpu_offload_params else "none", zero_init=zero_init,
                 gpus_per_node=gpn, nodes=nodes, dp=gpn * nodes, buffer_factor=abf)


def test_zero2_equals_deepspeed_on_a_grid() -> None:
    compared = 0
    for total, gpn, nodes, abf, offload in itertools.product(TOTALS, GPUS_PER_NODE, NODES, BUFFER_FACTORS,
                                                             (True, False)):
        ds_cpu, ds_gpu = stage_1_and_2.estimate_zero2_model_states_mem_needs(
            total_params=total, num_gpus_per_node=gpn, num_nodes=nodes, cpu_offload=offload,
            additional_buffer_factor=abf)
        ours = model_states(shape(total, 1), setup(2, gpn, nodes, abf, cpu_offload=offload))
        assert (ours.cpu, ours.gpu["total"]) == (ds_cpu, ds_gpu), (total, gpn, nodes, abf, offload)
        assert isinstance(ours.gpu["total"], int) and isinstance(ours.cpu, int)
        compared += 1
    assert compared == len(TOTALS) * len(GPUS_PER_NODE) * len(NODES) * len(BUFFER_FACTORS) * 2


ZERO3_OPTIONS = [(o, p, z) for o in (True, False) for p in (True, False) for z in (True, False) if o or not p]


def test_zero3_equals_deepspeed_on_a_grid() -> None:
    compared = 0
    for total, largest, gpn, nodes, abf, (offload, offload_params, zero_init) in itertools.product(
            TOTALS, LARGEST, GPUS_PER_NODE, NODES, BUFFER_FACTORS, ZERO3_OPTIONS):
        ds_cpu, ds_gpu, ds_largest = stage3.estimate_zero3_model_states_mem_needs(
            total_params=total, largest_layer_params=largest, num_gpus_per_node=gpn, num_nodes=nodes,
            cpu_offload=offload, cpu_offload_params=offload_params, zero_init=zero_init, additional_buffer_factor=abf)
        ours = model_states(shape(total, largest), setup(3, gpn, nodes, abf, cpu_offload=offload,
                                                         cpu_offload_params=offload_params, zero_init=zero_init))
        assert (ours.cpu, ours.gpu["total"]) == (ds_cpu, ds_gpu), (total, largest, gpn, nodes, abf, offload,
                                                                   offload_params, zero_init)
        assert ours.gpu["gathered_layer"] == ds_largest
        compared += 1
    assert compared == 9 * 3 * 4 * 5 * 4 * 6


_ROW = re.compile(r"^\s*([0-9.]+)GB \|\s*([0-9.]+)GB \| (.*)$")


def _rows(text: str) -> list[tuple[str, str, str]]:
    return [m.groups() for m in map(_ROW.match, text.splitlines()) if m]


@pytest.mark.parametrize("total,largest,gpn,nodes", [(6_738_415_616, 131_072_000, 8, 1), (70_000_000_000,
                         1_000_000_007, 8, 4), (124_439_808, 38_597_376, 1, 1), (175_000_000_000, 600_000_000, 3, 7)])
def test_all_cold_tables_match(capsys, total, largest, gpn, nodes) -> None:
    stage_1_and_2.estimate_zero2_model_states_mem_needs_all_cold(total, gpn, nodes)
    rows = _rows(capsys.readouterr().out)
    ours = [model_states(shape(total, largest), setup(2, gpn, nodes, 1.5, cpu_offload=o)) for o in (True, False)]
    assert [(c, g) for c, g, _ in rows] == [(f"{m.cpu / 2**30:7.2f}".strip(), f"{m.gpu['total'] / 2**30:6.2f}".strip())
                                            for m in ours]
    stage3.estimate_zero3_model_states_mem_needs_all_cold(total, largest, gpn, nodes)
    rows = _rows(capsys.readouterr().out)
    assert len(rows) == 6
    expected = []
    for o, p, z in ZERO3_OPTIONS:
        m = model_states(shape(total, largest), setup(3, gpn, nodes, 1.5, cpu_offload=o, cpu_offload_params=p,
                                                      zero_init=z))
        expected.append((f"{m.cpu / 2**30:7.2f}".strip(), f"{m.gpu['total'] / 2**30:6.2f}".strip(), (p, o, z)))
    assert [(c, g, _options(opts)) for c, g, opts in rows] == expected


def _options(text: str) -> tuple[bool, bool, bool]:
    """DeepSpeed's option column (its device names print as `cpu ` or `OffloadDeviceEnum.cpu` depending on
    the Python version) as (offload_param, offload_optimizer, zero_init)."""
    fields = dict(part.strip().split("=", 1) for part in text.split(","))
    return (fields["offload_param"].strip() != "none", fields["offload_optimizer"].strip() != "none",
            fields["zero_init"] == "1")


def test_the_estimate_carries_deepspeeds_figures_and_adds_activations() -> None:
    s = shape(6_738_415_616, 131_072_000)
    s = ModelShape(**{**s.__dict__, "layers": 32, "hidden": 4096, "heads": 32, "kv_heads": 32, "ffn": 11008,
                      "vocab": 32000})
    result = estimate(s, setup(3, 8, 2, 1.5, cpu_offload=False).with_changes(seq_len=4096, micro_batch=2))
    ds_cpu, ds_gpu, _ = stage3.estimate_zero3_model_states_mem_needs(6_738_415_616, 131_072_000, 8, 2, False, False,
                                                                      True, 1.5)
    assert result.figures.model_states["total"] == ds_gpu
    assert result.figures.per_node_cpu == ds_cpu
    assert result.figures.activations["total"] > 0
    assert result.figures.allocated_peak == ds_gpu + result.figures.activations["total"]
    assert result.figures.per_gpu == result.figures.allocated_peak + sum(result.figures.runtime.values())
