"""The engine's mixing weights chosen by cross-validation, and where the answers go wrong.

Every case of the corpus train split (without the kept-back batches, strict leave-one-out: the case
and the rules that cite it are left out) and of dev (leave-one-out) is read once: the rules that fire
and the text model's votes (`engine.gather_signals`). Each candidate `engine.Weights` then only
recombines them (`engine.combine`), so a grid costs seconds. Printed:

- the confusion of the fix pattern and the most frequent root-cause confusions on train and dev
  (`--analyse`);
- per grid point the train and dev top-1/top-3, best first;
- the honest figure of the search itself: 5-fold cross-validation over train, where the grid point is
  chosen on four folds and scored on the fifth, beside today's defaults on the same folds;
- with `--learned`, a learned combiner instead of hand-set weights: per dimension a conditional logit
  (softmax over the labels) on each label's evidence (the engine's own score, the rules' vote, the
  nearest issues' vote, naive Bayes, the label's share, the symptom cues, its stage's probability,
  and, with `--learned-bias`, one bias per label), fitted on four folds of train and scored on the
  fifth, and fitted on all of train and scored on dev (needs numpy, which torch and scikit-learn bring).

The test split and the kept-back batches are never read here: choose on this, then run
`benchmarks/bench_accuracy.py` once. A setting is adopted only when it raises top-1 without lowering
kappa on train and dev: on labels as lopsided as the fix pattern's (F2 about half), top-1 also rises by
answering the majority more often, which kappa does not reward.

    python benchmarks/bench_weights.py [--analyse] [--top N] [--learned [--learned-bias]]
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import math
import sys
from collections import Counter
from pathlib import Path

from distdx.diagnose.engine import (DEFAULT_WEIGHTS, Signals, Weights, _normalise, _through, _told_symptoms, combine,
                                    evidence_weights, gather_signals)
from distdx.diagnose.evaluate import case_setup, cohen_kappa, gold_labels, select_cases
from distdx.knowledge.rules import load_rules
from distdx.knowledge.taxonomy import DIMENSIONS, UNKNOWN, taxonomy

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_accuracy import CORPUS, DEV, KEPT_BACK  # noqa: E402

# the fields `combine` reads, and the values tried for each (today's default among them)
GRID = {
    "prior_weight": (0.04, 0.08, 0.16),
    "index_prior": (0.0, 1.0),
    "fix_class_prior": (0.0, 1.0),
    "fix_via_cause": (0.25, 0.5, 1.0),
    "text_weight": (0.9, 1.2),
    "nb_share": (0.5, 0.65),
    "stage_coupling": (0.6, 0.8),
    "symptom_cues": (0.0, 0.8),
}
FOLDS = 5
# the engine before index_prior and fix_class_prior (study's shares as the prior, no class prior in naive Bayes)
BEFORE = dataclasses.replace(DEFAULT_WEIGHTS, index_prior=0.0, fix_class_prior=0.0)


@dataclasses.dataclass(frozen=True)
class Scored:
    gold: dict[str, str]
    signals: Signals


def gather(cases: list[dict], strict: bool) -> list[Scored]:
    rules = load_rules()
    out = []
    for case in cases:
        parsed, in_play, excluded = case_setup(case, rules, strict=strict)
        gold = gold_labels(case)
        out.append(Scored(gold, gather_signals(parsed, rules=in_play, exclude_ids=excluded)))
    return out


def ranked(dist: dict[str, float]) -> list[str]:
    return [k for k, _ in sorted(dist.items(), key=lambda kv: (-kv[1], kv[0]))]


def predictions(cases: list[Scored], weights: Weights) -> list[dict[str, list[str]]]:
    return [{d: ranked(dist)[:3] for d, dist in combine(c.signals, weights).items()} for c in cases]


def counts(cases: list[Scored], predicted: list[dict[str, list[str]]]) -> dict[str, tuple[int, int, int]]:
    """Per dimension: top-1 right, top-3 right, cases with a label."""
    out = {}
    for dim in DIMENSIONS:
        pairs = [(c.gold[dim], p[dim]) for c, p in zip(cases, predicted) if c.gold[dim] not in (UNKNOWN, "", "None")]
        out[dim] = (sum(g == (p or [""])[0] for g, p in pairs), sum(g in p for g, p in pairs), len(pairs))
    return out


def score(cases: list[Scored], predicted: list[dict[str, list[str]]]) -> dict[str, tuple[float, float]]:
    return {d: (a / max(n, 1), b / max(n, 1)) for d, (a, b, n) in counts(cases, predicted).items()}


def kappas(cases: list[Scored], predicted: list[dict[str, list[str]]]) -> dict[str, float]:
    return {d: cohen_kappa([(c.gold[d], (p[d] or [""])[0]) for c, p in zip(cases, predicted)
                            if c.gold[d] not in (UNKNOWN, "", "None")]) for d in DIMENSIONS}


def objective(figures: dict[str, tuple[float, float]]) -> float:
    """Mean top-1 over the dimensions: what the search maximises."""
    return sum(top1 for top1, _ in figures.values()) / len(figures)


def analyse(name: str, cases: list[Scored], predicted: list[dict[str, list[str]]]) -> None:
    labels = taxonomy().ids("fix_pattern")
    table = Counter((c.gold["fix_pattern"], p["fix_pattern"][0]) for c, p in zip(cases, predicted))
    print(f"{name}: fix pattern, gold (rows) -> predicted (columns)")
    print("| gold | " + " | ".join(labels) + " | n | right |")
    print("|---|" + "---|" * (len(labels) + 2))
    for g in labels:
        n = sum(table[(g, p)] for p in labels)
        print(f"| {g} | " + " | ".join(str(table[(g, p)]) for p in labels) + f" | {n} | {table[(g, g)] / max(n, 1):.2f} |")
    causes = Counter((c.gold["root_cause"], p["root_cause"][0]) for c, p in zip(cases, predicted)
                     if c.gold["root_cause"] != p["root_cause"][0])
    print(f"{name}: most frequent root-cause confusions (gold -> predicted): "
          + ", ".join(f"{g}->{p} {n}" for (g, p), n in causes.most_common(10)) + "\n")


def label_features(signals: Signals, dists: dict[str, dict[str, float]], dim: str, bias: bool) -> list[list[float]]:
    """One row per label of ``dim``: the evidence the engine mixes (``dists``: what it made of it), as a
    learned combiner would see it."""
    tax = taxonomy()
    labels = tax.ids(dim)
    w_rule, w_text = evidence_weights(signals)
    own, stage = dists[dim], dists["stage"]
    rules = _normalise(signals.rule_votes[dim]) if signals.rule_votes[dim] else {}
    near = signals.neighbour_votes[dim]
    near_total = sum(near.values()) or 1.0
    cues = _told_symptoms(signals.symptom_cues, stage) if dim == "symptom" and signals.symptom_cues else {}
    via_cause = _through(dists["root_cause"], signals.fix_given_cause, "fix_pattern") if dim == "fix_pattern" else {}
    best = max(own, key=lambda k: (own[k], k)) if own else None
    rows = []
    for label in labels:
        row = [math.log(own.get(label, 0.0) + 1e-4), w_rule * rules.get(label, 0.0), rules.get(label, 0.0),
               w_text * near.get(label, 0.0) / near_total, w_text * math.log(signals.bayes[dim].get(label, 0.0) + 1e-4),
               math.log(signals.label_shares[dim].get(label, 0.0) + 1e-3), cues.get(label, 0.0),
               math.log(stage.get(tax.stage_of(label) or "", 0.0) + 1e-4) if dim in ("symptom", "root_cause") else 0.0,
               float(label == best), via_cause.get(label, 0.0)]
        rows.append(row + ([float(label == other) for other in labels] if bias else []))
    return rows


def learned(train: list[Scored], dev: list[Scored], bias: bool, l2: float = 5.0, steps: int = 300) -> None:
    """Score a learned combiner: 5-fold cross-validation over train, then fitted on train and scored on dev."""
    import numpy as np

    combined = {id(c): combine(c.signals) for c in train + dev}

    def data(cases: list[Scored], dim: str) -> list[tuple["np.ndarray", int]]:
        labels = taxonomy().ids(dim)
        return [(np.array(label_features(c.signals, combined[id(c)], dim, bias)), labels.index(c.gold[dim]))
                for c in cases if c.gold[dim] in labels]

    def fit(rows: list[tuple["np.ndarray", int]]) -> "np.ndarray":
        start = np.zeros(rows[0][0].shape[1])
        start[0] = 1.0  # the engine's own score alone: where the fit begins and what L2 pulls towards
        w = start.copy()
        for _ in range(steps):  # gradient ascent on the mean log-likelihood
            grad = np.zeros_like(w)
            for x, y in rows:
                s = x @ w
                p = np.exp(s - s.max())
                grad += x[y] - (p / p.sum()) @ x
            w += 0.5 * (grad - l2 * (w - start)) / len(rows)
        return w

    def scored(rows, w) -> tuple[float, float, float]:
        tops = [(y, np.argsort(-(x @ w), kind="stable")) for x, y in rows]
        pairs = [(str(y), str(order[0])) for y, order in tops]
        return (sum(order[0] == y for y, order in tops) / len(tops), sum(y in order[:3] for y, order in tops) / len(tops),
                cohen_kappa(pairs))

    print(f"\nlearned combiner{' with a bias per label' if bias else ''} (conditional logit, L2 {l2}), top-1 / top-3 / kappa:")
    print("| dimension | train, engine | train, learned (5-fold) | dev, engine | dev, learned (fitted on train) |")
    print("|---|---|---|---|---|")
    for dim in DIMENSIONS:
        rows, dev_rows = data(train, dim), data(dev, dim)
        engine = np.zeros(rows[0][0].shape[1])
        engine[0] = 1.0
        right1 = right3 = 0
        pairs = []
        for k in range(FOLDS):
            held = rows[k::FOLDS]
            w = fit([r for i, r in enumerate(rows) if i % FOLDS != k])
            for x, y in held:
                order = np.argsort(-(x @ w), kind="stable")
                right1 += order[0] == y
                right3 += y in order[:3]
                pairs.append((str(y), str(order[0])))
        cv = (right1 / len(rows), right3 / len(rows), cohen_kappa(pairs))
        cells = [scored(rows, engine), cv, scored(dev_rows, engine), scored(dev_rows, fit(rows))]
        print(f"| {dim} | " + " | ".join(f"{a:.3f} / {b:.3f} / {c:.3f}" for a, b, c in cells) + " |")


def grid() -> list[Weights]:
    names = list(GRID)
    return [dataclasses.replace(DEFAULT_WEIGHTS, **dict(zip(names, values))) for values in itertools.product(*GRID.values())]


def changed(weights: Weights) -> str:
    return ", ".join(f"{f}={getattr(weights, f)}" for f in GRID if getattr(weights, f) != getattr(DEFAULT_WEIGHTS, f)) or "defaults"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--analyse", action="store_true", help="print the confusion tables of today's defaults")
    parser.add_argument("--top", type=int, default=10, help="grid points to print")
    parser.add_argument("--learned", action="store_true", help="also score a learned combiner of the same evidence")
    parser.add_argument("--learned-bias", action="store_true", help="give the learned combiner one bias per label")
    args = parser.parse_args()
    train_cases = [c for c in select_cases(CORPUS, "train") if c.get("batch") not in KEPT_BACK]
    train, dev = gather(train_cases, strict=True), gather(select_cases(DEV), strict=False)
    if args.learned:
        learned(train, dev, bias=args.learned_bias)
    if args.analyse:
        analyse("train", train, predictions(train, DEFAULT_WEIGHTS))
        analyse("dev", dev, predictions(dev, DEFAULT_WEIGHTS))

    candidates = grid()
    on_train = [predictions(train, w) for w in candidates]
    on_dev = [score(dev, predictions(dev, w)) for w in candidates]
    rows = sorted(range(len(candidates)), key=lambda i: -objective(score(train, on_train[i])))
    default = candidates.index(DEFAULT_WEIGHTS) if DEFAULT_WEIGHTS in candidates else None
    before = candidates.index(BEFORE) if BEFORE in candidates else None
    print(f"{len(candidates)} grid points; top-1 (top-3) on train ({len(train)}, strict leave-one-out) and dev ({len(dev)})\n")
    print("| weights | train " + " | train ".join(DIMENSIONS) + " | dev " + " | dev ".join(DIMENSIONS) + " |")
    print("|---|" + "---|" * 2 * len(DIMENSIONS))
    for label, i in [("before: ", before), ("defaults now: ", default)] + [("", i) for i in rows[: args.top]]:
        if i is None:
            continue
        t = score(train, on_train[i])
        print(f"| {label}{changed(candidates[i])} | " + " | ".join(f"{a:.3f} ({b:.3f})" for a, b in t.values()) + " | "
              + " | ".join(f"{a:.3f} ({b:.3f})" for a, b in on_dev[i].values()) + " |")

    for label, i in (("before", before), ("defaults now", default)):
        if i is not None:
            print(f"kappa, {label}: train " + ", ".join(f"{d} {k:.3f}" for d, k in kappas(train, on_train[i]).items())
                  + "; dev " + ", ".join(f"{d} {k:.3f}" for d, k in kappas(dev, predictions(dev, candidates[i])).items()))

    # nested: the grid point is chosen on four folds of train and scored on the fifth
    folds = [list(range(k, len(train), FOLDS)) for k in range(FOLDS)]
    totals = {name: {d: [0, 0, 0] for d in DIMENSIONS} for name in ("chosen by the search", "defaults now", "before")}
    picks = []
    for held in folds:
        rest = sorted(set(range(len(train))) - set(held))
        best = max(range(len(candidates)),
                   key=lambda i: (objective(score([train[j] for j in rest], [on_train[i][j] for j in rest])), -i))
        picks.append(changed(candidates[best]))
        for name, which in (("chosen by the search", best), ("defaults now", default), ("before", before)):
            if which is None:
                continue
            for d, c in counts([train[j] for j in held], [on_train[which][j] for j in held]).items():
                totals[name][d] = [x + y for x, y in zip(totals[name][d], c)]
    print(f"\n{FOLDS}-fold cross-validation of the search over train (chosen on four folds, scored on the fifth), top-1 (top-3):")
    for name, per in totals.items():
        if per[DIMENSIONS[0]][2]:
            print(f"  {name}: " + ", ".join(f"{d} {a / n:.3f} ({b / n:.3f})" for d, (a, b, n) in per.items()))
    print("  picks per fold: " + " | ".join(picks))
    return 0


if __name__ == "__main__":
    sys.exit(main())
