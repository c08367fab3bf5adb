"""One fixer per lint code: it reads the finding and the file and returns the edits that repair it, or None
when no repair follows from what the file says (the value must then be chosen by a person).

Whether a rule has a fix, and whether it is safe, is data (``fix_kind`` in ``distdx/lint/rules.yaml``); a
fixer may offer an unsafe fix for a rule marked safe where, for this finding, a value has to be chosen, and
never the other way round (``tests/fix`` checks both).
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

from distdx.fix import edits
from distdx.fix.models import Edit, Fix
from distdx.lint import Finding
from distdx.lint import deepspeed as ds
from distdx.lint import accelerate as acc
from distdx.lint import launch, megatron
from distdx.lint.shell import parse_script
from distdx.lint.source import JsonLayout, Member, json_text_layout, parse_json, parse_yaml, yaml_text_layout


@dataclass
class FileContext:
    """One file as the fixers see it: its text, what kind it is, and the world size lint worked with."""

    name: str
    text: str
    kind: str  # json | yaml | python | shell
    world_size: int | None = None
    gpus_per_node: int | None = None

    @cached_property
    def data(self) -> object:
        return parse_json(self.text).data if self.kind == "json" else parse_yaml(self.text).data \
            if self.kind == "yaml" else None

    @cached_property
    def layout(self) -> JsonLayout:
        return yaml_text_layout(self.text) if self.kind == "yaml" else json_text_layout(self.text)

    # edits of a member in the file's own syntax (JSON or YAML)
    def rename(self, member: Member, key: str) -> Edit:
        return edits.yaml_rename_key(member, key) if self.kind == "yaml" else edits.rename_key(member, key)

    def replace(self, member: Member, value: object) -> Edit:
        return edits.yaml_replace_value(member, value) if self.kind == "yaml" else edits.replace_value(member, value)

    def remove(self, member: Member) -> Edit:
        return (edits.yaml_remove_member if self.kind == "yaml" else edits.remove_member)(self.text, self.layout, member)

    def member(self, path: str) -> Member | None:
        return self.layout.member(path)

    @cached_property
    def script(self):  # noqa: ANN201
        return parse_script(self.text)

    def command_at(self, line: int | None):  # noqa: ANN201
        return next((c for c in self.script.commands if c.line == line), None)

    def megatron_args(self, line: int | None) -> tuple[dict[str, str], int | None]:
        """The Megatron arguments of the command at ``line`` and its world size (as lint computed it)."""
        cmd = self.command_at(line)
        if cmd is None:
            return {}, None
        info = launch.parse_launch(cmd)
        words = info.script_args if info is not None else cmd.argv
        world = self.world_size if self.world_size is not None else info.world_size if info is not None else None
        return megatron.parse_args(tuple(words)), world


@dataclass(frozen=True)
class Proposal:
    """What a fixer returns: one line of why, the edits, and whether this fix chooses a value (unsafe)
    although its rule's fixes are safe."""

    description: str
    edits: tuple[Edit, ...]
    unsafe: bool = False


Fixer = Callable[[FileContext, Finding], "Proposal | None"]
FIXERS: dict[str, Fixer] = {}


def fixer(*codes: str) -> Callable[[Fixer], Fixer]:
    def register(fn: Fixer) -> Fixer:
        for code in codes:
            FIXERS[code] = fn
        return fn
    return register


def _one(description: str, *found: Edit | None, unsafe: bool = False) -> Proposal | None:
    if not found or any(e is None for e in found):
        return None
    return Proposal(description, tuple(found), unsafe)  # type: ignore[arg-type]


def _suggestion(message: str) -> str | None:
    m = re.search(r"did you mean [`']([^`']+)[`']\?", message)
    return m.group(1) if m else None


def _section_spec(path: str) -> dict | None:
    parent, _, key = path.rpartition(".")
    section = ds.schema().sections.get(parent)
    if section is None:
        return None
    keys = section["keys"]
    by_alias = {spec["alias"]: name for name, spec in keys.items() if spec.get("alias")}
    return keys.get(by_alias.get(key, key))


# ------------------------------------------------------------------------------------------------ DeepSpeed JSON
def _remove(ctx: FileContext, path: str, why: str):  # noqa: ANN202
    member = ctx.member(path)
    return _one(why, edits.remove_member(ctx.text, ctx.layout, member) if member else None)


@fixer("LINT-DS-001", "LINT-DS-002")
def rename_or_drop_unknown_key(ctx: FileContext, f: Finding):  # noqa: ANN201
    if ctx.kind != "json" or (member := ctx.member(f.field)) is None:
        return None
    suggestion = _suggestion(f.message)
    if suggestion:
        new_key = suggestion.rpartition(".")[2]
        if ctx.member(suggestion) is not None:
            return None  # the right key is there too: which value is meant is for a person to say
        return _one(f"rename `{f.field}` to `{suggestion}`", edits.rename_key(member, new_key))
    if f.code == "LINT-DS-002":
        return None
    return _one(f"remove `{f.field}`, which DeepSpeed rejects", edits.remove_member(ctx.text, ctx.layout, member))


@fixer("LINT-DS-003", "LINT-DS-030", "LINT-DS-031", "LINT-DS-034")
def drop_ignored_key(ctx: FileContext, f: Finding):  # noqa: ANN201
    if ctx.kind != "json":
        return None
    return _remove(ctx, f.field, f"remove `{f.field}`: DeepSpeed ignores it, so nothing else changes")


@fixer("LINT-DS-004")
def drop_removed_feature(ctx: FileContext, f: Finding):  # noqa: ANN201
    if ctx.kind != "json":
        return None
    if f.field == "optimizer.type" and isinstance(f.value, str) and (member := ctx.member(f.field)):
        new = "Lamb" if "lamb" in f.value.lower() else "Adam"
        return _one(f"optimizer {f.value} is gone from DeepSpeed: use {new}", edits.replace_value(member, new))
    return _remove(ctx, f.field, f"remove `{f.field}`: the feature is gone from DeepSpeed")


_STRICT_BOOL = {"true": True, "false": False}


@fixer("LINT-DS-005", "LINT-DS-054")
def type_from_string(ctx: FileContext, f: Finding):  # noqa: ANN201
    if ctx.kind != "json" or not isinstance(f.value, str) or (member := ctx.member(f.field)) is None:
        return None
    raw = f.value.strip()
    kind = "float" if f.code == "LINT-DS-054" else (_section_spec(f.field) or {}).get("type")
    if f.field in ds.BATCH_KEYS:
        kind = "int"
    new: object
    if kind == "bool" and raw.lower() in _STRICT_BOOL:
        new = _STRICT_BOOL[raw.lower()]
    elif kind == "int" and re.fullmatch(r"[+-]?\d+", raw):
        new = int(raw)
    elif kind == "float" and re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", raw):
        new = float(raw)
    else:
        return None
    written = raw if re.fullmatch(r"-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?", raw) else json.dumps(new)
    return _one(f"`{f.field}` is the string {f.value!r}: write it as the {kind} {written}",
                Edit(member.value_start, member.value_end, written))


@fixer("LINT-DS-006", "LINT-DS-035", "LINT-DS-036", "LINT-DS-037", "LINT-DS-050", "LINT-DS-051", "LINT-DS-033")
def back_to_default(ctx: FileContext, f: Finding):  # noqa: ANN201
    if ctx.kind != "json" or f.field in ds.BATCH_KEYS:
        return None
    return _remove(ctx, f.field, f"remove `{f.field}` so DeepSpeed's default applies")


@fixer("LINT-DS-007")
def nearest_choice(ctx: FileContext, f: Finding):  # noqa: ANN201
    spec = _section_spec(f.field) or {}
    choices = list(spec.get("choices") or ds.EXTRA_CHOICES.get(f.field) or ())
    if ctx.kind != "json" or not choices or (member := ctx.member(f.field)) is None:
        return None
    value = f.value
    new = None
    if isinstance(value, str):
        new = next((c for c in choices if str(c).lower() == value.lower()), None)
        close = difflib.get_close_matches(value.lower(), [str(c) for c in choices], n=1, cutoff=0.6)
        new = new if new is not None else next((c for c in choices if str(c) == close[0]), None) if close else None
    elif ds._is_number(value) and all(ds._is_number(c) for c in choices):
        new = min(choices, key=lambda c: (abs(c - value), -c))
    if new is None:
        return None
    return _one(f"`{f.field}` {value!r} is not allowed: use {new!r}", edits.replace_value(member, new))


@fixer("LINT-DS-008")
def deprecated_key(ctx: FileContext, f: Finding):  # noqa: ANN201
    if ctx.kind != "json" or (member := ctx.member(f.field)) is None:
        return None
    if f.field == "zero_optimization" and isinstance(f.value, bool):
        new = {"stage": 1 if f.value else 0}
        return _one(f"`zero_optimization: {json.dumps(f.value)}` is the old form of {json.dumps(new)}",
                    edits.replace_value(member, new))
    replacement = (_section_spec(f.field) or {}).get("deprecated")
    parent = f.field.rpartition(".")[0]
    if not replacement or "." in str(replacement) or ctx.member(f"{parent}.{replacement}" if parent else replacement):
        return None
    return _one(f"`{f.field}` is deprecated: DeepSpeed reads the same setting as `{replacement}`",
                edits.rename_key(member, str(replacement)))


def _dp(ctx: FileContext) -> int | None:
    if ctx.world_size is None or not isinstance(ctx.data, dict):
        return None
    sp = ctx.data.get("sequence_parallel_size", 1)
    sp = sp if isinstance(sp, int) and not isinstance(sp, bool) and sp > 0 else 1
    return ctx.world_size // sp if ctx.world_size % sp == 0 else None


def _batch(ctx: FileContext) -> tuple[int | None, int | None, int | None]:
    data = ctx.data if isinstance(ctx.data, dict) else {}
    return tuple(v if isinstance(v, int) and not isinstance(v, bool) else None  # type: ignore[return-value]
                 for v in (data.get(k) for k in ds.BATCH_KEYS))


@fixer("LINT-DS-010")
def recompute_train_batch(ctx: FileContext, f: Finding):  # noqa: ANN201
    tb, mb, ga = _batch(ctx)
    dp = _dp(ctx)
    if ctx.kind != "json" or None in (tb, mb, ga, dp) or (member := ctx.member("train_batch_size")) is None:
        return None
    new = mb * ga * dp  # type: ignore[operator]
    return _one(f"train_batch_size = micro {mb} x accumulation {ga} x data-parallel {dp} = {new}",
                edits.replace_value(member, new))


@fixer("LINT-DS-011")
def round_train_batch(ctx: FileContext, f: Finding):  # noqa: ANN201
    tb, mb, ga = _batch(ctx)
    dp = _dp(ctx) or 1
    if ctx.kind != "json" or tb is None or (member := ctx.member("train_batch_size")) is None:
        return None
    step = (mb or 1) * (ga or 1) * dp if mb is None or ga is None else None
    if step is None:
        return None
    new = step * max(1, round(tb / step))
    return _one(f"train_batch_size {tb} -> {new}, the nearest multiple of {step} (micro x accumulation x "
                "data-parallel)", edits.replace_value(member, new))


@fixer("LINT-DS-012")
def add_micro_batch(ctx: FileContext, f: Finding):  # noqa: ANN201
    if ctx.kind != "json":
        return None
    return _one("set train_micro_batch_size_per_gpu to 1; DeepSpeed derives the global batch from it",
                edits.insert_member(ctx.text, ctx.layout, "", "train_micro_batch_size_per_gpu", 1))


@fixer("LINT-DS-020")
def keep_bf16(ctx: FileContext, f: Finding):  # noqa: ANN201
    member = ctx.member("fp16.enabled")
    if ctx.kind != "json" or member is None:
        return None
    return _one("turn fp16 off and keep bf16 (DeepSpeed takes one of them)", edits.replace_value(member, False))


@fixer("LINT-DS-021")
def resolve_auto(ctx: FileContext, f: Finding):  # noqa: ANN201
    if ctx.kind != "json" or (member := ctx.member(f.field)) is None:
        return None
    if "." in f.field:  # DeepSpeed drops a nested "auto" and uses its default: removing it changes nothing
        return _one(f"remove `{f.field}`: DeepSpeed ignores \"auto\" here and uses its default",
                    edits.remove_member(ctx.text, ctx.layout, member))
    data = ctx.data if isinstance(ctx.data, dict) else {}
    if f.field in ("train_micro_batch_size_per_gpu", "gradient_accumulation_steps"):
        return _one(f"`{f.field}`: \"auto\" -> 1 (choose the value the job was tuned for)", edits.replace_value(member, 1),
                    unsafe=True)
    if f.field == "train_batch_size" and "train_micro_batch_size_per_gpu" in data:
        return _one("remove train_batch_size: DeepSpeed derives it from the micro batch and the world size",
                    edits.remove_member(ctx.text, ctx.layout, member), unsafe=True)
    if f.field not in ds.BATCH_KEYS:
        return _one(f"remove `{f.field}`: only the Hugging Face integration fills \"auto\"",
                    edits.remove_member(ctx.text, ctx.layout, member), unsafe=True)
    return None


@fixer("LINT-DS-040", "LINT-DS-042")
def known_type(ctx: FileContext, f: Finding):  # noqa: ANN201
    suggestion = _suggestion(f.message)
    if ctx.kind != "json" or not suggestion or (member := ctx.member(f.field)) is None:
        return None
    return _one(f"type {f.value!r} -> {suggestion!r}", edits.replace_value(member, suggestion))


@fixer("LINT-DS-041")
def allow_untested_optimizer(ctx: FileContext, f: Finding):  # noqa: ANN201
    if ctx.kind != "json":
        return None
    return _one(f"set zero_allow_untested_optimizer: true to run {f.value} under ZeRO",
                edits.insert_member(ctx.text, ctx.layout, "", "zero_allow_untested_optimizer", True))


@fixer("LINT-DS-043")
def max_grad_norm_to_clipping(ctx: FileContext, f: Finding):  # noqa: ANN201
    if ctx.kind != "json" or (member := ctx.member(f.field)) is None:
        return None
    removal = edits.remove_member(ctx.text, ctx.layout, member)
    data = ctx.data if isinstance(ctx.data, dict) else {}
    if "gradient_clipping" in data or not ds._is_number(f.value):
        return _one("remove optimizer.params.max_grad_norm (gradient_clipping is DeepSpeed's setting for it)", removal)
    return _one(f"move max_grad_norm {f.value} to gradient_clipping, where DeepSpeed reads it", removal,
                edits.insert_member(ctx.text, ctx.layout, "", "gradient_clipping", f.value))


@fixer("LINT-SYN-003")
def drop_first_duplicate(ctx: FileContext, f: Finding):  # noqa: ANN201
    if ctx.kind != "json":
        return None
    same = [m for m in ctx.layout.members if m.key_end - m.key_start > 1 and m.path.endswith(str(f.field))
            and json.loads(ctx.text[m.key_start:m.key_end]) == f.field]
    if len(same) < 2 or same[0].parent != same[1].parent:
        return None
    return _one(f"keep the last `{f.field}` (the value json.load uses) and remove the first",
                edits.remove_member(ctx.text, ctx.layout, same[0]))


@fixer("LINT-SYN-004")
def unwrap_single_object(ctx: FileContext, f: Finding):  # noqa: ANN201
    if ctx.kind != "json" or not (isinstance(ctx.data, list) and len(ctx.data) == 1 and isinstance(ctx.data[0], dict)):
        return None
    open_, close = ctx.layout.objects.get("0", (None, None))
    if open_ is None:
        return None
    first, last = ctx.text.index("["), ctx.text.rindex("]")
    return _one("the list holds one object: make that object the config",
                Edit(first, open_, ""), Edit(close + 1, last + 1, ""))


# ------------------------------------------------------------------------------------------------ Megatron
def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _closest(candidates: list[int], current: int) -> int | None:
    below = [c for c in candidates if c <= current]
    return max(below) if below else min(candidates) if candidates else None


def _meg_value(ctx: FileContext, f: Finding, flag: str, value: int, why: str):  # noqa: ANN202
    return _one(why, edits.replace_flag_value(ctx.text, f.line or 0, flag, str(value)))


def _sizes(args: dict[str, str]) -> dict[str, int | None]:
    n = megatron._num
    return {"tp": n(args, "tensor_model_parallel_size", 1), "pp": n(args, "pipeline_model_parallel_size", 1),
            "cp": n(args, "context_parallel_size", 1), "layers": n(args, "num_layers"),
            "heads": n(args, "num_attention_heads"), "groups": n(args, "num_query_groups")}


def _launch_sizes(ctx: FileContext, f: Finding) -> tuple[dict[str, int | None], int | None] | None:
    """The parallel sizes and world size of the launch the finding is on; None outside a shell script or
    when TP, PP or CP is not a number."""
    if ctx.kind != "shell":
        return None
    args, world = ctx.megatron_args(f.line)
    s = _sizes(args)
    return (s, world) if s["tp"] and s["pp"] and s["cp"] else None


@fixer("LINT-MEG-001", "LINT-MEG-002")
def new_pipeline_size(ctx: FileContext, f: Finding):  # noqa: ANN201
    found = _launch_sizes(ctx, f)
    if found is None:
        return None
    s, world = found
    tp, pp, cp, layers = s["tp"], s["pp"], s["cp"], s["layers"]
    if world is not None and world % (tp * cp) == 0:
        options = [p for p in _divisors(world // (tp * cp)) if not layers or layers % p == 0]
    elif world is None and layers:
        options = _divisors(layers)
    else:
        return new_tensor_size(ctx, f)
    new = _closest(options, pp)
    if new is None or new == pp:
        return None
    return _meg_value(ctx, f, "--pipeline-model-parallel-size", new,
                      f"pipeline-model-parallel size {pp} -> {new}: divides the world size"
                      + (f" {world}" if world else "") + (f" / TP {tp}" if tp > 1 else "") + " and the layers")


@fixer("LINT-MEG-005", "LINT-MEG-006")
def new_tensor_size(ctx: FileContext, f: Finding):  # noqa: ANN201
    found = _launch_sizes(ctx, f)
    if found is None:
        return None
    s, world = found
    tp, pp, cp = s["tp"], s["pp"], s["cp"]
    options = [t for t in range(1, tp + 1) if (not s["heads"] or s["heads"] % t == 0)
               and (not s["groups"] or s["groups"] % t == 0) and (world is None or world % (t * pp * cp) == 0)]
    new = _closest(options, tp)
    if new is None or new == tp:
        return None
    return _meg_value(ctx, f, "--tensor-model-parallel-size", new,
                      f"tensor-model-parallel size {tp} -> {new}: divides the attention heads"
                      + (" and query groups" if s["groups"] else "") + (" and the world size" if world else ""))


@fixer("LINT-MEG-003")
def new_virtual_stage(ctx: FileContext, f: Finding):  # noqa: ANN201
    args, _ = ctx.megatron_args(f.line)
    s = _sizes(args)
    vpp = megatron._num(args, "num_layers_per_virtual_pipeline_stage")
    if ctx.kind != "shell" or not (s["layers"] and s["pp"] and vpp):
        return None
    new = _closest(_divisors(s["layers"] // s["pp"]), vpp)
    return _meg_value(ctx, f, "--num-layers-per-virtual-pipeline-stage", new,
                      f"layers per virtual stage {vpp} -> {new}, a divisor of the {s['layers'] // s['pp']} layers per stage")


@fixer("LINT-MEG-007", "LINT-MEG-010")
def drop_megatron_flag(ctx: FileContext, f: Finding):  # noqa: ANN201
    if ctx.kind != "shell":
        return None
    flag, why = (("--sequence-parallel", "drop --sequence-parallel: it does nothing at tensor-parallel size 1")
                 if f.code == "LINT-MEG-007" else ("--fp16", "drop --fp16 and keep --bf16 (Megatron takes one)"))
    return _one(why, edits.remove_flag(ctx.text, f.line or 0, flag, with_value=False))


@fixer("LINT-MEG-008")
def new_global_batch(ctx: FileContext, f: Finding):  # noqa: ANN201
    args, world = ctx.megatron_args(f.line)
    s = _sizes(args)
    micro, glob = megatron._num(args, "micro_batch_size"), megatron._num(args, "global_batch_size")
    if ctx.kind != "shell" or not (micro and glob and world and s["tp"] and s["pp"] and s["cp"]):
        return None
    step = micro * (world // (s["tp"] * s["pp"] * s["cp"]))
    new = step * max(1, round(glob / step))
    return _meg_value(ctx, f, "--global-batch-size", new,
                      f"global batch {glob} -> {new}, the nearest multiple of micro batch x data-parallel size = {step}")


@fixer("LINT-MEG-009")
def positions_cover_sequence(ctx: FileContext, f: Finding):  # noqa: ANN201
    args, _ = ctx.megatron_args(f.line)
    seq = megatron._num(args, "seq_length")
    if ctx.kind != "shell" or not seq:
        return None
    return _meg_value(ctx, f, "--max-position-embeddings", seq, f"max-position-embeddings -> {seq}, the sequence length")


@fixer("LINT-MEG-011")
def new_expert_size(ctx: FileContext, f: Finding):  # noqa: ANN201
    args, world = ctx.megatron_args(f.line)
    s = _sizes(args)
    ep, experts = megatron._num(args, "expert_model_parallel_size", 1), megatron._num(args, "num_experts")
    etp = megatron._num(args, "expert_tensor_parallel_size", s["tp"])
    if ctx.kind != "shell" or not (ep and s["pp"] and etp):
        return None
    options = [e for e in range(1, ep + 1) if (not experts or experts % e == 0)
               and (world is None or world % (etp * e * s["pp"]) == 0)]
    new = _closest(options, ep)
    if new is None or new == ep:
        return None
    return _meg_value(ctx, f, "--expert-model-parallel-size", new,
                      f"expert-model-parallel size {ep} -> {new}: divides the experts and the world size")


@fixer("LINT-MEG-012")
def sequence_for_context_parallel(ctx: FileContext, f: Finding):  # noqa: ANN201
    args, _ = ctx.megatron_args(f.line)
    seq, cp = megatron._num(args, "seq_length"), megatron._num(args, "context_parallel_size", 1)
    if ctx.kind != "shell" or not (seq and cp) or seq < 2 * cp:
        return None
    new = seq - seq % (2 * cp)
    return _meg_value(ctx, f, "--seq-length", new, f"seq-length {seq} -> {new}, a multiple of 2 x context-parallel {cp}")


# ------------------------------------------------------------------------------------------------ launchers
@fixer("LINT-LAUNCH-001")
def include_syntax(ctx: FileContext, f: Finding):  # noqa: ANN201
    if ctx.kind != "shell" or not isinstance(f.value, str):
        return None
    new = re.sub(r"(?<=\d)[;|+ ](?=\d)", ",", f.value)
    if new == f.value or ":" not in new:
        return None
    return _one(f"slots are separated by commas: {new}", edits.replace_flag_value(ctx.text, f.line or 0, f.field, new))


@fixer("LINT-LAUNCH-002")
def drop_exclude(ctx: FileContext, f: Finding):  # noqa: ANN201
    if ctx.kind != "shell":
        return None
    return _one("drop --exclude and keep --include (the launcher takes one)",
                edits.remove_flag(ctx.text, f.line or 0, "--exclude", with_value=True))


@fixer("LINT-LAUNCH-003")
def drop_counts_with_include(ctx: FileContext, f: Finding):  # noqa: ANN201
    if ctx.kind != "shell":
        return None
    return _one(f"drop {f.field}: --include already says which GPUs run",
                edits.remove_flag(ctx.text, f.line or 0, f.field, with_value=True))


@fixer("LINT-LAUNCH-004")
def nproc_to_visible(ctx: FileContext, f: Finding):  # noqa: ANN201
    cmd = ctx.command_at(f.line)
    if ctx.kind != "shell" or cmd is None:
        return None
    devices = {**ctx.script.variables, **cmd.env}.get("CUDA_VISIBLE_DEVICES")
    visible = len([d for d in devices.split(",") if d.strip()]) if devices else ctx.gpus_per_node
    if not visible:
        return None
    return _one(f"{f.field} -> {visible}, the GPUs visible on the node",
                edits.replace_flag_value(ctx.text, f.line or 0, f.field, str(visible)))


@fixer("LINT-LAUNCH-006", "LINT-LAUNCH-007")
def default_master_port(ctx: FileContext, f: Finding):  # noqa: ANN201
    if ctx.kind != "shell":
        return None
    return _one(f"{f.field} -> 29500, the launchers' default unprivileged port",
                edits.replace_flag_value(ctx.text, f.line or 0, f.field, "29500"))


# ------------------------------------------------------------------------------------------------ Colossal-AI
_PRECISION_NAMES = {"float16": "fp16", "half": "fp16", "bfloat16": "bf16", "float32": "fp32", "float": "fp32",
                    "fp16": "fp16", "bf16": "bf16", "fp32": "fp32"}


def _plugin_edit(ctx: FileContext, f: Finding, make):  # noqa: ANN001, ANN202
    plugin, _, arg = f.field.partition(".")
    call = edits.find_call(ctx.text, f.line or 0, plugin) if ctx.kind == "python" else None
    return None if call is None else make(call, arg)


def _kw(call, name: str) -> object:  # noqa: ANN001
    import ast

    for kw in call.keywords:
        if kw.arg == name and isinstance(kw.value, ast.Constant):
            return kw.value.value
    return None


@fixer("LINT-CAI-001")
def plugin_sizes(ctx: FileContext, f: Finding):  # noqa: ANN201
    def make(call, _arg):  # noqa: ANN001, ANN202
        tp, pp, world = _kw(call, "tp_size") or 1, _kw(call, "pp_size") or 1, ctx.world_size
        if not world or not isinstance(tp, int) or not isinstance(pp, int) or world % tp:
            return None
        new = _closest(_divisors(world // tp), pp)
        return _one(f"pp_size {pp} -> {new}: tp_size x pp_size must divide the world size {world}",
                    edits.replace_kwarg(ctx.text, call, "pp_size", new))
    return _plugin_edit(ctx, f, make)


@fixer("LINT-CAI-002", "LINT-CAI-003")
def plugin_zero_stage(ctx: FileContext, f: Finding):  # noqa: ANN201
    stage = 2 if f.code == "LINT-CAI-002" else 1
    return _plugin_edit(ctx, f, lambda call, arg: _one(
        f"zero_stage -> {stage}" + (": the plugin takes 0, 1 or 2" if stage == 2 else " with pipeline parallelism"),
        edits.replace_kwarg(ctx.text, call, "zero_stage", stage)))


@fixer("LINT-CAI-004")
def plugin_microbatches(ctx: FileContext, f: Finding):  # noqa: ANN201
    def make(call, _arg):  # noqa: ANN001, ANN202
        pp = _kw(call, "pp_size")
        if not isinstance(pp, int):
            return None
        return _one(f"num_microbatches={pp}, one per pipeline stage (more hides the pipeline bubble)",
                    edits.add_kwarg(ctx.text, call, "num_microbatches", str(pp)))
    return _plugin_edit(ctx, f, make)


@fixer("LINT-CAI-005", "LINT-CAI-006")
def plugin_precision(ctx: FileContext, f: Finding):  # noqa: ANN201
    if f.code == "LINT-CAI-005":
        new = _PRECISION_NAMES.get(str(f.value).lower())
        if new is None:
            return None
        why = f"precision {f.value!r} is spelled {new!r} by Colossal-AI"
    else:
        new, why = "bf16", "precision 'fp32' -> 'bf16': ZeRO needs fp16 or bf16"
    return _plugin_edit(ctx, f, lambda call, arg: _one(why, edits.replace_kwarg(ctx.text, call, "precision", new)))


@fixer("LINT-CAI-007")
def plugin_sp_size(ctx: FileContext, f: Finding):  # noqa: ANN201
    if "enable_sequence_parallelism is not" not in f.message:
        return None
    return _plugin_edit(ctx, f, lambda call, arg: _one(
        "drop sp_size: sequence parallelism is not enabled", edits.remove_kwarg(ctx.text, call, "sp_size")))


@fixer("LINT-CAI-009")
def plugin_unknown_kwarg(ctx: FileContext, f: Finding):  # noqa: ANN201
    return _plugin_edit(ctx, f, lambda call, arg: _one(
        f"drop {arg}=: the plugin's constructor does not take it", edits.remove_kwarg(ctx.text, call, arg)))


# ------------------------------------------------------------------------------------------------ accelerate
def _acc_member(ctx: FileContext, f: Finding) -> Member | None:
    if ctx.kind not in ("json", "yaml") or not acc.looks_like_accelerate(ctx.data):
        return None
    return ctx.member(f.field)


@fixer("LINT-ACC-001", "LINT-ACC-002")
def accelerate_unknown_key(ctx: FileContext, f: Finding):  # noqa: ANN201
    if (member := _acc_member(ctx, f)) is None:
        return None
    history = acc.history()
    section, _, key = f.field.rpartition(".")
    renamed = history["renamed"].get(f"{section}.{acc.section_key(section, key)}") if section else None
    suggestion = _suggestion(f.message)
    if suggestion and ctx.member(suggestion) is None:  # a misspelling's value takes effect: a behaviour change;
        return _one(f"rename `{f.field}` to `{suggestion}`" + (f" (its name after accelerate {renamed['last']})"
                                                              if renamed else ""),
                    ctx.rename(member, suggestion.rpartition(".")[2]), unsafe=renamed is None)  # a rename's does not
    if suggestion:
        return None  # both spellings are there: which value is meant is for a person to say
    if f.field in history["removed"]:
        return _one(f"remove `{f.field}`: accelerate dropped it after {history['removed'][f.field]['last']}",
                    ctx.remove(member))
    if f.code == "LINT-ACC-001":  # perhaps a newer accelerate's key: dropping its value is a choice
        return _one(f"remove `{f.field}`: accelerate refuses it", ctx.remove(member), unsafe=True)
    return _one(f"remove `{f.field}`: accelerate launch never reads it", ctx.remove(member))


@fixer("LINT-ACC-003")
def accelerate_value(ctx: FileContext, f: Finding):  # noqa: ANN201
    if (member := _acc_member(ctx, f)) is None or not isinstance(ctx.data, dict):
        return None
    new = acc.repair_value(ctx.data, f.field, f.value)
    if new is None:
        return None
    return _one(f"`{f.field}` {f.value!r} -> {new!r}, the value accelerate accepts", ctx.replace(member, new))


@fixer("LINT-ACC-006")
def accelerate_total_processes(ctx: FileContext, f: Finding):  # noqa: ANN201
    data = ctx.data if isinstance(ctx.data, dict) else {}
    procs, machines = data.get("num_processes"), data.get("num_machines")
    if (member := _acc_member(ctx, f)) is None or not (acc._int(procs) and acc._int(machines) and machines > 0):
        return None
    per = procs // machines
    if per == 0:
        return _one(f"num_processes {procs} -> {machines}: one process on each of the {machines} machines",
                    ctx.replace(member, machines), unsafe=True)
    return _one(f"num_processes {procs} -> {per * machines}, the {per} per machine x {machines} machines accelerate "
                "starts", ctx.replace(member, per * machines))


@fixer("LINT-ACC-008", "LINT-ACC-009")
def accelerate_drop_ignored(ctx: FileContext, f: Finding):  # noqa: ANN201
    if (member := _acc_member(ctx, f)) is None:
        return None
    why = ("the DeepSpeed file decides it" if f.code == "LINT-ACC-008"
           else "accelerate turns it off below ZeRO stage 3")
    return _one(f"remove `{f.field}`: {why}", ctx.remove(member))


@fixer("LINT-ACC-010")
def accelerate_fsdp2_option(ctx: FileContext, f: Finding):  # noqa: ANN201
    if (member := _acc_member(ctx, f)) is None or not isinstance(ctx.data, dict):
        return None
    name = acc.section_key("fsdp_config", f.field.rpartition(".")[2])
    new_name = acc.schema()["fsdp2_renamed"].get(name)
    if new_name is None or acc.written_key(ctx.data, "fsdp_config", new_name) is not None:
        return _one(f"remove `{f.field}`: FSDP2 does not read it", ctx.remove(member))
    value = acc.schema()["fsdp2_values"][name].get(str(f.value).upper())
    if not isinstance(value, bool):
        return None
    written = f.field.rpartition(".")[2]  # keep the file's spelling: with or without the fsdp_ prefix
    key = new_name if written.startswith("fsdp_") else new_name[len("fsdp_"):]
    return _one(f"`{f.field}` {f.value} -> {key}: {str(value).lower()} (accelerate to-fsdp2's mapping)",
                ctx.rename(member, key), ctx.replace(member, value), unsafe=not value)


@fixer("LINT-ACC-011")
def accelerate_gpu_ids_string(ctx: FileContext, f: Finding):  # noqa: ANN201
    if (member := _acc_member(ctx, f)) is None or isinstance(f.value, str) or f.value is None:
        return None
    return _one(f"gpu_ids {f.value} -> '{f.value}': accelerate launch reads it as a string",
                ctx.replace(member, str(f.value)))


@fixer("LINT-ACC-012")
def accelerate_sync_module_states(ctx: FileContext, f: Finding):  # noqa: ANN201
    if (member := _acc_member(ctx, f)) is None:
        return None
    return _one("fsdp_sync_module_states -> true: CPU-RAM-efficient loading needs it", ctx.replace(member, True))
