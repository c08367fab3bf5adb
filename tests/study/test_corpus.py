"""The labelled corpus in corpus/: held-out issues stay out, the study's method holds for every case,
the test split is the frozen hash split, and corpus/build.sh rebuilds the committed files byte for byte."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from distdx.study.records import DIMENSIONS, split_issue_url

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "corpus"
SHARED = ROOT.parent / "shared"
HELDOUT = SHARED / "heldout" / "heldout.py"
URL = re.compile(r"https?://github\.com/[^/\s\"]+/[^/\s\"]+/(?:issues|pull)/\d+")


def cases(path: Path) -> list[dict]:
    return [json.loads(l) for l in path.read_text(encoding="utf-8").splitlines() if l.strip()]


def batch_files(name: str) -> list[Path]:
    return sorted(CORPUS.glob(f"batches/*/{name}"))


FINAL = cases(CORPUS / "cases.jsonl")


def test_no_indexed_or_labelled_issue_is_held_out():
    if not HELDOUT.exists():
        pytest.skip(f"the held-out check is not beside this checkout ({HELDOUT})")
    data = [CORPUS / "cases.jsonl", CORPUS / "dev.jsonl", ROOT / "benchmarks" / "cases" / "extra.jsonl",
            ROOT / "src" / "distdx" / "knowledge" / "data" / "known_issues.jsonl", *CORPUS.glob("batches/*/*.jsonl")]
    urls = sorted({u for path in data for u in URL.findall(path.read_text(encoding="utf-8"))})
    assert len(urls) > 500
    held = subprocess.run([sys.executable, str(HELDOUT), *urls], capture_output=True, text=True, timeout=60)
    assert held.returncode == 0 and not held.stdout.strip(), held.stdout


def test_the_shared_dev_cases_are_copied_unchanged():
    shared = SHARED / "cases" / "dev.jsonl"
    if not shared.exists():
        pytest.skip(f"no shared cases beside this checkout ({shared})")
    assert (CORPUS / "dev.jsonl").read_bytes() == shared.read_bytes()


def test_every_case_has_two_blind_annotations_and_a_final_label_by_the_method():
    third = {c["url"]: c["labels"] for path in batch_files("C.jsonl") for c in cases(path)}
    assert len(FINAL) >= 400
    for case in FINAL:
        a, b = case["annotations"]["A"], case["annotations"]["B"]
        final = case["labels"]
        if a == b:
            assert case["label_source"] == "agreed" and final == a, case["id"]
        else:
            assert case["label_source"] == "adjudicated", case["id"]
            for dim in DIMENSIONS:
                expected = a[dim] if a[dim] == b[dim] else third[case["url"]][dim]
                assert final[dim] == expected, (case["id"], dim)


def test_provenance_and_no_overlap_with_the_other_case_sets():
    other = {c["url"].lower() for c in cases(CORPUS / "dev.jsonl") + cases(ROOT / "benchmarks" / "cases" / "extra.jsonl")}
    ids = set()
    for case in FINAL:
        assert split_issue_url(case["url"]), case["url"]
        assert case["url"].lower() not in other, case["id"]
        assert case["id"] not in ids
        ids.add(case["id"])
        for key in ("repo", "framework", "batch", "split", "title", "context", "resolution"):
            assert case.get(key), (case["id"], key)
        assert case["framework"] in ("deepspeed", "megatron-lm", "colossalai", "torch.distributed")


def test_the_test_split_is_the_frozen_hash_split():
    for case in FINAL:
        repo, number = split_issue_url(case["url"])
        digest = int(hashlib.sha256(f"{repo.lower()}#{number}".encode()).hexdigest()[:8], 16)
        assert case["split"] == ("test" if digest % 5 == 0 else "train"), case["id"]
    test = sum(c["split"] == "test" for c in FINAL)
    assert 0.15 <= test / len(FINAL) <= 0.25


def test_the_index_holds_dev_and_the_train_split_never_the_test_split():
    index = (ROOT / "src" / "distdx" / "knowledge" / "data" / "known_issues.jsonl").read_text(encoding="utf-8")
    indexed = {json.loads(l)["id"] for l in index.splitlines()[1:]}
    assert {c["id"] for c in FINAL if c["split"] == "train"} <= indexed
    assert not {c["id"] for c in FINAL if c["split"] == "test"} & indexed
    assert {c["id"] for c in cases(CORPUS / "dev.jsonl")} <= indexed


@pytest.mark.slow
def test_build_script_rebuilds_the_committed_files_byte_for_byte(tmp_path):
    env = {**os.environ, "DISTDX": f"{sys.executable} -m distdx", "PYTHONPATH": str(ROOT / "src")}
    run = subprocess.run(["bash", str(CORPUS / "build.sh"), str(tmp_path)], capture_output=True, text=True,
                         timeout=600, env=env, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "cases.jsonl").read_bytes() == (CORPUS / "cases.jsonl").read_bytes()
    assert (tmp_path / "agreement.md").read_bytes() == (CORPUS / "agreement.md").read_bytes()
    index = ROOT / "src" / "distdx" / "knowledge" / "data" / "known_issues.jsonl"
    assert (tmp_path / "known_issues.jsonl").read_bytes() == index.read_bytes()
