"""The report from shared/cases/dev.jsonl: numbers against an independent count; the page in Chromium."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from datetime import datetime
from pathlib import Path

import pytest

from distdx.errors import DistdxError
from distdx.study.dataset import load_dataset
from distdx.study.report import analyse, write_report

from .browser import find_chromium, open_page

# the project's shared data lies next to the repository (../shared/cases/dev.jsonl)
DEV = Path(__file__).resolve().parents[2] / "corpus" / "dev.jsonl"  # the shared dev cases, copied into the repo
CORPUS = DEV.parent / "cases.jsonl"
needs_dev = pytest.mark.skipif(not DEV.is_file(), reason=f"corpus/dev.jsonl not found (looked at {DEV})")
SRC = str(Path(__file__).resolve().parents[2] / "src")


def independent_counts(path: Path) -> dict:
    cases = [json.loads(l) for l in path.read_text(encoding="utf-8").splitlines() if l.strip()]
    out = {"n": len(cases)}
    for dim in ("stage", "symptom", "root_cause", "fix_pattern"):
        out[dim] = Counter(c["labels"][dim] for c in cases)
    out["dist_by_stage"] = Counter(c["labels"]["stage"] for c in cases if c["labels"]["distributed_specific"] is True)
    out["pairs"] = Counter((c["labels"]["stage"], c["labels"]["root_cause"], c["labels"]["symptom"]) for c in cases)
    out["rc_fix"] = Counter((c["labels"]["root_cause"], c["labels"]["fix_pattern"]) for c in cases)
    return out


@pytest.fixture(scope="module")
def report_json(tmp_path_factory) -> tuple[dict, Path]:
    if not DEV.is_file():
        pytest.skip(f"corpus/dev.jsonl not found (looked at {DEV})")
    out = tmp_path_factory.mktemp("report")
    done = subprocess.run([sys.executable, "-m", "distdx", "study", "report", "--dataset", str(DEV), "--out", str(out),
                           "--format", "json"], capture_output=True, text=True, timeout=180,
                          env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin", "MPLBACKEND": "Agg"})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), out


@needs_dev
def test_numbers_match_an_independent_count(report_json):
    data, _ = report_json
    want = independent_counts(DEV)
    assert data["n"] == want["n"] == 137
    assert {k: v["count"] for k, v in data["stages"].items() if v["count"]} == dict(want["stage"])
    assert {k: v["count"] for k, v in data["symptoms"].items()} == dict(want["symptom"])
    assert data["root_causes"] == dict(want["root_cause"])
    assert data["fix_patterns"] == dict(want["fix_pattern"])
    assert {k: v["distributed_only"] for k, v in data["stages"].items() if v["distributed_only"]} == dict(want["dist_by_stage"])
    for stage, h in data["heatmaps"].items():
        for r, row in zip(h["root_causes"], h["counts"]):
            for s, n in zip(h["symptoms"], row):
                assert n == want["pairs"][(stage, r, s)], (stage, r, s)
    assert sum(sum(map(sum, h["counts"])) for h in data["heatmaps"].values()) == want["n"]
    for rc, fixes in data["root_cause_fix"].items():
        for fp, n in fixes.items():
            assert n == want["rc_fix"][(rc, fp)]
    # dev.jsonl has no comment counts or open durations: the report says so instead of inventing them
    assert data["effort"]["with_data"] == 0 and data["effort"]["high_effort"] == 0
    assert any("no comment count or open duration" in n for n in data["report"]["notes"])


@needs_dev
def test_agreement_in_report_equals_sklearn(report_json):
    from sklearn.metrics import cohen_kappa_score

    data, _ = report_json
    cases = [json.loads(l) for l in DEV.read_text(encoding="utf-8").splitlines() if l.strip()]
    for dim, got in data["agreement"].items():
        a = [str(c["annotations"]["A"][dim]) for c in cases]
        b = [str(c["annotations"]["B"][dim]) for c in cases]
        assert got["kappa"] == pytest.approx(cohen_kappa_score(a, b), abs=1e-4)


@needs_dev
def test_report_files_are_written(report_json):
    data, out = report_json
    html = (out / "index.html").read_text(encoding="utf-8")
    figures = sorted(p.name for p in (out / "figures").iterdir())
    assert {"symptoms.png", "symptoms.svg", "rootcause_fix.png", "heatmap_S4.png"} <= set(figures)
    assert "effort_violins.png" not in figures  # no data for it: not drawn
    assert html.count("<figure") == len([f for f in figures if f.endswith(".png")])
    assert "http://" not in html and "https://" not in html.replace("https://github.com", "")  # self-contained


@pytest.mark.browser
@needs_dev
def test_report_opens_in_headless_chromium(report_json, tmp_path):
    chromium = find_chromium()
    if not chromium:
        pytest.skip("chromium is not installed (apt-get install -y chromium)")
    data, out = report_json
    page = open_page(chromium, out / "index.html", tmp_path / "profile")
    assert page["errors"] == []
    assert page["title"].startswith("Distributed DL bug study")
    pngs = [p for p in (out / "figures").iterdir() if p.suffix == ".png"]
    assert page["figures"] == len(pngs) >= 7
    assert page["images"] and all(i["ok"] and i["width"] > 100 for i in page["images"])
    assert "137 labelled issues" in page["text"]
    assert "not drawn" in page["text"]  # the missing Fig. 8 data is stated on the page


def test_effort_figures_when_the_data_has_them(tmp_path):
    cases = tmp_path / "cases.jsonl"
    rows = []
    for n in range(12):
        fw = ("deepspeed", "colossalai")[n % 2]
        rows.append({"id": f"{fw}-{n}", "url": f"https://github.com/x/y/issues/{n}", "framework": fw,
                     "labels": {"stage": "S4", "symptom": "4.2", "root_cause": "R4.5",
                                "fix_pattern": ("F2", "F3", "F5")[n % 3], "distributed_specific": n % 2 == 0},
                     "comments": n, "created_at": "2024-01-01T00:00:00Z",
                     "closed_at": f"2024-{1 + n % 12:02d}-28T00:00:00Z"})
    cases.write_text("\n".join(json.dumps(r) for r in rows))
    a = analyse(load_dataset(str(cases)), str(cases))
    def days(r):
        return (datetime.fromisoformat(r["closed_at"][:10]) - datetime.fromisoformat(r["created_at"][:10])).days

    high = [r for r in rows if r["comments"] > 6 and days(r) > 67]
    assert a.effort.with_data == 12 and a.effort.high_effort == len(high) > 0
    assert sum(a.effort.high_effort_fix.values()) == len(high)
    files = write_report(a, tmp_path / "out")
    assert (tmp_path / "out" / "figures" / "effort_violins.png").is_file()
    assert (tmp_path / "out" / "figures" / "high_effort_fix.png").is_file()
    assert not any("not drawn" in n for n in files.notes)


def test_empty_or_bad_dataset_is_a_clear_error(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(DistdxError) as err:
        analyse(load_dataset(str(empty)), str(empty))
    assert err.value.code == "DX-STUDY-090"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x", "labels": {"stage": "S9"}}\n')
    with pytest.raises(DistdxError) as err:
        load_dataset(str(bad))
    assert "S9" in err.value.message
    done = subprocess.run([sys.executable, "-m", "distdx", "study", "report", "--dataset", str(tmp_path / "nope.db")],
                          capture_output=True, text=True, timeout=60, env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"})
    assert done.returncode == 2 and "Traceback" not in done.stderr and "DX-STUDY-081" in done.stderr


@pytest.mark.browser
def test_the_corpus_report_builds_in_under_a_minute_and_opens_in_chromium(tmp_path):
    import time

    out = tmp_path / "corpus-report"
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "distdx", "study", "report", "--dataset", str(CORPUS), "--out", str(out),
                           "--format", "json"], capture_output=True, text=True, timeout=120)
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    n = sum(1 for l in CORPUS.read_text(encoding="utf-8").splitlines() if l.strip())
    assert data["n"] == n >= 400 and took < 60
    chromium = find_chromium()
    if not chromium:
        pytest.skip("chromium is not installed (apt-get install -y chromium)")
    page = open_page(chromium, out / "index.html", tmp_path / "profile")
    assert page["errors"] == [] and f"{n} labelled issues" in page["text"]
    assert page["images"] and all(i["ok"] and i["width"] > 100 for i in page["images"])


def test_a_report_already_written_is_replaced_only_with_force(tmp_path):
    a = analyse(load_dataset(str(DEV)), str(DEV))
    write_report(a, tmp_path)
    before = (tmp_path / "index.html").read_bytes()
    with pytest.raises(DistdxError) as e:
        write_report(a, tmp_path)
    assert e.value.code == "DX-PATH-001"
    assert (tmp_path / "index.html").read_bytes() == before
    write_report(a, tmp_path, force=True)
