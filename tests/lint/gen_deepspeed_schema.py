"""Derive distdx's DeepSpeed key schema from the installed deepspeed, as YAML on stdout.

Run: ``python tests/lint/gen_deepspeed_schema.py > src/distdx/lint/deepspeed_schema.yaml``.
``tests/lint/test_schema.py`` runs it again and fails when the shipped file is stale.

Two sources, both deepspeed's own code:
- the sections DeepSpeed parses with pydantic models (``zero_optimization``, ``fp16``, ``bf16``, monitors,
  ``comms_logger``, ...) are read from the models' fields: name, aliases, type, bounds, choices;
- every other key is found by running ``DeepSpeedConfig`` on dictionaries that record which keys DeepSpeed
  reads (and the default it passes to ``get``), level by level.
"""

from __future__ import annotations

import enum
import os
import sys
import types
import typing

import yaml

_SINK: set[tuple[str, str, object]] = set()


class _Keys:
    def __init__(self, owner: "_RecDict") -> None:
        self.owner = owner

    def __contains__(self, key: object) -> bool:
        return self.owner.__contains__(key)

    def __iter__(self):
        return iter(dict.keys(self.owner))

    def __len__(self) -> int:
        return dict.__len__(self.owner)


class _RecDict(dict):
    """A dict that records every key DeepSpeed asks it for."""

    path = ""

    def _note(self, key: object, default: object = None) -> None:
        if isinstance(key, str):
            _SINK.add((self.path, key, type(default).__name__ if default is not None else "NoneType"))

    def get(self, key, default=None):
        self._note(key, default)
        return dict.get(self, key, default)

    def __getitem__(self, key):
        self._note(key)
        return dict.__getitem__(self, key)

    def __contains__(self, key):
        self._note(key)
        return dict.__contains__(self, key)

    def keys(self):
        return _Keys(self)


def _rec(path: str, content: dict | None = None) -> _RecDict:
    d = _RecDict(content or {})
    d.path = path
    return d


def _type_name(ann: object) -> str:
    origin = typing.get_origin(ann)
    if origin in (typing.Union, types.UnionType):
        names = sorted({_type_name(a) for a in typing.get_args(ann) if a is not type(None)})
        return names[0] if len(names) == 1 else "any"
    if origin is typing.Literal:
        return "str"
    if origin in (list, tuple, typing.List, typing.Tuple):  # noqa: UP006
        return "list"
    if origin in (dict, typing.Dict):  # noqa: UP006
        return "dict"
    if isinstance(ann, type):
        if issubclass(ann, bool):
            return "bool"
        if issubclass(ann, enum.Enum):
            return "int" if issubclass(ann, int) else "str"
        if issubclass(ann, int):
            return "int"
        if issubclass(ann, float):
            return "float"
        if issubclass(ann, str) or ann.__name__ == "Path":
            return "str"
        if issubclass(ann, (list, tuple)):
            return "list"
        if issubclass(ann, dict):
            return "dict"
    return "any"


def _choices(ann: object) -> list | None:
    for a in (ann, *typing.get_args(ann)):
        if typing.get_origin(a) is typing.Literal:
            return list(typing.get_args(a))
        if isinstance(a, type) and issubclass(a, enum.Enum):
            return [m.value for m in a]
    return None


def _model_of(ann: object):
    from pydantic import BaseModel

    for a in (ann, *typing.get_args(ann)):
        if isinstance(a, type) and issubclass(a, BaseModel):
            return a
    return None


def _walk_model(model, path: str, out: dict) -> None:
    from annotated_types import Ge, Gt, Le, Lt

    section = out.setdefault(path, {"strict": True, "keys": {}})
    section["strict"] = model.model_config.get("extra") == "forbid"
    for name, field in model.model_fields.items():
        spec: dict = {}
        ann = field.annotation
        sub = _model_of(ann)
        if sub is not None:
            spec["type"] = "dict"
            _walk_model(sub, f"{path}.{name}" if path else name, out)
        else:
            spec["type"] = _type_name(ann)
            choices = _choices(ann)
            if choices:
                spec["choices"] = choices
        for meta in field.metadata:
            for cls, key in ((Ge, "ge"), (Gt, "gt"), (Le, "le"), (Lt, "lt")):
                if isinstance(meta, cls):
                    spec[key] = getattr(meta, key)
        extra = field.json_schema_extra or {}
        if isinstance(extra, dict) and extra.get("deprecated"):
            spec["deprecated"] = str(extra.get("new_param") or "")
        if field.alias and field.alias != name:
            spec["alias"] = field.alias
        section["keys"][name] = spec


def _pydantic_sections() -> dict[str, object]:
    from deepspeed.comm.config import CommsLoggerConfig
    from deepspeed.compile.config import CompileConfig
    from deepspeed.inference.config import WeightQuantConfig
    from deepspeed.monitor.config import CometConfig, CSVConfig, TensorBoardConfig, WandbConfig
    from deepspeed.runtime.config import HybridEngineConfig
    from deepspeed.runtime.precision_config import DeepSpeedBF16Config, DeepSpeedFP16Config
    from deepspeed.runtime.tensor_parallel.config import TPTrainingConfig
    from deepspeed.runtime.zero.config import DeepSpeedZeroConfig
    from deepspeed.utils.config import DeepSpeedThroughputTimerConfig

    return {
        "zero_optimization": DeepSpeedZeroConfig, "fp16": DeepSpeedFP16Config, "bf16": DeepSpeedBF16Config,
        "bfloat16": DeepSpeedBF16Config, "comms_logger": CommsLoggerConfig, "tensorboard": TensorBoardConfig,
        "wandb": WandbConfig, "csv_monitor": CSVConfig, "comet": CometConfig, "hybrid_engine": HybridEngineConfig,
        "compile": CompileConfig, "timers.throughput": DeepSpeedThroughputTimerConfig,
        "tensor_parallel": TPTrainingConfig, "weight_quantization": WeightQuantConfig,
    }


def _run(config: dict) -> None:
    from deepspeed.runtime.config import DeepSpeedConfig

    try:
        DeepSpeedConfig(config)
    except Exception:  # noqa: BLE001 - we only want the keys it asked for before failing
        pass


def _nest(path: str, leaf: dict) -> _RecDict:
    """A recording config in which ``path`` (dotted) holds ``leaf``."""
    parts = path.split(".")
    node = leaf
    for i in range(len(parts) - 1, -1, -1):
        node = _rec(".".join(parts[:i]), {parts[i]: node})
    return node


def _traced_keys(skip: set[str]) -> dict[str, dict[str, str]]:
    """{section path: {key: type of the default DeepSpeed passes}} for the sections read by hand."""
    found: dict[str, dict[str, str]] = {}
    _SINK.clear()
    _run(_rec("", {"train_batch_size": 1}))
    todo = [""]
    seen: set[str] = set()
    while todo or _SINK:
        for path, key, default in sorted(_SINK):
            full = f"{path}.{key}" if path else key
            if full in skip or key in ("type", "params") and path in ("optimizer", "scheduler"):
                found.setdefault(path, {}).setdefault(key, default)
                continue
            found.setdefault(path, {})
            if default != "NoneType" or key not in found[path]:
                found[path][key] = default
            if full not in seen and default in ("dict", "NoneType") and full.count(".") < 3:
                todo.append(full)
            seen.add(full)
        _SINK.clear()
        if not todo:
            break
        path = todo.pop()
        if path:
            _run(_nest(path, _rec(path)))
            _run(_nest(path, _rec(path, {"enabled": True})))  # some keys are read only when enabled
    return {p: k for p, k in found.items() if p not in skip}


OPEN_SECTIONS = ("optimizer.params", "scheduler.params", "pipeline", "expert_parallel", "data_efficiency",
                 "autotuning.model_info", "datastates_ckpt")

_PY_TYPES = {"int": "int", "float": "float", "bool": "bool", "str": "str", "list": "list", "dict": "dict"}


def build() -> dict:
    import deepspeed
    import torch
    from deepspeed.runtime import config as ds_config
    from deepspeed.runtime import lr_schedules

    os.environ.setdefault("DS_ACCELERATOR", "cpu")
    sections: dict[str, dict] = {}
    models = _pydantic_sections()
    for path, model in models.items():
        _walk_model(model, path, sections)
    traced = _traced_keys(set(models))
    for path, keys in traced.items():
        section = sections.setdefault(path, {"strict": False, "keys": {}})
        for key, default in keys.items():
            full = f"{path}.{key}" if path else key
            if key in section["keys"]:
                continue
            kind = "dict" if full in sections or full in traced else _PY_TYPES.get(default, "any")
            section["keys"][key] = {"type": kind}
    for path in models:  # the owning section knows each pydantic section as a dict key
        parent, _, key = path.rpartition(".")
        sections.setdefault(parent, {"strict": False, "keys": {}})["keys"].setdefault(key, {"type": "dict"})
    # Keys read outside DeepSpeedConfig's parse: runtime/config.py reads it from the raw dict.
    sections[""]["keys"].setdefault("sequence_parallel_size", {"type": "int"})
    # Free-form blocks: any key is passed through to a constructor or read only in special modes.
    for free in OPEN_SECTIONS:
        sections.setdefault(free, {"strict": False, "keys": {}})["open"] = True
        parent, _, key = free.rpartition(".")
        sections[parent]["keys"].setdefault(key, {"type": "dict"})
    for path in list(sections):
        if any(path.startswith(f + ".") for f in OPEN_SECTIONS):
            del sections[path]
    return {
        "version": 1,
        "deepspeed": deepspeed.__version__,
        "removed_top_level": dict(sorted(ds_config._REMOVED_TOP_LEVEL_CONFIG_KEYS.items())),
        "removed_zero": dict(sorted(ds_config._REMOVED_ZERO_CONFIG_KEYS.items())),
        "optimizers": list(ds_config.DEEPSPEED_OPTIMIZERS),
        "schedulers": list(lr_schedules.VALID_LR_SCHEDULES),
        # an optimizer type DeepSpeed does not know is looked up with getattr(torch.optim, type)
        "torch_optimizers": sorted(n for n, c in vars(torch.optim).items()
                                   if isinstance(c, type) and issubclass(c, torch.optim.Optimizer)
                                   and c is not torch.optim.Optimizer),
        "sections": {p: sections[p] for p in sorted(sections)},
    }


def main() -> int:
    import logging

    logging.disable(logging.WARNING)
    data = build()
    sys.stdout.write("# Generated by tests/lint/gen_deepspeed_schema.py from the installed deepspeed; do not edit.\n")
    sys.stdout.write(yaml.safe_dump(data, sort_keys=False, width=120))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
