"""The uncertain terms of the estimate, read from ``terms.yaml``: a value, the low and high ends of its range,
where the bytes come from, and the measurements that back it (``benchmarks/estimate_measurements.yaml``)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from distdx.errors import DistdxError
from distdx.yamlio import load_yaml

GIB = 2**30


@dataclass(frozen=True)
class Term:
    name: str
    value: float
    low: float
    high: float
    unit: str
    why: str
    backed_by: tuple[str, ...]

    def at(self, bound: str) -> float:
        """The term at ``bound`` ("value", "low" or "high"), in bytes when its unit is GiB."""
        x = getattr(self, bound)
        return x * GIB if self.unit == "GiB" else x


def parse_terms(text: str) -> dict[str, Term]:
    """The terms of a terms.yaml text (version 1); a malformed file is a distdx bug (DX-ESTIMATE-006)."""
    data = load_yaml(text)
    if not isinstance(data, dict) or data.get("version") != 1 or not isinstance(data.get("terms"), dict):
        raise DistdxError("DX-ESTIMATE-006", "terms.yaml is not version 1", hint="fix the packaged terms.yaml",
                          exit_code=3)
    out = {}
    for name, t in data["terms"].items():
        numbers = isinstance(t, dict) and all(isinstance(t.get(k), (int, float)) for k in ("low", "value", "high"))
        if not (numbers and t["low"] <= t["value"] <= t["high"] and t.get("why") and t.get("unit")):
            raise DistdxError("DX-ESTIMATE-006", f"terms.yaml: {name} needs numbers low <= value <= high, a unit and "
                              "a why", hint="fix src/distdx/estimate/terms.yaml", exit_code=3)
        out[name] = Term(name, float(t["value"]), float(t["low"]), float(t["high"]), str(t["unit"]), str(t["why"]),
                         tuple(t.get("backed_by") or ()))
    return out


@lru_cache(maxsize=1)
def terms() -> dict[str, Term]:
    """The packaged terms.yaml."""
    return parse_terms(resources.files("distdx.estimate").joinpath("terms.yaml").read_text(encoding="utf-8"))


class Bound:
    """The terms at one end of their range, recording which were used (for the unbacked-term warning)."""

    def __init__(self, bound: str = "value") -> None:
        self.bound = bound
        self.used: set[str] = set()

    def __call__(self, name: str) -> float:
        self.used.add(name)
        return terms()[name].at(self.bound)
