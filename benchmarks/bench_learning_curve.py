"""How diagnosis accuracy grows with the knowledge: the known-issue index at a fraction of its size.

The index is the 137 dev cases plus a seeded random fraction of the corpus's train split (0, 25, 50,
75 and 100 %; the rules stay as they are); each index scores the corpus's test split and the kept-back
batches (`bench_accuracy.KEPT_BACK`, leave-one-out), top-1 per dimension. Whether the curve still rises
at 100 % says whether more labelled issues are worth gathering. Three seeds per fraction, averaged.

    python benchmarks/bench_learning_curve.py [--seeds 3]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from pathlib import Path

from distdx.diagnose.evaluate import evaluate
from distdx.knowledge.taxonomy import DIMENSIONS

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_accuracy import CORPUS, DEV, KEPT_BACK, index_of  # noqa: E402

FRACTIONS = (0.0, 0.25, 0.5, 0.75, 1.0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    dev, train = index_of(DEV), index_of(CORPUS, "train")
    sets = {"corpus test": ("test", None), "kept back": (None, KEPT_BACK)}
    print(f"top-1 with the index at a fraction of the {len(train)} train cases (plus the {len(dev)} dev cases); "
          f"mean of {args.seeds} seeds\n")
    print("| index | " + " | ".join(f"{name}: {dim}" for name in sets for dim in DIMENSIONS) + " |")
    print("|---|" + "---|" * (len(sets) * len(DIMENSIONS)))
    for fraction in FRACTIONS:
        seeds = range(args.seeds) if 0.0 < fraction < 1.0 else range(1)
        figures: dict[tuple[str, str], list[float]] = {}
        for seed in seeds:
            index = dev + random.Random(seed).sample(train, round(fraction * len(train)))
            for name, (split, batches) in sets.items():
                report = evaluate(CORPUS, split=split, batches=batches, known_issues=index)
                for dim in DIMENSIONS:
                    figures.setdefault((name, dim), []).append(report.dimensions[dim].top1)
        size = len(dev) + round(fraction * len(train))
        print(f"| {fraction:.0%} ({size}) | " + " | ".join(f"{statistics.mean(figures[name, dim]):.3f}"
                                                        for name in sets for dim in DIMENSIONS) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
