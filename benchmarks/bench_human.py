"""The human baseline: how well a person diagnoses the corpus's test split from the same text distdx sees.

The corpus labels were given by two annotators who read the whole thread, resolution included; distdx
sees only what a user pastes (the context and the log, `case_input`). This benchmark asks what a
senior engineer makes of that same text: each test case's input, with nothing else, was diagnosed by a
reader who saw neither the thread, the title, the labels nor distdx's answer (three best guesses per
dimension; `benchmarks/cases/human_from_input.jsonl`), and both are scored against the adjudicated
labels on the same cases, beside the majority class. It is the ceiling that the text allows, in the
same figures as `bench_accuracy.py`.

    python benchmarks/bench_human.py [--json]
    python benchmarks/bench_human.py --make-inputs DIR [--parts 3]   # the readers' input files

The readers were independent helpers (one per part of a seeded shuffle of the split), each briefed with
the taxonomy, `shared/cases/CASES.md` and `corpus/CONVENTIONS.md` only.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

from distdx.diagnose.evaluate import CaseResult, case_input, dimension_scores, evaluate, select_cases
from distdx.knowledge.taxonomy import DIMENSIONS, UNKNOWN

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "corpus" / "cases.jsonl"
HUMAN = ROOT / "benchmarks" / "cases" / "human_from_input.jsonl"


def make_inputs(out: Path, parts: int) -> None:
    test = select_cases(CORPUS, "test")
    random.Random(13).shuffle(test)
    out.mkdir(parents=True, exist_ok=True)
    for k in range(parts):
        with open(out / f"input{k + 1}.jsonl", "w", encoding="utf-8") as f:
            for case in test[k::parts]:
                f.write(json.dumps({"id": case["id"], "input": case_input(case)}, ensure_ascii=False) + "\n")


def human_results(gold: dict[str, dict[str, str]]) -> list[CaseResult]:
    results = []
    for line in HUMAN.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["id"] in gold:
            results.append(CaseResult(row["id"], gold[row["id"]],
                                      {d: tuple(row["ranked"].get(d, ()))[:3] for d in DIMENSIONS}))
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--make-inputs", type=Path, metavar="DIR", help="write the readers' input files and stop")
    parser.add_argument("--parts", type=int, default=3)
    args = parser.parse_args()
    if args.make_inputs:
        make_inputs(args.make_inputs, args.parts)
        return 0
    gold = {str(c["id"]): {d: str((c.get("labels") or {}).get(d, UNKNOWN)) for d in DIMENSIONS}
            for c in select_cases(CORPUS, "test")}
    human = human_results(gold)
    read = {r.id for r in human}
    engine = [r for r in evaluate(CORPUS, split="test").results if r.id in read]
    rows = {"human, from the same text": dimension_scores(human), "distdx": dimension_scores(engine)}
    if args.json:
        print(json.dumps({name: {d: vars(s) for d, s in dims.items()} for name, dims in rows.items()}, indent=2))
        return 0
    print(f"corpus test split, {len(human)} of {len(gold)} cases read by a person from the input alone\n")
    print("| who | " + " | ".join(f"{d} top-1 / top-3 / kappa" for d in DIMENSIONS) + " |")
    print("|---|" + "---|" * len(DIMENSIONS))
    for name, dims in rows.items():
        print(f"| {name} | " + " | ".join(f"{s.top1:.3f} / {s.top3:.3f} / {s.kappa:.2f}" for s in dims.values()) + " |")
    majority = rows["distdx"]
    print("| majority class | " + " | ".join(f"{s.majority_top1:.3f} ({s.majority_label})" for s in majority.values()) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
