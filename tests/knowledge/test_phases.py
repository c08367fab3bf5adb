import pytest

import yaml
from importlib import resources

from distdx.knowledge.phases import phase_evidence, phase_markers, symptom_evidence, symptom_families


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


def _family_fixtures():
    doc = yaml.safe_load(resources.files("distdx.knowledge").joinpath("phases.yaml").read_text(encoding="utf-8"))
    for family in doc["symptoms"]:
        assert family.get("match") and family.get("no_match"), family["family"]
        for text in family["match"]:
            yield pytest.param(family["family"], text, True, id=f"{family['family']}-match")
        for text in family["no_match"]:
            yield pytest.param(family["family"], text, False, id=f"{family['family']}-no-match")


@pytest.mark.parametrize("family,text,tells", list(_family_fixtures()))
def test_symptom_family_fixtures(family, text, tells):
    assert (family in {f.name for f, _ in symptom_evidence(text)}) is tells


def test_symptom_families_name_a_symptom_of_each_stage_they_cover():
    from distdx.knowledge.taxonomy import taxonomy

    families = symptom_families()
    assert len({f.name for f in families}) == len(families) > 10
    for f in families:
        assert all(taxonomy().stage_of(symptom) == stage for stage, symptom in f.symptoms.items())


def test_a_malformed_symptom_family_is_refused():
    from distdx.errors import DistdxError
    from distdx.knowledge import phases

    bad = phases._phases_file().decode().replace('symptoms: {S3: "3.3", S4: "4.6", S5: "5.8"}', 'symptoms: {S3: "4.6"}')
    with pytest.raises(DistdxError) as err:
        phases._build(bad.encode())
    assert err.value.code == "DX-KB-005"
