"""Run every check on the inputs and attach the rule data to what the checks report."""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass
from pathlib import Path

from distdx.errors import DistdxError
from distdx.lint import accelerate, colossalai, deepspeed, launch, megatron
from distdx.lint.models import Finding, Hit, LintReport
from distdx.lint.rules import lint_rules
from distdx.lint.shell import bash_syntax_error, parse_script
from distdx.lint.source import Parsed, expand_inputs, parse_json, parse_yaml, read_text

KINDS = ("deepspeed", "megatron", "colossalai", "launch", "accelerate")


@dataclass(frozen=True)
class LintOptions:
    """What lint cannot read from the files themselves."""

    world_size: int | None = None  # --world-size: wins over everything else
    hostfile: str | None = None  # --hostfile: its slots give the world size and the hosts for --include
    # "auto" values: True (--hf) the Hugging Face integration fills them; False (--no-hf) the config
    # goes to deepspeed.initialize() as it is; None: not known, so they are only a warning
    hf: bool | None = None
    gpus_per_node: int | None = None  # --gpus-per-node: visible GPUs for nproc checks


@dataclass(frozen=True)
class Source:
    name: str
    text: str
    kind: str  # json | yaml | python | shell


def _kind_of(name: str, text: str) -> str:
    suffix = Path(name).suffix.lower()
    if suffix in (".json", ".hjson"):
        return "json"
    if suffix in (".yaml", ".yml"):
        return "yaml"
    if suffix == ".py":
        return "python"
    if suffix == "" and text.lstrip().startswith("{"):
        return "json"
    return "shell"


@dataclass
class _Launch:
    source: str
    info: launch.LaunchInfo | None
    megatron_args: dict[str, str] | None
    line: int


class _Run:
    def __init__(self, options: LintOptions) -> None:
        self.options = options
        self.rules = lint_rules()
        self.findings: list[Finding] = []
        self.notes: list[str] = []
        self.hosts: dict[str, int] | None = None
        self.heredocs: list[tuple[Source, Source, int]] = []  # (config written by a script, the script, line)
        self.hostfile_name = ""
        # DeepSpeed configs an accelerate config hands over (deepspeed_config_file), by resolved path: the
        # accelerate config's num_processes (None when it has none). Accelerate fills their "auto" values.
        self.handed_over: dict[str, int | None] = {}
        self.input_names: set[str] = set()
        if options.world_size is not None and options.world_size < 1:
            raise DistdxError("DX-LINT-005", f"--world-size must be at least 1 (got {options.world_size})",
                              hint="pass the total number of GPU processes, e.g. --world-size 16")
        if options.hostfile:
            from distdx.doctor.hostfile import parse_hostfile

            entries = parse_hostfile(read_text(options.hostfile), options.hostfile)
            self.hosts = {e.host: e.slots for e in entries}
            self.hostfile_name = options.hostfile

    def add(self, source: str, hits: list[Hit], line_offset: int = 0) -> None:
        for h in hits:
            rule = self.rules[h.code]
            self.findings.append(Finding(
                code=h.code, severity=rule.severity, file=source, field=h.field, value=_jsonable(h.value),
                message=h.message, why=rule.why, fix=rule.fix, symptom=rule.symptom, root_cause=rule.root_cause,
                fix_pattern=rule.fix_pattern, title=rule.title,
                line=None if h.line is None else h.line + line_offset, column=h.column, fix_kind=rule.fix_kind))

    # ------------------------------------------------------------------ launch scripts and commands
    def shell(self, src: Source) -> list[_Launch]:
        script = parse_script(src.text)
        if script.unreadable:  # only bash's own verdict makes a syntax error; lint never guesses one
            error = bash_syntax_error(src.text)
            if error is not None:
                self.add(src.name, [Hit("LINT-SYN-001", "", None, f"bash -n: {error[1]}", error[0] or script.unreadable[0])])
                return []
        for doc in script.heredocs:  # a DeepSpeed/YAML config the script writes itself (cat <<EOF > ds.json)
            if doc.target and doc.target.lower().endswith((".json", ".yaml", ".yml")) and "$" not in doc.target:
                kind = "json" if doc.target.lower().endswith(".json") else "yaml"
                self.heredocs.append((Source(doc.target, doc.body, kind), src, doc.line))
        launches = []
        for cmd in script.commands:
            env = {**{k: v for k, v in script.variables.items() if k == "CUDA_VISIBLE_DEVICES"}, **cmd.env}
            ctx = launch.LaunchContext(hostfile_entries=self._hostfile_for(cmd, src), env=env,
                                       hostfile_source=self.hostfile_name, visible_gpus=self.options.gpus_per_node)
            info = launch.parse_launch(cmd)
            if info is not None:
                self.add(src.name, launch.check_launch(info, ctx))
                words, script_name = info.script_args, info.script
            else:
                words, script_name = _python_script(cmd.argv)
            margs = megatron.parse_args(words) if words else None
            if margs is not None and not megatron.looks_like_megatron(script_name, margs):
                margs = None
            if info is not None or margs is not None:
                launches.append(_Launch(src.name, info, margs, cmd.line))
        return launches

    def _hostfile_for(self, cmd, src: Source) -> dict[str, int] | None:
        """The hosts of the command's own --hostfile when it can be read next to the script, else --hostfile."""
        words = list(cmd.argv)
        for i, w in enumerate(words):
            path = w.split("=", 1)[1] if w.startswith("--hostfile=") else words[i + 1] if w in ("--hostfile", "-H") \
                and i + 1 < len(words) else None
            if path and "$" not in path:
                from distdx.doctor.hostfile import parse_hostfile

                candidate = Path(path) if os.path.isabs(path) else Path(src.name).parent / path
                if candidate.is_file():
                    self.hostfile_name = str(candidate)
                    return {e.host: e.slots for e in parse_hostfile(read_text(str(candidate)), str(candidate))}
        return self.hosts

    def megatron_checks(self, launches: list[_Launch]) -> None:
        for item in launches:
            if item.megatron_args is None:
                continue
            world = self.options.world_size
            if world is None and item.info is not None:
                world = item.info.world_size
            if world is None and self.hosts:
                world = sum(self.hosts.values())
            self.add(item.source, megatron.check_megatron(item.megatron_args, world, item.line))

    # ------------------------------------------------------------------ world size for configs
    def config_world_size(self, name: str, launches: list[_Launch]) -> tuple[int | None, str]:
        if self.options.world_size is not None:
            return self.options.world_size, "--world-size"
        base = os.path.basename(name)
        for item in launches:
            if item.info is None or item.info.world_size is None:
                continue
            args = item.info.script_args
            if any(os.path.basename(w.split("=")[-1]) == base for w in args):
                world = item.info.world_size
                if item.megatron_args:
                    tp = megatron._num(item.megatron_args, "tensor_model_parallel_size", 1) or 1
                    pp = megatron._num(item.megatron_args, "pipeline_model_parallel_size", 1) or 1
                    if world % (tp * pp) == 0:
                        return world // (tp * pp), f"{item.source}:{item.line} (data-parallel size)"
                return world, f"{item.source}:{item.line}"
        sizes = {i.info.world_size for i in launches if i.info is not None and i.info.world_size}
        if len(sizes) == 1:
            return sizes.pop(), "the launch command"
        if self.hosts:
            return sum(self.hosts.values()), f"hostfile {self.hostfile_name}"
        return None, ""

    # ------------------------------------------------------------------ configs
    def config(self, src: Source, launches: list[_Launch], written_by: tuple[Source, int] | None = None) -> None:
        """Check one config file, or (``written_by``) one a launch script writes with a here-document:
        its findings then point at the script's lines."""
        report, offset = (written_by[0].name, written_by[1] - 1) if written_by else (src.name, 0)
        self.add(report, self._config_hits(src, launches), offset)

    def _config_hits(self, src: Source, launches: list[_Launch]) -> list[Hit]:
        parsed = parse_json(src.text) if src.kind == "json" else parse_yaml(src.text)
        hits = list(parsed.hits)
        if parsed.data is None and parsed.hits:
            return hits
        if accelerate.looks_like_accelerate(parsed.data):
            return hits + accelerate.check_accelerate(parsed) + self.handed_over_config(src, parsed)
        if src.kind == "yaml" and isinstance(parsed.data, dict) and megatron.looks_like_megatron(
                None, {str(k): "" for k in parsed.data}) and not any(
                k in parsed.data for k in (*deepspeed.BATCH_KEYS, "zero_optimization")):
            return hits + self.megatron_yaml(src, parsed, launches)
        if src.kind == "json" or deepspeed.looks_like_deepspeed(parsed.data):
            if not deepspeed.looks_like_deepspeed(parsed.data) and isinstance(parsed.data, dict):
                self.notes.append(f"{src.name}: no DeepSpeed key at the top level; checked as a DeepSpeed config anyway")
            world, _ = self.config_world_size(src.name, launches)
            hf = self.options.hf
            if _resolved(src.name) in self.handed_over:
                world = world if self.options.world_size is not None else self.handed_over[_resolved(src.name)] or world
                hf = True if hf is None else hf
            return hits + deepspeed.check_deepspeed(parsed, world, hf)
        self.notes.append(f"{src.name}: neither a DeepSpeed config nor Megatron arguments; only its syntax was checked")
        return hits

    def note_handed_over(self, src: Source) -> None:
        """Remember the DeepSpeed config an accelerate config among the inputs hands over."""
        if src.kind not in ("json", "yaml") or "deepspeed_config_file" not in src.text:
            return
        parsed = parse_json(src.text) if src.kind == "json" else parse_yaml(src.text)
        path = accelerate.deepspeed_config_file(parsed.data)
        if path is not None and accelerate.looks_like_accelerate(parsed.data):
            self.handed_over[_resolved(path, src.name)] = accelerate.num_processes(parsed.data)

    def handed_over_config(self, src: Source, parsed: Parsed) -> list[Hit]:
        """Accelerate's own check of the DeepSpeed file it hands over (it must have zero_optimization); the file is
        linted with the DeepSpeed rules when it is among the inputs, or found next to the accelerate config."""
        path = accelerate.deepspeed_config_file(parsed.data)
        if path is None or parsed.data.get("distributed_type") != "DEEPSPEED":  # type: ignore[union-attr]
            return []
        resolved = _resolved(path, src.name)
        if not os.path.isfile(resolved):
            self.notes.append(f"{src.name}: deepspeed_config_file {path} not found next to it; lint it on its own")
            return []
        try:
            text = read_text(resolved)
        except DistdxError as e:  # not one of the inputs: its problem is a note, not the end of the run
            self.notes.append(f"{src.name}: deepspeed_config_file {path} cannot be read ({e.message})")
            return []
        kind = "yaml" if resolved.lower().endswith((".yaml", ".yml")) else "json"
        ds = parse_json(text) if kind == "json" else parse_yaml(text)
        hits = []
        if isinstance(ds.data, dict) and "zero_optimization" not in ds.data:  # dataclasses.py:1276
            field = "deepspeed_config.deepspeed_config_file"
            hits.append(Hit("LINT-ACC-013", field, path, f"{path} has no zero_optimization section: accelerate stops "
                            "(\"Please specify the ZeRO optimization config in the DeepSpeed config\")", *parsed.where(field)))
        if resolved not in self.input_names:  # linted once, however many accelerate configs name it
            self.input_names.add(resolved)
            self.handed_over[resolved] = accelerate.num_processes(parsed.data)
            self.config(Source(resolved, text, kind), [])
        return hits

    def megatron_yaml(self, src: Source, parsed: Parsed, launches: list[_Launch]) -> list[Hit]:
        data: dict = parsed.data  # type: ignore[assignment]
        args = {}
        for k, v in data.items():
            if v is None or v is False:
                continue
            args[str(k)] = "" if v is True else str(v)
        world, _ = self.config_world_size(src.name, launches)
        hits = megatron.check_megatron(args, world, 0)
        return [Hit(h.code, h.field.lstrip("-").replace("-", "_"), h.value, h.message,
                    *parsed.where(h.field.lstrip("-").replace("-", "_"))) for h in hits]

    def python(self, src: Source, launches: list[_Launch]) -> None:
        try:
            tree = ast.parse(src.text, filename=src.name)
        except SyntaxError as e:
            self.add(src.name, [Hit("LINT-SYN-001", "", None, f"Python does not parse: {e.msg}", e.lineno, e.offset)])
            return
        calls = colossalai.find_plugins(tree)
        if not calls:
            self.notes.append(f"{src.name}: no Colossal-AI plugin found; only its syntax was checked")
            return
        world, _ = self.config_world_size(src.name, launches)
        for call in calls:
            self.add(src.name, colossalai.check_plugin(call, world))


def _resolved(path: str, relative_to: str = "") -> str:
    """``path`` as an absolute path: a relative one is taken from the folder of ``relative_to`` (the accelerate
    config that names it), as a config and the DeepSpeed file it names are usually kept side by side."""
    base = os.path.dirname(os.path.abspath(relative_to)) if relative_to else os.getcwd()
    return os.path.normpath(os.path.join(base, os.path.expanduser(path)))


def _python_script(argv: tuple[str, ...]) -> tuple[tuple[str, ...], str | None]:
    """For `python script.py args...`: (args, script)."""
    if argv and os.path.basename(argv[0]).startswith("python"):
        for i, w in enumerate(argv[1:], start=1):
            if w.endswith(".py"):
                return argv[i + 1:], w
            if not w.startswith("-"):
                break
    return (), None


def _jsonable(value: object) -> object:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return str(value)


def lint_sources(sources: list[Source], options: LintOptions = LintOptions()) -> LintReport:
    run = _Run(options)
    run.input_names = {_resolved(s.name) for s in sources if s.kind in ("json", "yaml")}
    for src in sources:
        run.note_handed_over(src)
    launches: list[_Launch] = []
    for src in sources:
        if src.kind == "shell":
            launches.extend(run.shell(src))
    run.megatron_checks(launches)
    for src in sources:
        if src.kind in ("json", "yaml"):
            run.config(src, launches)
        elif src.kind == "python":
            run.python(src, launches)
    for config, script, line in run.heredocs:
        run.config(config, launches, written_by=(script, line))
    world, origin = run.config_world_size("", launches) if options.world_size is None else (options.world_size, "--world-size")
    order = {"error": 0, "warning": 1, "info": 2}
    names = [s.name for s in sources]
    names += sorted({f.file for f in run.findings} - set(names))  # DeepSpeed files accelerate configs hand over
    deprecated = {code for code, rule in run.rules.items() if rule.status == "deprecated"}  # kept, never reported
    findings = sorted((f for f in run.findings if f.code not in deprecated), key=lambda f: (names.index(f.file), f.line or 0, f.column or 0, order[f.severity], f.code))
    return LintReport(files=tuple(names), findings=tuple(findings), world_size=world, world_size_source=origin,
                      notes=tuple(run.notes))


def lint(paths: list[str] | tuple[str, ...] = (), command: str | None = None,
         options: LintOptions = LintOptions()) -> LintReport:
    """Lint config files, launch scripts and (optionally) one launch command given as text."""
    if not paths and not command:
        raise DistdxError("DX-LINT-006", "nothing to lint", hint="pass config files or launch scripts, "
                          "or a launch command with --command \"torchrun ...\"")
    sources = []
    for path in expand_inputs(paths):
        text = read_text(path)
        sources.append(Source(path, text, _kind_of(path, text)))
    if command:
        sources.append(Source("<command>", command, "shell"))
    return lint_sources(sources, options)


def lint_text(text: str, name: str, options: LintOptions = LintOptions()) -> LintReport:
    """Lint one input given as text; ``name``'s suffix says what it is (.json, .yaml, .py, else shell)."""
    return lint_sources([Source(name, text, _kind_of(name, text))], options)
