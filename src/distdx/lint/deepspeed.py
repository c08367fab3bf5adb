"""Checks of a DeepSpeed JSON config (the ``LINT-DS-*`` rules).

The key schema (every section, key, alias, type, bound and choice) is data derived from the installed
DeepSpeed by ``tests/lint/gen_deepspeed_schema.py`` into ``deepspeed_schema.yaml``; the cross-field checks
(batch arithmetic, precision, ZeRO stage versus offload, optimizer and scheduler) are written here after
DeepSpeed's own ``runtime/config.py``, ``runtime/zero/config.py``, ``runtime/precision_config.py`` and
``runtime/engine.py``.
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass
from functools import lru_cache


from distdx.yamlio import bundled_yaml
from distdx.lint.models import Hit
from distdx.lint.source import Parsed

AUTO = "auto"
BATCH_KEYS = ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps")
# deepspeed/runtime/zero/utils.py ZERO_SUPPORTED_OPTIMIZERS (plus MuonWithAuxAdam), by config name
ZERO_SUPPORTED_DS = ("adam", "adamw", "adagrad", "lion", "muon")
ZERO_SUPPORTED_TORCH = ("Adam", "AdamW", "Adagrad")
# choices DeepSpeed checks by hand (runtime/config.py) rather than through a pydantic model
# keys whose only purpose is a note for people ("_comment", "comment", "__doc__", "#"): DeepSpeed
# ignores unknown top-level keys, so in the sections it reads loosely these are harmless by design
_COMMENT_KEY = re.compile(r"^(?:_+.*|#.*|//.*|comments?|notes?|description|doc)$", re.I)
# settings the autotuner (autotuning.enabled) reads as a list of values to try
TUNED_BY_AUTOTUNING = frozenset({"zero_optimization.stage"})
EXTRA_CHOICES = {
    "gradient_allreduce_op": ("mean", "sum"),
    "communication_data_type": ("fp16", "bf16", "fp32"),
    "seq_parallel_communication_data_type": ("fp16", "bf16", "fp32"),
    "checkpoint.tag_validation": ("ignore", "warn", "fail"),
}
_TYPE_WORDS = {"int": "a whole number", "float": "a number", "bool": "true or false", "str": "a string",
               "dict": "an object {...}", "list": "a list [...]"}


@dataclass(frozen=True)
class Schema:
    version: str
    sections: dict
    removed_top_level: dict
    removed_zero: dict
    optimizers: tuple[str, ...]
    torch_optimizers: tuple[str, ...]
    schedulers: tuple[str, ...]

    def known_top_level(self) -> set[str]:
        return set(self.sections[""]["keys"])


NUMERIC_OPTIMIZER_PARAMS = ("lr", "weight_decay", "eps", "momentum")  # compared with numbers by the constructors


@lru_cache(maxsize=1)
def removed_optimizers() -> dict[str, dict[str, str]]:
    """Optimizer types DeepSpeed dropped (``removed.yaml``), by lower-case name."""
    data = bundled_yaml("distdx.lint", "removed.yaml")
    return {str(k): {kk: str(vv) for kk, vv in v.items()} for k, v in data["optimizers"].items()}


def schema() -> Schema:
    data = bundled_yaml("distdx.lint", "deepspeed_schema.yaml")
    return Schema(version=str(data["deepspeed"]), sections=data["sections"],
                  removed_top_level=data["removed_top_level"], removed_zero=data["removed_zero"],
                  optimizers=tuple(data["optimizers"]), torch_optimizers=tuple(data["torch_optimizers"]),
                  schedulers=tuple(data["schedulers"]))


def looks_like_deepspeed(data: object) -> bool:
    """A mapping with at least one key DeepSpeed reads (or a near miss of one) at the top level."""
    if not isinstance(data, dict):
        return False
    known = schema().known_top_level()
    return any(k in known or difflib.get_close_matches(str(k), known, n=1, cutoff=0.8) for k in data)


_LAX_BOOL = {"true": True, "false": False, "yes": True, "no": False, "on": True, "off": False, "1": True, "0": False,
             "t": True, "f": False, "y": True, "n": False}


def _pydantic_lax(value: object, kind: str) -> object:
    """The value pydantic's lax mode makes of ``value`` for a field of ``kind`` (unchanged when it would not)."""
    if kind == "bool" and isinstance(value, str) and value.strip().lower() in _LAX_BOOL:
        return _LAX_BOOL[value.strip().lower()]
    if kind == "bool" and isinstance(value, int) and not isinstance(value, bool) and value in (0, 1):
        return bool(value)
    if kind in ("int", "float") and isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return value
        if kind == "float" or number.is_integer() and "e" not in value.lower() and "." not in value:
            return number if kind == "float" else int(number)
    return value


def _join(path: str, key: object) -> str:
    return f"{path}.{key}" if path else str(key)


def _is_number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


class _Checker:
    def __init__(self, parsed: Parsed, world_size: int | None, hf: bool) -> None:
        self.parsed = parsed
        self.data: dict = parsed.data  # type: ignore[assignment]
        self.world_size = world_size
        self.hf = hf
        self.hits: list[Hit] = []
        self.schema = schema()
        self.unknown_keys = 0

    def hit(self, code: str, path: str, value: object, message: str) -> None:
        line, col = self.parsed.where(path)
        self.hits.append(Hit(code, path, value, message, line, col))

    # -------------------------------------------------------------- keys, types and ranges
    def walk(self, obj: dict, path: str) -> None:
        section = self.schema.sections.get(path)
        if section is None or section.get("open"):
            return
        keys: dict = section["keys"]
        by_alias = {spec["alias"]: name for name, spec in keys.items() if spec.get("alias")}
        candidates = sorted(set(keys) | set(by_alias))
        for key, value in obj.items():
            full = _join(path, key)
            if path == "" and key in self.schema.removed_top_level:
                self.hit("LINT-DS-004", full, value, self.schema.removed_top_level[key])
                continue
            if path == "zero_optimization" and key in self.schema.removed_zero:
                self.hit("LINT-DS-004", full, value, self.schema.removed_zero[key])
                continue
            name = by_alias.get(key, key)
            spec = keys.get(name)
            if spec is None:
                self.unknown(full, key, value, candidates, strict=bool(section.get("strict")), path=path)
                continue
            if isinstance(value, str) and value == AUTO:
                continue  # the "auto" check reports these
            if spec.get("deprecated") is not None:
                new = spec["deprecated"]
                self.hit("LINT-DS-008", full, value, f"`{full}` is deprecated" + (f"; use `{new}`" if new else ""))
            self.value(full, value, spec, lax=bool(section.get("strict")))
            if isinstance(value, dict):
                self.walk(value, _join(path, name))

    def unknown(self, full: str, key: str, value: object, candidates: list[str], strict: bool, path: str) -> None:
        if not strict and _COMMENT_KEY.match(str(key)):
            return  # a note for people ("_comment": "..."): DeepSpeed ignores it, and that is the point
        self.unknown_keys += 1  # past a few hundred it is no config with typos: skip the costly suggestion
        close = difflib.get_close_matches(str(key), candidates, n=1, cutoff=0.75) if self.unknown_keys <= 200 else []
        hint = f"; did you mean `{_join(path, close[0])}`?" if close else ""
        where = f"`{path}`" if path else "the top level"
        if strict:
            self.hit("LINT-DS-001", full, value,
                     f"`{key}` is not a key of {where}; DeepSpeed rejects it (extra inputs are not permitted){hint}")
        elif close:
            self.hit("LINT-DS-002", full, value,
                     f"`{key}` is not a key DeepSpeed reads in {where}, so it is ignored silently{hint}")
        else:
            self.hit("LINT-DS-003", full, value, f"`{key}` is not a key DeepSpeed reads in {where}; it has no effect")

    def value(self, full: str, value: object, spec: dict, lax: bool = False) -> None:
        if value is None:
            return
        kind = spec.get("type", "any")
        if lax:  # pydantic (lax mode) converts these strings itself, so DeepSpeed reads them as meant
            value = _pydantic_lax(value, kind)
        if full == "zero_optimization" and isinstance(value, bool):
            self.hit("LINT-DS-008", full, value, "`zero_optimization: true/false` is the deprecated form; "
                     "use an object such as {\"stage\": 1}")
            return
        if isinstance(value, list) and full in TUNED_BY_AUTOTUNING and self.autotuning() and value and \
                all(not isinstance(v, list) for v in value):
            for v in value:  # the autotuner tries each value of the list: each must be valid on its own
                self.value(full, v, spec, lax)
            return
        ok = {"int": lambda v: _is_number(v) and float(v).is_integer(), "float": _is_number,
              "bool": lambda v: isinstance(v, bool), "str": lambda v: isinstance(v, str),
              "dict": lambda v: isinstance(v, dict), "list": lambda v: isinstance(v, list)}.get(kind)
        if ok is not None and not ok(value):
            self.hit("LINT-DS-005", full, value,
                     f"`{full}` is {value!r} ({type(value).__name__}); DeepSpeed needs {_TYPE_WORDS[kind]}")
            return
        choices = spec.get("choices") or EXTRA_CHOICES.get(full)
        if choices is not None:
            probe = value.lower() if isinstance(value, str) and full in EXTRA_CHOICES else value
            if probe not in choices:
                shown = ", ".join(map(str, choices))
                self.hit("LINT-DS-007", full, value, f"`{full}` is {value!r}; allowed: {shown}")
                return
        if _is_number(value):
            if isinstance(value, float) and not math.isfinite(value):
                self.hit("LINT-DS-006", full, value, f"`{full}` is {value!r}; it must be a finite number")
                return
            for bound, test, words in (("gt", lambda v, b: v > b, "greater than"),
                                       ("ge", lambda v, b: v >= b, "at least"),
                                       ("lt", lambda v, b: v < b, "less than"),
                                       ("le", lambda v, b: v <= b, "at most")):
                if bound in spec and not test(value, spec[bound]):
                    self.hit("LINT-DS-006", full, value, f"`{full}` is {value!r}; it must be {words} {spec[bound]}")
                    return

    def autotuning(self) -> bool:
        section = self.data.get("autotuning")
        return isinstance(section, dict) and section.get("enabled") is True

    # -------------------------------------------------------------- "auto"
    def autos(self, obj: object, path: str) -> None:
        if isinstance(obj, dict):
            for k, v in obj.items():
                self.autos(v, _join(path, k))
        elif isinstance(obj, list):
            for i, v in enumerate(obj):
                self.autos(v, _join(path, i))
        elif obj == AUTO and self.hf is not True:
            top = path.split(".")[0]
            if top in BATCH_KEYS and self.autotuning():
                return  # the autotuner sets the batch sizes of each experiment itself
            effect = ("DeepSpeed fails with TypeError doing arithmetic on it" if top in BATCH_KEYS
                      else "DeepSpeed drops it silently and uses its default" if "." in path
                      else "DeepSpeed does not resolve it")
            if self.hf is False:
                self.hit("LINT-DS-021", path, obj,
                         f"`{path}` is \"auto\", which only the Hugging Face Trainer/Accelerate fill in; {effect}")
            else:
                self.hit("LINT-DS-053", path, obj,
                         f"`{path}` is \"auto\": fine through the Hugging Face Trainer/Accelerate, but given to "
                         f"deepspeed.initialize() directly {effect}; pass --hf or --no-hf to say which")

    # -------------------------------------------------------------- batch arithmetic
    def batch(self) -> None:
        vals: dict[str, int] = {}
        for key in BATCH_KEYS:
            v = self.data.get(key)
            if v is None or v == AUTO:
                continue
            if not (_is_number(v) and float(v).is_integer()):
                self.hit("LINT-DS-005", key, v, f"`{key}` is {v!r} ({type(v).__name__}); DeepSpeed needs a whole number")
                return
            if v <= 0:
                self.hit("LINT-DS-006", key, v, f"`{key}` is {v}; DeepSpeed requires it to be greater than 0")
                return
            vals[key] = int(v)
        if any(self.data.get(k) == AUTO for k in BATCH_KEYS):
            return  # resolved by the Hugging Face integration (or reported as "auto")
        tb, mb, ga = (vals.get(k) for k in BATCH_KEYS)
        if tb is None and mb is None:
            self.hit("LINT-DS-012", "train_batch_size", None, "neither train_batch_size nor "
                     "train_micro_batch_size_per_gpu is set; DeepSpeed needs one of them")
            return
        sp = self.data.get("sequence_parallel_size", 1)
        sp = sp if isinstance(sp, int) and not isinstance(sp, bool) and sp > 0 else 1
        if self.world_size is None:
            self.batch_without_world(tb, mb, ga)
            return
        if self.world_size % sp:
            return
        dp = self.world_size // sp
        dp_words = f"data-parallel size {dp}" + (f" (world size {self.world_size} / sequence_parallel_size {sp})"
                                                  if sp > 1 else "")
        if tb is not None and mb is not None and ga is not None:
            if tb != mb * ga * dp:
                self.hit("LINT-DS-010", "train_batch_size", tb,
                         f"train_batch_size {tb} != micro batch {mb} * gradient_accumulation_steps {ga} * {dp_words}"
                         f" = {mb * ga * dp}")
        elif tb is not None and mb is not None:
            if tb % (mb * dp):
                self.hit("LINT-DS-011", "train_batch_size", tb,
                         f"train_batch_size {tb} is not divisible by micro batch {mb} * {dp_words} = {mb * dp}; "
                         f"DeepSpeed would derive gradient_accumulation_steps = {tb // (mb * dp)}")
        elif tb is not None and ga is not None:
            if tb % (ga * dp):
                self.hit("LINT-DS-011", "train_batch_size", tb,
                         f"train_batch_size {tb} is not divisible by gradient_accumulation_steps {ga} * {dp_words}"
                         f" = {ga * dp}; DeepSpeed would derive a micro batch of {tb // (ga * dp)}")
        elif tb is not None and tb % dp:
            self.hit("LINT-DS-011", "train_batch_size", tb,
                     f"train_batch_size {tb} is not divisible by {dp_words}; DeepSpeed would derive a micro batch "
                     f"of {tb // dp}")

    def batch_without_world(self, tb: int | None, mb: int | None, ga: int | None) -> None:
        if tb is None:
            return
        if mb is not None and ga is not None and tb % (mb * ga):
            self.hit("LINT-DS-010", "train_batch_size", tb,
                     f"train_batch_size {tb} is not a multiple of micro batch {mb} * gradient_accumulation_steps "
                     f"{ga} = {mb * ga}, whatever the number of GPUs")
            return
        for other, name in ((mb, "train_micro_batch_size_per_gpu"), (ga, "gradient_accumulation_steps")):
            if other is not None and tb % other:
                self.hit("LINT-DS-011", "train_batch_size", tb,
                         f"train_batch_size {tb} is not divisible by {name} {other}, whatever the number of GPUs")
                return
        self.hit("LINT-DS-013", "train_batch_size", tb,
                 "world size unknown: checked that the batch values divide, not that train_batch_size = micro * "
                 "accumulation * data-parallel size")

    # -------------------------------------------------------------- precision and loss scale
    @staticmethod
    def _enabled(section: object) -> bool:
        return isinstance(section, dict) and section.get("enabled") is True

    def precision(self) -> None:
        fp16 = self.data.get("fp16")
        bf16 = self.data.get("bf16", self.data.get("bfloat16"))
        if self._enabled(fp16) and self._enabled(bf16):
            self.hit("LINT-DS-020", "bf16.enabled" if "bf16" in self.data else "bfloat16.enabled", True,
                     "fp16.enabled and bf16.enabled are both true; DeepSpeed allows only one")
        if isinstance(fp16, dict):
            self.loss_scale(fp16)
        if isinstance(self.data.get("gradient_clipping"), (int, float)) and not isinstance(
                self.data.get("gradient_clipping"), bool) and self.data["gradient_clipping"] < 0:
            v = self.data["gradient_clipping"]
            self.hit("LINT-DS-051", "gradient_clipping", v,
                     f"gradient_clipping is {v}; DeepSpeed accepts it silently but a max norm must be >= 0")

    def loss_scale(self, fp16: dict) -> None:
        def num(key: str) -> float | None:
            v = fp16.get(key)
            return v if _is_number(v) else None

        ls = num("loss_scale")
        if ls is not None and (ls < 0 or not math.isfinite(ls)):
            self.hit("LINT-DS-050", "fp16.loss_scale", ls, f"fp16.loss_scale is {ls}; use 0 (dynamic) or a "
                     "positive static scale")
            return
        power = num("initial_scale_power")
        if power is not None and not 0 <= power <= 32:
            self.hit("LINT-DS-050", "fp16.initial_scale_power", power,
                     f"fp16.initial_scale_power is {power}: the first scale is 2**{power}; use 0..32 (16 is the default)")
        hyst = num("hysteresis")
        if hyst is not None and hyst < 1:
            self.hit("LINT-DS-050", "fp16.hysteresis", hyst, f"fp16.hysteresis is {hyst}; it counts overflows "
                     "tolerated before the scale drops and must be at least 1")
        if fp16.get("enabled") is True and (ls is None or ls == 0):
            for key in ("loss_scale_window", "min_loss_scale"):
                v = num(key)
                if v is not None and v <= 0:
                    self.hit("LINT-DS-050", f"fp16.{key}", v,
                             f"fp16.{key} is {v}; with dynamic loss scaling DeepSpeed requires it to be > 0")

    # -------------------------------------------------------------- ZeRO and offload
    def zero(self) -> None:
        z = self.data.get("zero_optimization")
        if not isinstance(z, dict):
            stage = 1 if z is True else 0
            z = {}
        else:
            stage = z.get("stage", 0)
        if not isinstance(stage, int) or isinstance(stage, bool):
            return
        op = self.data.get("gradient_allreduce_op")
        if isinstance(op, str) and op.lower() == "sum" and stage == 3:
            self.hit("LINT-DS-036", "gradient_allreduce_op", op,
                     "gradient_allreduce_op 'sum' is not supported with ZeRO stage 3; DeepSpeed raises")
        for sec, key in (("fp16", "fp16_master_weights_and_grads"), ("bf16", "bf16_master_weights_and_grads"),
                         ("bf16", "bf16_optimizer_states")):
            section = self.data.get(sec)
            if isinstance(section, dict) and section.get(key) is True and stage not in (1, 2, 3):
                self.hit("LINT-DS-037", f"{sec}.{key}", True, f"{sec}.{key} needs ZeRO stage 1, 2 or 3 "
                         f"(zero_optimization.stage is {stage})")
        bf16 = self.data.get("bf16")
        if isinstance(bf16, dict) and bf16.get("bf16_optimizer_states") is True and \
                bf16.get("bf16_master_weights_and_grads") is not True and stage in (1, 2, 3):
            self.hit("LINT-DS-037", "bf16.bf16_optimizer_states", True,
                     "bf16.bf16_optimizer_states requires bf16.bf16_master_weights_and_grads to be true")
        if z.get("compute_grad_norm") is False and stage not in (1, 2):
            self.hit("LINT-DS-035", "zero_optimization.compute_grad_norm", False,
                     f"compute_grad_norm=false is supported only with ZeRO stage 1 or 2 (stage is {stage})")
        param, optim = z.get("offload_param"), z.get("offload_optimizer")
        if isinstance(param, dict) and param.get("device", "none") not in ("none", AUTO) and stage != 3:
            self.hit("LINT-DS-030", "zero_optimization.offload_param", param.get("device"),
                     f"offload_param (device {param.get('device')!r}) only works with ZeRO stage 3; under stage "
                     f"{stage} DeepSpeed ignores it and keeps the parameters on the GPU")
        if isinstance(optim, dict) and optim.get("device", "none") not in ("none", AUTO) and stage == 0:
            self.hit("LINT-DS-031", "zero_optimization.offload_optimizer", optim.get("device"),
                     "offload_optimizer needs ZeRO stage 1, 2 or 3; with stage 0 it is ignored")
        for name, block in (("offload_param", param), ("offload_optimizer", optim)):
            if isinstance(block, dict) and block.get("device") == "nvme" and not block.get("nvme_path"):
                self.hit("LINT-DS-032", f"zero_optimization.{name}.nvme_path", None,
                         f"{name} offloads to NVMe but sets no nvme_path; DeepSpeed accepts the config and the missing path surfaces only when the NVMe swapper starts")
        ratio = optim.get("ratio") if isinstance(optim, dict) else None
        if _is_number(ratio) and ratio < 1.0 and stage != 3:
            self.hit("LINT-DS-033", "zero_optimization.offload_optimizer.ratio", ratio,
                     f"offload_optimizer.ratio {ratio} (partial offload) needs ZeRO stage 3; stage is {stage}")
        if stage < 3:
            keys = self.schema.sections["zero_optimization"]["keys"]
            stage3 = {spec["alias"] for spec in keys.values() if str(spec.get("alias", "")).startswith("stage3_")}
            stage3 |= {k for k in keys if k.startswith("stage3_")}
            for key in z:
                if key in stage3:
                    self.hit("LINT-DS-034", f"zero_optimization.{key}", z[key],
                             f"`{key}` acts only in ZeRO stage 3; with stage {stage} it is ignored")

    # -------------------------------------------------------------- optimizer and scheduler
    def optimizer_param_types(self, params: dict) -> None:
        for key in NUMERIC_OPTIMIZER_PARAMS:
            value = params.get(key)
            if key in params and value != AUTO and not _is_number(value):
                self.hit("LINT-DS-054", f"optimizer.params.{key}", value,
                         f"optimizer.params.{key} is {value!r}, not a number: the optimizer's constructor compares it "
                         "with numbers and deepspeed.initialize() stops")
        betas = params.get("betas")
        if "betas" in params and betas != AUTO and not (
                isinstance(betas, list) and len(betas) == 2 and all(_is_number(b) for b in betas)):
            self.hit("LINT-DS-054", "optimizer.params.betas", betas,
                     f"optimizer.params.betas is {betas!r}; Adam-style optimizers take a list of two numbers, e.g. [0.9, 0.999]")

    def optimizer(self) -> None:
        opt = self.data.get("optimizer")
        if isinstance(opt, dict):
            name = opt.get("type")
            params = opt.get("params")
            if isinstance(params, dict):
                self.optimizer_param_types(params)
            if isinstance(params, dict) and "max_grad_norm" in params:
                self.hit("LINT-DS-043", "optimizer.params.max_grad_norm", params["max_grad_norm"],
                         "max_grad_norm is not supported as an optimizer parameter; DeepSpeed raises ValueError")
            if isinstance(name, str) and name != AUTO:
                ds_names = self.schema.optimizers
                gone = removed_optimizers().get(name.lower())
                if gone is not None and name.lower() not in ds_names:
                    self.hit("LINT-DS-004", "optimizer.type", name,
                             f"optimizer type {name!r} ({gone['name']}) was removed in DeepSpeed {gone['removed_in']}; "
                             f"the last release with it is {gone['last']} (pip install 'deepspeed=={gone['last']}'), "
                             "or use Adam/AdamW")
                    return
                if name.lower() not in ds_names and name not in self.schema.torch_optimizers:
                    close = difflib.get_close_matches(name, [*ds_names, *self.schema.torch_optimizers], n=1, cutoff=0.6)
                    self.hit("LINT-DS-040", "optimizer.type", name,
                             f"optimizer type {name!r} is neither a DeepSpeed optimizer nor a torch.optim class"
                             + (f"; did you mean {close[0]!r}?" if close else ""))
                    return
                z = self.data.get("zero_optimization")
                stage = z.get("stage", 0) if isinstance(z, dict) else (1 if z is True else 0)
                supported = name.lower() in ZERO_SUPPORTED_DS if name.lower() in ds_names else name in ZERO_SUPPORTED_TORCH
                if isinstance(stage, int) and stage > 0 and not supported and \
                        self.data.get("zero_allow_untested_optimizer") is not True:
                    self.hit("LINT-DS-041", "optimizer.type", name,
                             f"optimizer {name!r} is not among the optimizers DeepSpeed tests with ZeRO; without "
                             "zero_allow_untested_optimizer: true it stops with an assertion")
        sched = self.data.get("scheduler")
        if isinstance(sched, dict):
            name = sched.get("type")
            if isinstance(name, str) and name != AUTO and name not in self.schema.schedulers:
                close = difflib.get_close_matches(name, self.schema.schedulers, n=1, cutoff=0.6)
                self.hit("LINT-DS-042", "scheduler.type", name,
                         f"scheduler type {name!r} is not one DeepSpeed builds ({', '.join(self.schema.schedulers)})"
                         + (f"; did you mean {close[0]!r}?" if close else ""))


def check_deepspeed(parsed: Parsed, world_size: int | None = None, hf: bool = False) -> list[Hit]:
    """All ``LINT-DS-*`` hits for a parsed DeepSpeed config."""
    if not isinstance(parsed.data, dict):
        return [Hit("LINT-SYN-004", "", type(parsed.data).__name__,
                    f"the top level is {type(parsed.data).__name__}, not an object of settings", 1, 1)]
    c = _Checker(parsed, world_size, hf)
    c.walk(parsed.data, "")
    c.autos(parsed.data, "")
    c.batch()
    c.precision()
    c.zero()
    c.optimizer()
    return c.hits
