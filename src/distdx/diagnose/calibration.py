"""From the engine's scores to probabilities, and the tier an answer is given with.

The engine's scores rank well but say little about how often the top answer is right (on the
corpus they are about half the accuracy they stand for). ``calibration.yaml`` maps each dimension's
top score to the share of cases with that score whose top answer was right, fitted by
:func:`fit` (isotonic regression, pooled into blocks of at least ``min_block`` cases, Laplace
smoothed) on the corpus's train split, leave-one-out; ``benchmarks/calibrate.py`` refits it and
reports the expected calibration error on the test split. The tier says how far to trust the
answer: ``confident`` when the symptom's probability reaches the threshold in the file (the first
probability of the fitted table that is at least 0.9: answers there were right at least 9 times in 10
on the fitted cases), ``likely`` from 0.5,
``weak`` below.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from distdx.errors import DistdxError
from distdx.paths import cached
from distdx.yamlio import load_yaml

TIERS = ("confident", "likely", "weak")


@dataclass(frozen=True)
class Calibration:
    tables: dict[str, tuple[tuple[float, float], ...]]  # dimension -> (upper score, probability), rising
    confident: float  # symptom probability from which an answer is "confident"
    fitted_on: str

    def probability(self, dimension: str, score: float) -> float | None:
        table = self.tables.get(dimension)
        if not table:
            return None
        for upper, prob in table:
            if score <= upper:
                return prob
        return table[-1][1]

    def tier(self, symptom_probability: float | None) -> str:
        if symptom_probability is None:
            return "weak"
        if symptom_probability >= self.confident:
            return "confident"
        return "likely" if symptom_probability >= 0.5 else "weak"


@lru_cache(maxsize=1)
def calibration() -> Calibration:
    raw = resources.files("distdx.diagnose").joinpath("calibration.yaml").read_bytes()
    data = cached("calibration", [raw], lambda: load_yaml(raw.decode("utf-8")))
    try:
        tables = {str(dim): tuple((float(u), float(p)) for u, p in rows) for dim, rows in data["tables"].items()}
        return Calibration(tables, float(data["confident"]), str(data.get("fitted_on", "")))
    except (KeyError, TypeError, ValueError) as e:
        raise DistdxError("DX-DIAG-001", f"calibration.yaml is malformed ({e})",
                          hint="refit it with `python benchmarks/calibrate.py --write`", exit_code=3) from None


def fit(pairs: list[tuple[float, bool]], min_block: int = 20) -> list[tuple[float, float, int]]:
    """(upper score, probability, cases) blocks: pool-adjacent-violators on (score, right) pairs,
    small blocks merged into a neighbour, each block's share of right answers Laplace-smoothed."""
    blocks: list[list[float]] = []  # [upper score, right, cases]
    for score, right in sorted(pairs):
        blocks.append([score, float(right), 1.0])
        while len(blocks) > 1 and blocks[-2][1] / blocks[-2][2] >= blocks[-1][1] / blocks[-1][2]:
            upper, r, n = blocks.pop()
            blocks[-1] = [upper, blocks[-1][1] + r, blocks[-1][2] + n]
    while len(blocks) > 1 and any(b[2] < min_block for b in blocks):
        i = next(i for i, b in enumerate(blocks) if b[2] < min_block)
        j = i + 1 if i + 1 < len(blocks) else i - 1
        lo, hi = min(i, j), max(i, j)
        blocks[lo:hi + 1] = [[blocks[hi][0], blocks[lo][1] + blocks[hi][1], blocks[lo][2] + blocks[hi][2]]]
    # smoothing moves a small block further towards 1/2 than a large one, which can put a block's
    # probability below the one before it: pool such neighbours too
    smoothed = lambda b: (b[1] + 1) / (b[2] + 2)  # noqa: E731
    while (i := next((i for i in range(len(blocks) - 1) if smoothed(blocks[i]) > smoothed(blocks[i + 1])), None)) is not None:
        blocks[i:i + 2] = [[blocks[i + 1][0], blocks[i][1] + blocks[i + 1][1], blocks[i][2] + blocks[i + 1][2]]]
    return [(upper, smoothed([upper, r, n]), int(n)) for upper, r, n in blocks]


def expected_calibration_error(pairs: list[tuple[float, bool]], bins: int = 10) -> float:
    """Mean |probability - accuracy| over equal-width probability bins, weighted by their cases."""
    total = 0.0
    for b in range(bins):
        lo, hi = b / bins, (b + 1) / bins
        members = [(p, r) for p, r in pairs if lo <= p < hi or (b == bins - 1 and p == 1.0)]
        if members:
            mean_p = sum(p for p, _ in members) / len(members)
            accuracy = sum(r for _, r in members) / len(members)
            total += len(members) / len(pairs) * abs(mean_p - accuracy)
    return total
