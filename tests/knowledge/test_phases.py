import pytest

from distdx.knowledge.phases import phase_evidence, phase_markers


def test_every_stage_has_markers():
    assert set(phase_markers()) == {"S1", "S2", "S3", "S4", "S5"}


@pytest.mark.parametrize("text,stage", [
    ("pip install deepspeed fails: error: command '/usr/local/cuda/bin/nvcc' failed", "S1"),
    ("torchrun --nnodes 2 with a hostfile, MASTER_ADDR=node0", "S2"),
    ("model = AutoModel.from_pretrained(path) inside zero.Init", "S3"),
    ("step 120: loss 2.31, then loss.backward() fails", "S4"),
    ("engine = deepspeed.init_inference(model); model.generate(ids)", "S5"),
])
def test_markers_point_at_the_running_stage(text, stage):
    evidence = phase_evidence(text)
    assert max(evidence, key=evidence.get) == stage


def test_no_markers_in_a_bare_error():
    assert not any(phase_evidence("RuntimeError: NCCL error: unhandled system error").values())
