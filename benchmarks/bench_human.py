"""The human baseline: how well a person diagnoses the corpus's test split from the same text distdx sees.

The corpus labels were given by two annotators who read the whole thread, resolution included; distdx
sees only what a user pastes (the context and the log, `case_input`). This benchmark asks what a
senior engineer makes of that same text: each test case's input, with nothing else, was diagnosed by a
reader who saw neither the thread, the title, the labels nor distdx's answer (three best guesses per
dimension; `benchmarks/cases/human_from_input.jsonl`), and both are scored against the adjudicated
labels on the same cases, beside the majority class. It is the ceiling that the text allows, in the
same figures as `bench_accuracy.py`.

    python benchmarks/bench_human.py [--json] [--gap]
    python benchmarks/bench_human.py --make-inputs DIR [--set test|kept-back] [--parts 3]

`--make-inputs` writes the readers' input files: the cases of the set that the readings file does not
hold yet, in a seeded shuffle, split into parts. The readers were independent helpers, one per part,
each briefed with the taxonomy, `shared/cases/CASES.md` and `corpus/CONVENTIONS.md` only: first the
146 cases of the test split (seed 13), then the kept-back cases not read yet (seed 27; in the sixth
session the 27 of b28-b31, by one more reader). The kept-back
batches (`bench_accuracy.KEPT_BACK`) are scored as a second set. `corpus/CONVENTIONS.md`, which the
readers follow, names some cases with the labels decided for them; those cases are left out of both
rows (the reader may have read the answer there), and the table says how many. `--gap` also prints
where distdx falls behind the reader: symptom top-1 per gold stage over both sets (each case once), and
how many of distdx's symptom misses already had the stage wrong.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from pathlib import Path

from distdx.diagnose.evaluate import CaseResult, case_input, dimension_scores, evaluate, gold_labels, select_cases
from distdx.knowledge.taxonomy import DIMENSIONS

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_accuracy import KEPT_BACK  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "corpus" / "cases.jsonl"
HUMAN = ROOT / "benchmarks" / "cases" / "human_from_input.jsonl"
CONVENTIONS = ROOT / "corpus" / "CONVENTIONS.md"
SETS = {"test": ("corpus test split", "test", None, 13), "kept-back": ("kept back", None, KEPT_BACK, 27)}


def read_ids() -> set[str]:
    return {json.loads(line)["id"] for line in HUMAN.read_text(encoding="utf-8").splitlines()} if HUMAN.exists() else set()


def make_inputs(out: Path, which: str, parts: int) -> None:
    _, split, batches, seed = SETS[which]
    done = read_ids()
    todo = [c for c in select_cases(CORPUS, split, batches) if str(c["id"]) not in done]
    random.Random(seed).shuffle(todo)
    out.mkdir(parents=True, exist_ok=True)
    for k in range(parts):
        with open(out / f"input{k + 1}.jsonl", "w", encoding="utf-8") as f:
            for case in todo[k::parts]:
                f.write(json.dumps({"id": case["id"], "input": case_input(case)}, ensure_ascii=False) + "\n")


def named_in_conventions(ids) -> set[str]:
    """The case ids the written conventions name (with the labels decided for them)."""
    text = CONVENTIONS.read_text(encoding="utf-8")
    return {i for i in ids if re.search(rf"(?<![\w-]){re.escape(i)}(?![\w-])", text)}


def human_results(gold: dict[str, dict[str, str]], skip: set[str]) -> list[CaseResult]:
    results = []
    for line in HUMAN.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["id"] in gold and row["id"] not in skip:
            results.append(CaseResult(row["id"], gold[row["id"]],
                                      {d: tuple(row["ranked"].get(d, ()))[:3] for d in DIMENSIONS}))
    return results


def gap(pairs: dict[str, tuple[CaseResult, CaseResult]]) -> None:
    """Symptom top-1 of the reader and of distdx per gold stage, and how distdx's misses split."""
    def right(r: CaseResult, dim: str) -> bool:
        return bool(r.predicted[dim]) and r.predicted[dim][0] == r.gold[dim]

    print("\nwhere distdx falls behind the reader (both sets, each case once), symptom top-1:")
    print("| gold stage | cases | reader | distdx | distdx stage right |")
    print("|---|---|---|---|---|")
    for stage in sorted({h.gold["stage"] for h, _ in pairs.values()}):
        rows = [(h, e) for h, e in pairs.values() if h.gold["stage"] == stage]
        print(f"| {stage} | {len(rows)} | {sum(right(h, 'symptom') for h, _ in rows) / len(rows):.3f} | "
              f"{sum(right(e, 'symptom') for _, e in rows) / len(rows):.3f} | {sum(right(e, 'stage') for _, e in rows) / len(rows):.3f} |")
    misses = [(h, e) for h, e in pairs.values() if not right(e, "symptom")]
    wrong_stage = sum(not right(e, "stage") for _, e in misses)
    reader_right = sum(right(h, "symptom") for h, _ in misses)
    print(f"distdx misses the symptom on {len(misses)} of {len(pairs)} cases: {wrong_stage} with the stage wrong too, "
          f"{len(misses) - wrong_stage} within the right stage; the reader names {reader_right} of them")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--make-inputs", type=Path, metavar="DIR", help="write the readers' input files and stop")
    parser.add_argument("--set", choices=sorted(SETS), default="test", help="which cases --make-inputs writes")
    parser.add_argument("--parts", type=int, default=3)
    parser.add_argument("--gap", action="store_true", help="also print where distdx falls behind the reader")
    args = parser.parse_args()
    if args.make_inputs:
        make_inputs(args.make_inputs, args.set, args.parts)
        return 0
    table: dict[str, dict] = {}
    pairs: dict[str, tuple[CaseResult, CaseResult]] = {}
    for name, split, batches, _ in SETS.values():
        gold = {str(c["id"]): gold_labels(c) for c in select_cases(CORPUS, split, batches)}
        named = named_in_conventions(gold)
        human = human_results(gold, named)
        read = {r.id for r in human}
        engine = [r for r in evaluate(CORPUS, split=split, batches=batches).results if r.id in read]
        by_id = {r.id: r for r in engine}
        pairs.update({h.id: (h, by_id[h.id]) for h in human if h.id in by_id})
        table[name] = {"cases": len(gold), "read": len(human), "named": len(named & read_ids()),
                       "rows": {"a reader, from the same text": dimension_scores(human), "distdx": dimension_scores(engine)}}
    if args.json:
        print(json.dumps({name: {"cases": t["cases"], "read": t["read"], "left_out_as_named": t["named"],
                                 **{who: {d: vars(s) for d, s in dims.items()} for who, dims in t["rows"].items()}}
                          for name, t in table.items()}, indent=2))
        return 0
    print("| set | who | " + " | ".join(f"{d} top-1 / top-3 / kappa" for d in DIMENSIONS) + " |")
    print("|---|---|" + "---|" * len(DIMENSIONS))
    for name, t in table.items():
        label = f"{name} ({t['read']} of {t['cases']}; {t['named']} left out as named in the conventions)"
        for who, dims in t["rows"].items():
            print(f"| {label} | {who} | " + " | ".join(f"{s.top1:.3f} / {s.top3:.3f} / {s.kappa:.2f}" for s in dims.values()) + " |")
        engine = t["rows"]["distdx"]
        print(f"| {label} | majority class | " + " | ".join(f"{s.majority_top1:.3f} ({s.majority_label})" for s in engine.values()) + " |")
    if args.gap:
        gap(pairs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
