"""Colossal-AI booster plugin settings in a Python launch script (the ``LINT-CAI-*`` rules), after
``colossalai/booster/plugin/hybrid_parallel_plugin.py``, ``low_level_zero_plugin.py`` and ``gemini_plugin.py``.

The script is parsed with :mod:`ast`, never run. Plugin arguments given as literals, or as names bound to
literals at module level, are checked; arguments computed at run time (``args.tp``) are skipped.
"""

from __future__ import annotations

import ast
import difflib
from dataclasses import dataclass
from functools import lru_cache


from distdx.yamlio import bundled_yaml
from distdx.lint.models import Hit

_HYBRID = ("HybridParallelPlugin", "MoeHybridParallelPlugin")
_PRECISIONS = {"HybridParallelPlugin": ("fp16", "bf16", "fp32"), "MoeHybridParallelPlugin": ("fp16", "bf16", "fp32"),
               "LowLevelZeroPlugin": ("fp16", "bf16", "fp32"), "GeminiPlugin": ("fp16", "bf16")}
_UNKNOWN = object()


@lru_cache(maxsize=1)
def plugin_signatures() -> dict[str, dict]:
    """``colossalai_plugins.yaml``: per plugin class, the keyword arguments its constructor takes and the
    ones older releases took (``removed``: last release, replacement)."""
    data = bundled_yaml("distdx.lint", "colossalai_plugins.yaml")
    return data["plugins"]


@dataclass(frozen=True)
class PluginCall:
    name: str
    kwargs: dict[str, object]  # values, or _UNKNOWN when computed at run time
    line: int
    column: int


def _callee(node: ast.Call) -> str:
    f = node.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def find_plugins(tree: ast.Module) -> list[PluginCall]:
    constants: dict[str, object] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            try:
                constants[stmt.targets[0].id] = ast.literal_eval(stmt.value)
            except (ValueError, SyntaxError, TypeError):
                constants.pop(stmt.targets[0].id, None)

    def value(node: ast.AST) -> object:
        if isinstance(node, ast.Name) and node.id in constants:
            return constants[node.id]
        try:
            return ast.literal_eval(node)
        except (ValueError, SyntaxError, TypeError):
            return _UNKNOWN

    calls = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _callee(node) in plugin_signatures():
            name = _callee(node)
            kwargs = {kw.arg: value(kw.value) for kw in node.keywords if kw.arg}
            if any(kw.arg is None for kw in node.keywords):
                continue  # **kwargs: the settings are not in the source
            positional = ("tp_size", "pp_size") if name in _HYBRID else ()
            for key, arg in zip(positional, node.args):
                kwargs[key] = value(arg)
            calls.append(PluginCall(name, kwargs, node.lineno, node.col_offset + 1))
    return sorted(calls, key=lambda c: (c.line, c.column))


def _int(v: object) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def check_plugin(call: PluginCall, world_size: int | None) -> list[Hit]:
    hits: list[Hit] = []
    kw = call.kwargs

    def hit(code: str, key: str, value: object, message: str) -> None:
        hits.append(Hit(code, f"{call.name}.{key}", value, message, call.line, call.column))

    signature = plugin_signatures()[call.name]
    for key in kw:
        if key in signature["kwargs"]:
            continue
        gone = (signature.get("removed") or {}).get(key)
        if gone:
            instead = f"; use {gone['replacement']!r}" if gone.get("replacement") else ""
            hit("LINT-CAI-009", key, kw[key], f"{call.name}() no longer takes {key!r}: Colossal-AI {gone['last']} "
                f"was the last release that did{instead}")
        else:
            close = difflib.get_close_matches(key, signature["kwargs"], n=1, cutoff=0.7)
            hit("LINT-CAI-009", key, kw[key], f"{call.name}() takes no keyword argument {key!r}"
                + (f"; did you mean {close[0]!r}?" if close else ""))
    if call.name not in _PRECISIONS:
        return hits
    precision = kw.get("precision", "fp16")
    if isinstance(precision, str) and precision not in _PRECISIONS[call.name]:
        hit("LINT-CAI-005", "precision", precision,
            f"{call.name} precision {precision!r} is not one of {', '.join(_PRECISIONS[call.name])}")
    if call.name == "LowLevelZeroPlugin":
        stage = _int(kw.get("stage", 1))
        if stage is not None and stage not in (1, 2):
            hit("LINT-CAI-002", "stage", stage, f"LowLevelZeroPlugin only supports stage 1/2 (got {stage})")
        return hits
    if call.name not in _HYBRID:
        return hits
    tp, pp = _int(kw.get("tp_size")), _int(kw.get("pp_size"))
    zero = _int(kw.get("zero_stage", 0))
    if zero is not None and zero not in (0, 1, 2):
        hit("LINT-CAI-002", "zero_stage", zero, f"{call.name} accepts zero_stage 0, 1 or 2 (got {zero})")
    if pp is not None and pp > 1:
        if zero is not None and zero > 1:
            hit("LINT-CAI-003", "zero_stage", zero,
                f"zero_stage {zero} with pp_size {pp}: zero stage must be 0 or 1 when using pipeline parallelism")
        if kw.get("num_microbatches") is None and kw.get("microbatch_size") is None:
            hit("LINT-CAI-004", "pp_size", pp,
                "pp_size > 1 but neither num_microbatches nor microbatch_size is given")
    if zero and precision == "fp32":
        hit("LINT-CAI-006", "precision", precision, f"zero_stage {zero} with precision 'fp32': "
            "Colossal-AI asserts 'Please set precision to fp16 or bf16 when using ZeRO'")
    sp_on = kw.get("enable_sequence_parallelism", False)
    sp_size = kw.get("sp_size")
    if sp_on is False and sp_size not in (None, 1, _UNKNOWN):
        hit("LINT-CAI-007", "sp_size", sp_size, "sp_size is set but enable_sequence_parallelism is not")
    mode = kw.get("sequence_parallelism_mode")
    if sp_on is True and mode in ("split_gather", "ring") and tp == 1:
        hit("LINT-CAI-007", "sequence_parallelism_mode", mode, f"sequence parallelism mode {mode!r} needs tp_size > 1")
    if tp is None or pp is None:
        return hits
    if world_size is None:
        hit("LINT-CAI-008", "tp_size", tp, f"world size unknown: tp_size {tp} x pp_size {pp} was not checked")
    elif world_size % (tp * pp):
        hit("LINT-CAI-001", "tp_size", tp,
            f"world size {world_size} is not divisible by tp_size {tp} * pp_size {pp}")
    return hits
