"""Kappa against scikit-learn and a published Fleiss example; the agreement command; saturation."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
from sklearn.metrics import cohen_kappa_score

from distdx.errors import DistdxError
from distdx.knowledge.taxonomy import taxonomy
from distdx.study.agreement import agreement, cohen_kappa, fleiss_kappa, saturation
from distdx.study.labelio import LabelRecord, read_labels, write_labels
from distdx.study.records import DIMENSIONS, LabelSet

SRC = str(Path(__file__).resolve().parents[2] / "src")


@pytest.mark.parametrize("seed", range(40))
def test_cohen_equals_sklearn_on_random_labels(seed):
    rnd = random.Random(seed)
    k = rnd.randint(2, 8)
    categories = [f"c{i}" for i in range(k)]
    n = rnd.randint(2, 300)
    a = [rnd.choice(categories) for _ in range(n)]
    noise = rnd.random()
    b = [x if rnd.random() > noise else rnd.choice(categories) for x in a]
    expected = cohen_kappa_score(a, b)
    got = cohen_kappa(a, b)
    if got is None:
        assert len(set(a) | set(b)) == 1
    else:
        assert got == pytest.approx(expected, abs=1e-12)


def test_cohen_undefined_when_everyone_uses_one_category():
    assert cohen_kappa(["x"] * 5, ["x"] * 5) is None


def test_fleiss_published_example():
    # Fleiss (1971)-style example used in the literature: 10 items, 14 raters, 5 categories; kappa 0.210
    table = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
             [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
    ratings = [[f"c{j}" for j, count in enumerate(row) for _ in range(count)] for row in table]
    assert fleiss_kappa(ratings) == pytest.approx(0.2099, abs=5e-4)


def random_labels(rnd: random.Random) -> LabelSet:
    tax = taxonomy()
    stage = rnd.choice(tax.ids("stage"))
    return LabelSet(stage=stage, symptom=rnd.choice([n.id for n in tax.children(stage, "symptom")]),
                    root_cause=rnd.choice([n.id for n in tax.children(stage, "root_cause")] + ["unknown"]),
                    fix_pattern=rnd.choice(tax.ids("fix_pattern")), distributed_specific=rnd.choice([True, False, None]))


def perturb(rnd: random.Random, labels: LabelSet, p: float) -> LabelSet:
    return random_labels(rnd) if rnd.random() < p else labels


@pytest.mark.parametrize("seed", range(5))
def test_agreement_command_json_equals_sklearn(tmp_path, seed):
    rnd = random.Random(100 + seed)
    ids = [f"deepspeed-{i}" for i in range(rnd.randint(20, 80))]
    base = {i: random_labels(rnd) for i in ids}
    files = []
    for who in ("A", "B"):
        records = [LabelRecord(i, f"https://github.com/microsoft/DeepSpeed/issues/{n}", perturb(rnd, base[i], 0.3), who)
                   for n, i in enumerate(ids)]
        rnd.shuffle(records)  # order must not matter
        path = tmp_path / (f"{who}.jsonl" if who == "A" else f"{who}.csv")
        write_labels(records, path)
        files.append((who, path, {r.id: r.labels for r in records}))
    done = subprocess.run([sys.executable, "-m", "distdx", "study", "agreement", str(files[0][1]), str(files[1][1]),
                           "--format", "json"], capture_output=True, text=True, timeout=60,
                          env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert set(result) == set(DIMENSIONS)
    for dim in DIMENSIONS:
        a = [files[0][2][i].value(dim) for i in sorted(ids)]
        b = [files[1][2][i].value(dim) for i in sorted(ids)]
        assert result[dim]["n"] == len(ids)
        assert result[dim]["kappa"] == pytest.approx(cohen_kappa_score(a, b), abs=1e-6)
        assert len(result[dim]["disagreements"]) == sum(x != y for x, y in zip(a, b))


def test_three_annotators_use_fleiss_and_list_disagreements():
    rnd = random.Random(3)
    ids = [f"x-{i}" for i in range(30)]
    base = {i: random_labels(rnd) for i in ids}
    sets = {w: {i: perturb(rnd, base[i], 0.25) for i in ids} for w in ("A", "B", "C")}
    sets["C"].pop("x-0")  # labelled by two only: left out
    result = agreement(sets)
    assert result.only_some == 1
    for dim, d in result.dimensions.items():
        rows = [[sets[w][i].value(dim) for w in ("A", "B", "C")] for i in ids[1:]]
        assert d.method == "fleiss" and d.n == 29
        assert d.kappa == pytest.approx(fleiss_kappa(rows))
        assert {x.id for x in d.disagreements} == {i for i, r in zip(ids[1:], rows) if len(set(r)) > 1}


def test_single_case_file_uses_its_annotations(tmp_path):
    rnd = random.Random(5)
    path = tmp_path / "cases.jsonl"
    lines = []
    for n in range(25):
        a, b = random_labels(rnd), random_labels(rnd)
        lines.append(json.dumps({"id": f"c-{n}", "url": f"https://github.com/o/r/issues/{n}", "labels": a.to_dict(),
                                 "annotations": {"A": a.to_dict(), "B": b.to_dict()}}))
    path.write_text("\n".join(lines) + "\n")
    done = subprocess.run([sys.executable, "-m", "distdx", "study", "agreement", str(path)], capture_output=True,
                          text=True, timeout=60, env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert "annotators: A, B; method: Cohen" in done.stdout and "disagreements on stage" in done.stdout


def test_agreement_needs_two_annotators_with_common_issues():
    with pytest.raises(DistdxError) as err:
        agreement({"A": {"x": LabelSet()}})
    assert err.value.code == "DX-STUDY-060"
    with pytest.raises(DistdxError) as err:
        agreement({"A": {"x": LabelSet()}, "B": {"y": LabelSet()}})
    assert err.value.code == "DX-STUDY-061"


def test_saturation_counts_new_categories_per_round():
    s1 = LabelSet("S4", "4.2", "R4.5", "F5", True)
    s2 = LabelSet("S4", "4.7", "R4.7", "F3", True)
    s3 = LabelSet("S1", "1.1", "R1.1", "F2", False)
    rounds = [
        (1, "A", "i1", s1), (1, "B", "i1", s1), (1, "A", "i2", s2), (1, "B", "i2", s1),
        (2, "A", "i3", s3), (2, "B", "i3", s3),
        (3, "A", "i4", s1), (3, "B", "i4", s1), (3, "A", "i5", s3), (3, "B", "i5", s3),
    ]
    sat = saturation(rounds)
    assert [r.round for r in sat.rounds] == [1, 2, 3]
    assert sat.rounds[0].new_categories["symptom"] == ("4.2", "4.7")
    assert sat.rounds[1].new_categories["stage"] == ("S1",) and sat.rounds[1].new_categories["distributed_specific"] == ("false",)
    assert sat.rounds[2].new_total == 0 and sat.saturated
    assert sat.rounds[2].kappa["stage"] == pytest.approx(1.0)
    assert not saturation(rounds[:6]).saturated


def test_a_long_csv_note_is_data_and_a_broken_csv_a_clear_error(tmp_path):
    header = "id,url,annotator,note,stage,symptom,root_cause,fix_pattern,distributed_specific\n"
    big = tmp_path / "big.csv"
    big.write_text(header + f"a-1,u,A,{'n' * 131_073},S4,4.7,R4.7,F1,true\n")
    assert read_labels(big)[0].note == "n" * 131_073
    broken = tmp_path / "broken.csv"
    broken.write_text(header + 'a-1,u,A,"never closed\n' + "x\n" * 3)
    with pytest.raises(DistdxError) as e:
        read_labels(broken)
    assert e.value.code == "DX-STUDY-053" and "not CSV" in e.value.message
