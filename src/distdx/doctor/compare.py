"""What differs between the reports of several nodes or ranks, and who is the odd one out.

Input is one :class:`DoctorReport` per member (a node of a hostfile, a rank of a job). Every
fact (versions, driver, GPUs, selected environment variables) and every check status is
compared; where members disagree, the majority value is taken as expected and the members in
the minority are named. A tie names no one: both groups are listed.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Mapping

from distdx.doctor.models import DoctorReport

# Facts that differ between healthy members by design, never a finding.
_EXPECTED_TO_DIFFER = {"hostname", "env.RANK", "env.LOCAL_RANK", "env.GROUP_RANK", "env.NODE_RANK",
                       "env.CUDA_VISIBLE_DEVICES", "env.TORCHELASTIC_RUN_ID"}
_MISSING = "(unset)"


@dataclass(frozen=True)
class Difference:
    key: str  # "torch", "env.NCCL_SOCKET_IFNAME", "check.DOC-NCCL-004"
    values: Mapping[str, str]  # member -> value
    majority: str | None  # the value most members share; None on a tie
    odd: tuple[str, ...]  # members whose value differs from the majority

    def to_dict(self) -> dict:
        return {"key": self.key, "values": dict(self.values), "majority": self.majority, "odd": list(self.odd)}


@dataclass(frozen=True)
class Comparison:
    members: tuple[str, ...]
    differences: tuple[Difference, ...]

    @property
    def odd_members(self) -> tuple[str, ...]:
        """Members in the minority of at least one difference, most often first."""
        counts = Counter(m for d in self.differences for m in d.odd)
        return tuple(m for m, _ in counts.most_common())

    def to_dict(self) -> dict:
        return {"members": list(self.members), "odd_members": list(self.odd_members),
                "differences": [d.to_dict() for d in self.differences]}


def _flatten(report: DoctorReport) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in report.facts.items():
        if key == "env" and isinstance(value, Mapping):
            for k, v in value.items():
                out[f"env.{k}"] = str(v)
        elif value is not None:
            out[key] = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
    for c in report.checks:
        out[f"check.{c.code}"] = c.status
    return out


def compare_reports(reports: Mapping[str, DoctorReport]) -> Comparison:
    flat = {member: _flatten(r) for member, r in reports.items()}
    keys = sorted({k for f in flat.values() for k in f} - _EXPECTED_TO_DIFFER)
    diffs = []
    for key in keys:
        values = {m: f.get(key, _MISSING) for m, f in flat.items()}
        if len(set(values.values())) < 2:
            continue
        ranked = Counter(values.values()).most_common()
        majority = ranked[0][0] if len(ranked) == 1 or ranked[0][1] > ranked[1][1] else None
        odd = tuple(m for m, v in values.items() if majority is not None and v != majority)
        diffs.append(Difference(key=key, values=values, majority=majority, odd=odd))
    return Comparison(members=tuple(reports), differences=tuple(diffs))
