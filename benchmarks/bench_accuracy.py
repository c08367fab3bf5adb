"""Diagnosis accuracy on every labelled set, with the knowledge distdx has now beside a baseline
measured in the same run.

Sets:
- corpus test: the frozen test split of corpus/cases.jsonl (a fifth of the corpus, chosen by a hash of
  the URL; never indexed, never read to write a rule);
- corpus train: the rest of the corpus, leave-one-out (each case is removed from the index while it is
  scored);
- dev: corpus/dev.jsonl (= shared/cases/dev.jsonl), leave-one-out;
- extra: benchmarks/cases/extra.jsonl (single-annotator, never indexed);
- kept back: the corpus batches added after the rules and the model in use were written (KEPT_BACK), all
  splits, leave-one-out: issues no part of distdx was made from.

Knowledge compared:
- "now": the installed known-issue index (dev + corpus train, `corpus/build.sh`);
- "dev only": an index of the 137 dev cases alone, the knowledge before the corpus;
- majority: always the most frequent label of the set.
Beside them, the two human annotators' kappa on the set where it holds both annotations.

    python benchmarks/bench_accuracy.py [--strict] [--json]

Beside each top-1, Wilson's 95 % interval for a set of that size: on 150 cases it spans about 15 points.

`--strict` also leaves out, per case, the rules that cite its URL (the honest figure on dev).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from distdx.diagnose.evaluate import evaluate, proportion_interval, select_cases
from distdx.knowledge.known_issues import issue_from_case, read_cases
from distdx.knowledge.rules import load_rules
from distdx.knowledge.taxonomy import DIMENSIONS
from distdx.study.agreement import cohen_kappa

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "corpus" / "cases.jsonl"
DEV = ROOT / "corpus" / "dev.jsonl"
EXTRA = ROOT / "benchmarks" / "cases" / "extra.jsonl"
# the batches added after every rule and model choice in use was made: real cases kept back to check that the
# figures generalise (their train cases are in the index and scored leave-one-out, like corpus train)
KEPT_BACK = ("b19-three-frameworks-2025", "b20-stacks-2025", "b21-torchdist-ray", "b22-trainers-2025",
             "b23-more-stacks", "b24-trainer-repos", "b25-rl-apex-kubeflow", "b26-llama-operator-neox",
             "b27-alpa-unsloth", "b28-training-libs", "b29-fresh-2026",
             "b30-three-frameworks-2026", "b31-serving-2026")
SETS = (("corpus test", CORPUS, "test", None), ("corpus train", CORPUS, "train", None), ("dev", DEV, None, None),
        ("extra", EXTRA, None, None), ("kept back (b19-b31)", CORPUS, None, KEPT_BACK))


def human_kappa(path: Path, split: str | None, batches: tuple[str, ...] | None = None) -> dict[str, float | None]:
    cases = select_cases(path, split, batches)
    pairs = [c["annotations"] for c in cases if isinstance(c.get("annotations"), dict) and len(c["annotations"]) >= 2]
    if not pairs:
        return {}
    out = {}
    for dim in DIMENSIONS:
        a = [str(list(p.values())[0].get(dim)) for p in pairs]
        b = [str(list(p.values())[1].get(dim)) for p in pairs]
        out[dim] = cohen_kappa(a, b)
    return out


def index_of(path: Path, split: str | None = None) -> list:
    """The known issues a labelled file's cases (of ``split``, if given) make, as `kb build` makes them."""
    return [issue_from_case(c, path.name, (str(path), n)) for n, c in enumerate(read_cases(path), 1)
            if split is None or c.get("split") == split]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--strict", action="store_true", help="leave out the rules that cite each case")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    # rules of severity "info" are weak cues, most of them in an issue's prose ("the checkpoint save fails");
    # the others match error and warning lines: the share without the info cues is printed beside
    prose_cue = {r.code for r in load_rules() if r.severity == "info"}
    dev_only = index_of(DEV)
    results = {}
    for name, path, split, batches in SETS:
        now = evaluate(path, split=split, strict=args.strict, batches=batches)
        before = evaluate(path, split=split, strict=args.strict, known_issues=dev_only, batches=batches)
        humans = human_kappa(path, split, batches)
        shown = sum(len(r.similar) for r in now.results)
        relevant = sum(r.relevant_similar for r in now.results)
        results[name] = {"n": now.cases, "seconds": round(now.seconds, 1),
                         "rule_coverage": {"now": now.rule_coverage, "dev_only": before.rule_coverage,
                                           "error_lines": sum(1 for r in now.results if set(r.rules) - prose_cue)
                                           / max(now.cases, 1)},
                         "similar": {"shown": shown, "relevant": relevant,
                                     "cases_with_one": sum(1 for r in now.results if r.similar)},
                         "dimensions": {
            dim: {"now": {"top1": now.dimensions[dim].top1, "top3": now.dimensions[dim].top3,
                          "kappa": now.dimensions[dim].kappa,
                          "top1_interval": proportion_interval(round(now.dimensions[dim].top1 * now.dimensions[dim].n),
                                                               now.dimensions[dim].n)},
                  "dev_only": {"top1": before.dimensions[dim].top1, "top3": before.dimensions[dim].top3,
                               "kappa": before.dimensions[dim].kappa},
                  "majority": {"label": now.dimensions[dim].majority_label, "top1": now.dimensions[dim].majority_top1},
                  "human_kappa": humans.get(dim)}
            for dim in DIMENSIONS if dim in now.dimensions}}
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    mode = "strict leave-one-out" if args.strict else "leave-one-out where indexed"
    print(f"Diagnosis accuracy ({mode}); 'dev only' = index of the 137 dev cases, measured in the same run\n")
    for name, r in results.items():
        print(f"{name} ({r['n']} cases)")
        print("| dimension | top-1 now (95 % interval) | top-1 dev only | top-3 now | top-3 dev only | kappa now | human kappa | majority top-1 |")
        print("|---|---|---|---|---|---|---|---|")
        for dim, d in r["dimensions"].items():
            human = "-" if d["human_kappa"] is None else f"{d['human_kappa']:.3f}"
            lo, hi = d["now"]["top1_interval"]
            print(f"| {dim} | {d['now']['top1']:.3f} ({lo:.3f}-{hi:.3f}) | {d['dev_only']['top1']:.3f} | {d['now']['top3']:.3f} | "
                  f"{d['dev_only']['top3']:.3f} | {d['now']['kappa']:.3f} | {human} | "
                  f"{d['majority']['top1']:.3f} ({d['majority']['label']}) |")
        sim = r["similar"]
        print(f"similar known issues shown: {sim['shown']} on {sim['cases_with_one']} cases, "
              f"{sim['relevant'] / max(sim['shown'], 1):.3f} of them with the case's symptom or root cause")
        print(f"a signature rule fired with evidence on {r['rule_coverage']['now']:.3f} of the cases "
              f"(a warning- or error-severity rule, leaving out the info cues: {r['rule_coverage']['error_lines']:.3f})\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
