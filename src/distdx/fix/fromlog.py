"""Repairs from a diagnosis: ``distdx fix --from-log LOG [--config C] [--script S]``.

The diagnosis says which fix pattern applies; each repair is filled from the evidence: F1 the environment or
launch settings whose trigger (``fromlog.yaml``) matches a line of the log; F3 the diff ``distdx fix`` makes
to the config and script given (all fixes, each marked safe or unsafe); F4 the node the first failure came
from and the ``distdx doctor --hostfile`` run that checks it; F6 a patch template, shown and never applied.
Nothing is written. F2 (versions) and F5 (the cheapest change ``distdx estimate --fit`` says fits) are not
filled in here yet.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, replace
from functools import lru_cache

from distdx.errors import DistdxError
from distdx.fix.engine import FixOptions, fix
from distdx.knowledge.yamlio import bundled_yaml
from distdx.lint import LintOptions


@dataclass(frozen=True)
class Repair:
    pattern: str  # F1 | F3 | F4 | F6
    title: str
    why: str
    settings: tuple[str, ...] = ()
    diff: str = ""
    command: str = ""
    applied: bool = False  # always False: a repair from a log is shown, the user applies it

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class LogRepairs:
    headline: str
    fix_pattern: str | None
    repairs: tuple[Repair, ...]

    def to_dict(self) -> dict:
        return {"headline": self.headline, "fix_pattern": self.fix_pattern, "repairs": [r.to_dict() for r in self.repairs]}


@lru_cache(maxsize=1)
def _settings() -> tuple[tuple[re.Pattern[str], tuple[str, ...], str, str], ...]:
    data = bundled_yaml("distdx.fix", "fromlog.yaml")
    return tuple((re.compile(e["match"]), tuple(e["settings"]), e["why"], e["source"]) for e in data["settings"])


def fixes_from_log(logs: list[str], config: str | None = None, script: str | None = None,
                   lint_options: LintOptions = LintOptions()) -> LogRepairs:
    from distdx.diagnose import diagnose_files

    if not logs:
        raise DistdxError("DX-FIX-005", "--from-log needs a log", hint="distdx fix --from-log run.log [--config ds.json]")
    diagnosis = diagnose_files(logs)
    if diagnosis.verdict == "no_failure":
        raise DistdxError("DX-FIX-005", "the log reports no failure, so there is nothing to repair",
                          why="repairs are filled from the diagnosis of a failure",
                          hint="pass the log of the failed run (all ranks' output)")
    repairs: list[Repair] = []
    lines = [e.line.text for e in diagnosis.evidence] + ([diagnosis.first_failure.text] if diagnosis.first_failure else [])
    for pattern, settings, why, source in _settings():
        if any(pattern.search(text) for text in lines):
            repairs.append(Repair("F1", "environment / launch settings", f"{why} ({source})", settings))
    files = [p for p in (config, script) if p]
    if files:
        if lint_options.world_size is None and diagnosis.ranks:  # the run's own world size, from its ranks
            lint_options = replace(lint_options, world_size=max(diagnosis.ranks) + 1)
        report = fix(files, lint_options, FixOptions(unsafe=True))
        for f in report.files:
            if f.changed:
                kinds = ", ".join(f"{x.code} [{x.kind}]" for x in f.applied)
                repairs.append(Repair("F3", f"configuration change for {f.file}", kinds, diff=f.diff(),
                                      command=f"distdx fix {f.file} --write" + (" --unsafe-fixes" if any(
                                          x.kind == "unsafe" for x in f.applied) else "")))
    ff = diagnosis.first_failure
    host = ff.line.host if ff is not None else None
    if ff is not None and (host or ff.rank is not None):
        where = " ".join(x for x in (f"host {host}" if host else "", f"rank {ff.rank}" if ff.rank is not None else "") if x)
        repairs.append(Repair("F4", f"look at {where} first", "the earliest failure came from there; the others' "
                              "errors followed it", command="distdx doctor --hostfile HOSTFILE"))
    if diagnosis.top("fix_pattern") == "F6":
        steps = [s.step for s in diagnosis.fixes]
        template = "\n".join(f"# TODO: {s}" for s in steps) or "# TODO: change the code the traceback names"
        repairs.append(Repair("F6", "code change (a template, never applied)", diagnosis.headline, diff=template))
    return LogRepairs(diagnosis.headline, diagnosis.top("fix_pattern"), tuple(repairs))
