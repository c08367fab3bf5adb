"""Repairs from a diagnosis: ``distdx fix --from-log LOG [--config C] [--script S]``.

The diagnosis says which fix pattern applies; each repair is filled from the evidence: F1 the environment or
launch settings whose trigger (``fromlog.yaml``) matches a line of the log; F3 the diff ``distdx fix`` makes
to the config and script given (all fixes, each marked safe or unsafe); F4 the node the first failure came
from and the ``distdx doctor --hostfile`` run that checks it; F6 a patch template, shown and never applied.
With ``--script``, the F1 settings that are one variable with a concrete value are also written into the script
(an ``export``, or its own assignment changed), on top of the script's F3 fixes. F5 (out of memory, with the
model's shape and a DeepSpeed config) the cheapest change ``distdx estimate``
says fits, as a diff of the config. F2 (versions): a compatible set for the packages the log names, from the
version-set table (``distdx.doctor.versionsets``) with the versions the log quotes as evidence, as a pip
constraints file and the one command to apply it; what the table cannot answer is said, never guessed.
Nothing is written here: the caller writes a repair's ``file_fix`` (``--write``) or the constraints.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field, replace
from functools import lru_cache

from distdx.errors import DistdxError
from distdx.fix.engine import FixOptions, fix
from distdx.fix.models import FileFix
from distdx.yamlio import bundled_yaml
from distdx.lint import LintOptions

# torch >= 2.1: "GPU 0 has a total capacity of 79.15 GiB"; before: "(GPU 0; 79.15 GiB total capacity; ...)"
_TOTAL_CAPACITY = re.compile(r"total capacity of (\d+(?:\.\d+)?) GiB|(\d+(?:\.\d+)?) GiB total capacity")
_OPTIMIZERS = {"adam": "adam", "adamw": "adamw", "sgd": "sgd", "fusedadam": "adam", "cpuadam": "adam"}


@dataclass(frozen=True)
class Repair:
    pattern: str  # F1 | F2 | F3 | F4 | F5 | F6
    title: str
    why: str
    settings: tuple[str, ...] = ()
    diff: str = ""
    command: str = ""
    applied: bool = False  # always False here: a repair from a log is shown; the CLI writes file_fix on --write
    file_fix: FileFix | None = field(default=None, compare=False)  # F3, F5: the change behind the diff, to write
    constraints: str = ""  # F2: the pip constraints file

    def to_dict(self) -> dict:
        return {"pattern": self.pattern, "title": self.title, "why": self.why, "settings": list(self.settings),
                "diff": self.diff, "command": self.command, "applied": self.applied, "constraints": self.constraints}


@dataclass(frozen=True)
class LogRepairs:
    headline: str
    fix_pattern: str | None
    repairs: tuple[Repair, ...]

    def to_dict(self) -> dict:
        return {"headline": self.headline, "fix_pattern": self.fix_pattern, "repairs": [r.to_dict() for r in self.repairs]}

    def lines(self, constraints_path: str = "",
              constraints_hint: str = "(--constraints-out PATH writes the constraints file)") -> list[str]:
        """The repairs as text lines (each with its settings, diff and command); ``constraints_path``: where
        the F2 constraints file was written, which the command then names; else ``constraints_hint``."""
        from distdx.doctor.versionsets import CONSTRAINTS_FILE

        out = []
        for r in self.repairs:
            out.append(f"[{r.pattern}] {r.title}: {r.why}")
            out.extend(f"    {s}" for s in r.settings)
            if r.diff:
                out.append(r.diff.rstrip("\n"))
            if r.command:
                command = r.command
                if constraints_path and r.constraints:
                    command = command.replace(CONSTRAINTS_FILE, shlex.quote(constraints_path))
                out.append(f"    run: {command}")
            if r.constraints and not constraints_path:
                out.append(f"    {constraints_hint}")
        return out


@lru_cache(maxsize=1)
def _settings() -> tuple[tuple[re.Pattern[str], tuple[str, ...], str, str], ...]:
    data = bundled_yaml("distdx.fix", "fromlog.yaml")
    return tuple((re.compile(e["match"]), tuple(e["settings"]), e["why"], e["source"]) for e in data["settings"])


_ENV_SETTING = re.compile(r"([A-Z][A-Z0-9_]*)=([^\s<>]+)(?:\s|$)")


def _env_settings(settings: tuple[str, ...]) -> list[tuple[str, str]]:
    """The settings that are one environment variable with a concrete value (``NCCL_P2P_DISABLE=1``), not a
    placeholder (``MASTER_ADDR=<...>``) or a code change: what can be written into a launch script."""
    return [(m.group(1), m.group(2)) for m in map(_ENV_SETTING.match, settings) if m]


def _script_env_repair(script: str, base: FileFix | None, env: dict[str, tuple[str, str]],
                       log: str) -> Repair | None:
    """F1 written into the launch script: each concrete setting as an ``export`` (or the script's own
    assignment given the new value), on top of the F3 fixes of the same script when there are any, so the
    repair's file fix holds every change to that script."""
    from distdx.fix.edits import set_env
    from distdx.fix.engine import apply_edits
    from distdx.fix.models import Fix
    from distdx.lint.source import read_text

    if base is None:
        original = read_text(script)
        base = FileFix(script, original, original, ())
    text, applied = base.fixed, []
    for name, (value, why) in env.items():
        edit = set_env(text, name, value, why)
        if edit is None:
            continue
        applied.append(Fix("F1", script, name, "unsafe", why, (edit,)))
        text = apply_edits(text, [edit])
    if not applied:
        return None
    shown = FileFix(script, base.fixed, text, tuple(applied))
    combined = replace(base, fixed=text, applied=base.applied + tuple(applied))
    names = ", ".join(f.field for f in applied)
    command = f"distdx fix --from-log {shlex.quote(log)} --script {shlex.quote(script)} --write --unsafe-fixes"
    return Repair("F1", f"environment settings in {script}", f"{names} set in the launch script",
                  diff=shown.diff(), command=command, file_fix=combined)


def _ds_setup(data: dict, world: int, seq_len: int):  # noqa: ANN202
    """The estimate's Setup of a run from its DeepSpeed config and world size (one node of ``world`` ranks)."""
    from distdx.estimate import Setup

    def section(name: str) -> dict:
        value = data.get(name)
        return value if isinstance(value, dict) else {}

    zero = section("zero_optimization")
    dtype = "bf16" if section("bf16").get("enabled") is True else "fp16" if section("fp16").get("enabled") is True \
        else "fp32"
    micro = data.get("train_micro_batch_size_per_gpu")
    if not isinstance(micro, int) or isinstance(micro, bool) or micro < 1:
        tb, ga = data.get("train_batch_size"), data.get("gradient_accumulation_steps", 1)
        micro = tb // (ga * world) if isinstance(tb, int) and isinstance(ga, int) and tb >= ga * world else 1
    optimizer = _OPTIMIZERS.get(str(section("optimizer").get("type", "adamw")).lower(), "adamw")

    def device(block: str) -> str:  # "auto" or a bad value: what the estimate can only take as no offload
        value = zero.get(block)
        found = str(value.get("device", "none")) if isinstance(value, dict) else "none"
        return found if found in ("none", "cpu", "nvme") else "none"

    stage = zero.get("stage")
    stage = stage if stage in (0, 1, 2, 3) and not isinstance(stage, bool) else 0
    return Setup(dtype=dtype, optimizer=optimizer, zero_stage=stage,
                 offload_optimizer=device("offload_optimizer"), offload_params=device("offload_param"),
                 dp=world, gpus_per_node=world, micro_batch=micro, seq_len=seq_len)


def _memory_repair(config: str, data: dict, world: int, shape, gpu_memory: int | None,  # noqa: ANN001
                   seq_len: int) -> Repair | None:
    """F5: the cheapest change ``distdx estimate`` says fits, written into the DeepSpeed config as a diff."""
    from distdx.estimate import suggest
    from distdx.fix.edits import set_values
    from distdx.fix.engine import apply_edits
    from distdx.lint.source import json_text_layout, read_text

    if gpu_memory is None:
        return Repair("F5", "memory: the change that fits", "the GPU memory is not known: pass --gpu-memory "
                      "(or a log with the CUDA out-of-memory message, which states it)")
    setup = _ds_setup(data, world, seq_len)
    found = suggest(shape, setup, gpu_memory, allow_flash=False)
    if not found:
        return Repair("F5", "memory: no change in the search space fits", "distdx estimate found no ZeRO stage, "
                      "offload, checkpointing or micro batch that fits; more GPUs or a smaller model are needed")
    best = found[0]
    after = best.setup
    values: dict[str, object] = {}
    if after.zero_stage != setup.zero_stage:
        values["zero_optimization.stage"] = after.zero_stage
    if after.offload_optimizer != setup.offload_optimizer:
        values["zero_optimization.offload_optimizer.device"] = after.offload_optimizer
    if after.offload_params != setup.offload_params:
        values["zero_optimization.offload_param.device"] = after.offload_params
    if after.micro_batch != setup.micro_batch:
        values["train_micro_batch_size_per_gpu"] = after.micro_batch
        ga = data.get("gradient_accumulation_steps")
        if isinstance(ga, int) and "train_batch_size" not in data:  # keep the global batch
            values["gradient_accumulation_steps"] = ga * setup.micro_batch // after.micro_batch
    text = read_text(config)
    fixed = apply_edits(text, set_values(text, json_text_layout(text), values))
    outside = [c for c in best.changes if after.checkpointing != setup.checkpointing and "checkpoint" in c]
    why = (f"distdx estimate: {', '.join(best.changes)} fits {best.figures.per_gpu / 2**30:.1f} GiB per GPU in "
           f"{gpu_memory / 2**30:.1f} GiB (assumed cost +{best.cost:.0%} step time)")
    change = FileFix(config, text, fixed, ())
    return Repair("F5", "memory: the cheapest change that fits", why, settings=tuple(outside), diff=change.diff(),
                  file_fix=change)


def _packages_named(text: str, known: frozenset[str]) -> list[str]:
    """The table's packages that ``text`` names, as a distribution (``transformer-engine``) or as the module
    a traceback path or import shows (``transformer_engine``)."""
    out = []
    for name in sorted(known):
        spellings = {name, name.replace("-", "_")}
        if any(re.search(rf"(?<![\w.-]){re.escape(sp)}(?![\w-])", text, re.IGNORECASE) for sp in spellings):
            out.append(name)
    return out


def _version_repair(text: str) -> Repair | None:
    from distdx.doctor.versionsets import table, version_set

    packages = [p for p in _packages_named(text, table().packages) if p not in ("python", "cuda")]
    if not packages:
        return None
    vs = version_set(packages, evidence=text)
    if not vs.pins:
        unknown = "; ".join(f"{u.package}: {u.why}" for u in vs.unknown[:4])
        return Repair("F2", "versions: the table has no answer", f"unknown rather than a guess ({unknown})")
    why = "; ".join(f"{p.package} {p.specifier}: {p.clauses[0].reason} ({p.clauses[0].source})" for p in vs.pins
                    if p.clauses)
    if vs.unknown:
        why += "; unknown: " + ", ".join(u.package for u in vs.unknown)
    if vs.conflicts:
        why += "; conflicts: " + "; ".join(vs.conflicts)
    return Repair("F2", "a compatible version set", why, settings=tuple(l for l in vs.constraints.splitlines() if l
                                                                          and not l.startswith("#")),
                  command=vs.command, constraints=vs.constraints)


def _through_hugging_face(parsed) -> bool | None:  # noqa: ANN001
    """Whether the run gave its DeepSpeed config to the Hugging Face integration (which fills "auto"): True
    when a traceback passes through transformers or accelerate, False when DeepSpeed's own config code
    failed with neither in sight, None when the log does not say."""
    text = parsed.text
    if re.search(r"[/\\](transformers|accelerate)[/\\]", text):
        return True
    return False if re.search(r"deepspeed[/\\]runtime[/\\]config\.py", text) else None


def fixes_from_log(logs: list[str], config: str | None = None, script: str | None = None,
                   lint_options: LintOptions = LintOptions(), model=None,  # noqa: ANN001
                   gpu_memory: int | None = None, seq_len: int = 2048) -> LogRepairs:
    """Repairs for the failure the logs show. ``model`` (a :class:`distdx.estimate.ModelShape`) and
    ``gpu_memory`` (bytes; else read from the out-of-memory message) let an out-of-memory failure get its F5
    repair; ``config``/``script`` the F3 diff."""
    from distdx.diagnose import diagnose
    from distdx.logs import read_logs

    if not logs:
        raise DistdxError("DX-FIX-005", "--from-log needs a log", hint="distdx fix --from-log run.log [--config ds.json]")
    parsed = read_logs(logs)
    diagnosis = diagnose(parsed)
    if diagnosis.verdict == "no_failure":
        raise DistdxError("DX-FIX-005", "the log reports no failure, so there is nothing to repair",
                          why="repairs are filled from the diagnosis of a failure",
                          hint="pass the log of the failed run (all ranks' output)")
    return repairs_for(parsed, diagnosis, config=config, script=script, lint_options=lint_options, model=model,
                       gpu_memory=gpu_memory, seq_len=seq_len, log_name=logs[0])


def repairs_for(parsed, diagnosis, *, config: str | None = None, script: str | None = None,  # noqa: ANN001
                lint_options: LintOptions = LintOptions(), model=None, gpu_memory: int | None = None,  # noqa: ANN001
                seq_len: int = 2048, log_name: str = "LOG") -> LogRepairs:
    """The repairs a diagnosis (of ``parsed``, a :class:`distdx.logs.ParsedLog`) calls for: what
    :func:`fixes_from_log` and ``distdx diagnose --fix`` show. ``log_name`` is the log as a command names it."""
    if diagnosis.verdict == "no_failure":
        return LogRepairs(diagnosis.headline, None, ())
    repairs: list[Repair] = []
    lines = [e.line.text for e in diagnosis.evidence] + ([diagnosis.first_failure.text] if diagnosis.first_failure else [])
    env: dict[str, tuple[str, str]] = {}  # name -> (value, why): the first trigger's value wins
    for pattern, settings, why, source in _settings():
        if any(pattern.search(text) for text in lines):
            repairs.append(Repair("F1", "environment / launch settings", f"{why} ({source})", settings))
            for name, value in _env_settings(settings):
                env.setdefault(name, (value, why))
    if diagnosis.top("fix_pattern") == "F2":
        repair = _version_repair(parsed.text)
        if repair is not None:
            repairs.append(repair)
    files = [p for p in (config, script) if p]
    if files:
        if lint_options.world_size is None and diagnosis.ranks:  # the run's own world size, from its ranks
            lint_options = replace(lint_options, world_size=max(diagnosis.ranks) + 1)
        if lint_options.hf is None:
            lint_options = replace(lint_options, hf=_through_hugging_face(parsed))
        report = fix(files, lint_options, FixOptions(unsafe=True))
        for f in report.files:
            if f.changed:
                kinds = ", ".join(f"{x.code} [{x.kind}]" for x in f.applied)
                repairs.append(Repair("F3", f"configuration change for {f.file}", kinds, diff=f.diff(),
                                      command=f"distdx fix {f.file} --write" + (" --unsafe-fixes" if any(
                                          x.kind == "unsafe" for x in f.applied) else ""), file_fix=f))
    if script and env:
        base = next((r.file_fix for r in repairs if r.file_fix is not None and r.file_fix.file == script), None)
        repair = _script_env_repair(script, base, env, log_name)
        if repair is not None:
            repairs.append(repair)
    memory_failure = diagnosis.top("fix_pattern") == "F5" or diagnosis.top("symptom") == "4.2"
    if memory_failure and config and model is not None:
        from distdx.lint.source import parse_json, read_text

        data = parse_json(read_text(config)).data
        if gpu_memory is None:
            found = [a or b for text in lines for a, b in _TOTAL_CAPACITY.findall(text)]
            gpu_memory = int(float(found[0]) * 2**30) if found else None
        if isinstance(data, dict):
            world = lint_options.world_size or (max(diagnosis.ranks) + 1 if diagnosis.ranks else 1)
            repair = _memory_repair(config, data, world, model, gpu_memory, seq_len)
            if repair is not None:
                repairs.append(repair)
    ff = diagnosis.first_failure
    host = ff.line.host if ff is not None else None
    rank = ff.rank if ff is not None else None
    pattern = diagnosis.top("fix_pattern")
    # a node to look at: not for a config or code error, which every rank shares
    if pattern not in ("F3", "F6") and (host or rank is not None):
        where = " ".join(x for x in (f"host {host}" if host else "", f"rank {rank}" if rank is not None else "") if x)
        repairs.append(Repair("F4", f"look at {where} first", "the earliest failure came from there; the others' "
                              "errors followed it", command="distdx doctor --hostfile HOSTFILE"))
    elif pattern == "F4":
        repairs.append(Repair("F4", "check every node and link", "the log names no node; a hardware or network "
                              "fault shows in the environment of one of them", command="distdx doctor --hostfile HOSTFILE"))
    if diagnosis.top("fix_pattern") == "F6":
        steps = [s.step for s in diagnosis.fixes]
        template = "\n".join(f"# TODO: {s}" for s in steps) or "# TODO: change the code the traceback names"
        repairs.append(Repair("F6", "code change (a template, never applied)", diagnosis.headline, diff=template))
    return LogRepairs(diagnosis.headline, diagnosis.top("fix_pattern"), tuple(repairs))
