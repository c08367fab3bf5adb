"""terms.yaml: every uncertain term has a range around its value, a unit and where its bytes come from."""

from __future__ import annotations

import pytest

from distdx.errors import DistdxError
from distdx.estimate.terms import Bound, parse_terms, terms


def test_packaged_terms_load_with_their_ranges() -> None:
    loaded = terms()
    assert {"logit_bytes", "cuda_context", "allocator_reserve", "nccl_buffers", "fsdp_pp_unsharded"} <= set(loaded)
    for t in loaded.values():
        assert t.low <= t.value <= t.high and t.why and t.unit


def test_a_bound_reads_gib_terms_in_bytes_and_records_what_it_used() -> None:
    low, high = Bound("low"), Bound("high")
    assert low("cuda_context") == terms()["cuda_context"].low * 2**30
    assert high("logit_bytes") == terms()["logit_bytes"].high
    assert low.used == {"cuda_context"} and high.used == {"logit_bytes"}


@pytest.mark.parametrize("text", ["[]", "version: 2\nterms: {}", "version: 1\nterms:\n  x: {low: 2, value: 1, high: 3, "
                                  "unit: B, why: w}", "version: 1\nterms:\n  x: {low: 1, value: 1, high: 1, unit: B}"])
def test_a_broken_terms_file_is_a_distdx_bug(text: str) -> None:
    with pytest.raises(DistdxError) as e:
        parse_terms(text)
    assert e.value.code == "DX-ESTIMATE-006" and e.value.exit_code == 3
