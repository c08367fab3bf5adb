from pathlib import Path

import yaml

from distdx.knowledge.taxonomy import taxonomy

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "taxonomy.yaml"


def test_counts_match_the_study():
    tax = taxonomy()
    assert len(tax.ids("stage")) == 5
    assert len(tax.ids("symptom")) == 34
    assert len(tax.ids("root_cause")) == 28
    assert len(tax.ids("fix_pattern")) == 6


def test_ids_are_exactly_those_of_the_shared_taxonomy():
    if not SHARED.exists():
        import pytest
        pytest.skip("../shared/taxonomy.yaml is not beside this checkout")
    shared = yaml.safe_load(SHARED.read_text())
    ours = taxonomy()
    for section, dim in (("stages", "stage"), ("symptoms", "symptom"), ("root_causes", "root_cause"), ("fix_patterns", "fix_pattern")):
        assert set(map(str, shared[section])) == set(ours.ids(dim))
        for node_id, spec in shared[section].items():
            assert ours.get(str(node_id)).share == spec["share"]


def test_shares_within_each_stage():
    tax = taxonomy()
    for stage in tax.ids("stage"):
        symptoms = sum(n.share for n in tax.children(stage, "symptom"))
        assert abs(symptoms - 1.0) < 0.01, (stage, symptoms)
        # the study left some issues' root cause unknown, so causes cover 92-94% of each stage
        causes = sum(n.share for n in tax.children(stage, "root_cause"))
        assert 0.9 < causes <= 1.0, (stage, causes)


def test_priors():
    tax = taxonomy()
    for dim in ("stage", "symptom", "fix_pattern"):
        assert abs(sum(tax.prior(i) for i in tax.ids(dim)) - 1.0) < 0.01
    assert 0.9 < sum(tax.prior(i) for i in tax.ids("root_cause")) < 1.0
