"""The catalogue loads with valid taxonomy IDs, rejects bad entries, and docs/doctor.md is current."""

from pathlib import Path

import pytest

from distdx.doctor.catalogue import catalogue, compat, parse_catalogue
from distdx.doctor.docs import render_docs
from distdx.errors import DistdxError
from distdx.knowledge.taxonomy import taxonomy

ROOT = Path(__file__).resolve().parents[2]

GOOD = """version: 1
checks:
  - {code: DOC-X-001, title: t, area: a, severity: error, symptom: "2.2", root_cause: R2.3, fix_pattern: F1,
     detects: d, why: w, fix: f, example: e}
"""


def test_catalogue_uses_taxonomy_ids():
    tax = taxonomy()
    for spec in catalogue():
        assert tax.nodes[spec.symptom].dimension == "symptom"
        assert tax.nodes[spec.root_cause].dimension == "root_cause"
        assert tax.nodes[spec.fix_pattern].dimension == "fix_pattern"


def test_parse_catalogue_accepts_a_minimal_entry():
    assert parse_catalogue(GOOD)[0].code == "DOC-X-001"


@pytest.mark.parametrize("bad,what", [
    (GOOD.replace('"2.2"', '"9.9"'), "not a symptom ID of the taxonomy"),
    (GOOD.replace("R2.3", "F1"), "not a root_cause ID of the taxonomy"),
    (GOOD.replace("DOC-X-001", "NCCL-1"), "DOC-AREA-NNN"),
    (GOOD.replace("severity: error", "severity: fatal"), "severity"),
    (GOOD.replace("why: w, ", ""), "missing why"),
    (GOOD.replace("version: 1", "version: 2"), "version: 1"),
    ("checks: [unclosed", "YAML does not parse"),
])
def test_parse_catalogue_rejects(bad, what):
    with pytest.raises(DistdxError, match=what):
        parse_catalogue(bad, "bad.yaml")


def test_compat_tables_hold_real_entries():
    c = compat()
    assert c.cuda_minor_compat_driver["12"] == "525.60.13"
    assert c.nvcc_max_gcc["13.0"] == 15
    assert {"NCCL_SOCKET_IFNAME", "NCCL_IB_HCA", "NCCL_DEBUG", "NCCL_P2P_LEVEL"} <= c.nccl_env_names
    assert "NCCL_SOCKET_IFNAMES" not in c.nccl_env_names


def test_docs_page_is_current():
    page = ROOT / "docs" / "doctor.md"
    assert page.read_text(encoding="utf-8") == render_docs(), \
        "docs/doctor.md is stale: python -m distdx.doctor.docs > docs/doctor.md"


def test_docs_have_fixed_headings_per_check():
    text = render_docs()
    for spec in catalogue():
        section = text.split(f"## {spec.code}\n", 1)[1].split("\n## ", 1)[0]
        for heading in ("### What it detects", "### Why it happens", "### Example", "### How to fix",
                        "### References"):
            assert heading in section, (spec.code, heading)
