"""Megatron-LM arguments (the ``LINT-MEG-*`` rules), after ``megatron/training/arguments.py`` (validate_args),
``megatron/core/transformer/transformer_config.py``, ``megatron/core/parallel_state.py`` and
``megatron/core/num_microbatches_calculator.py``."""

from __future__ import annotations

import re
from functools import lru_cache


from distdx.yamlio import bundled_yaml
from distdx.lint.models import Hit

# --flag spellings Megatron accepts for the same destination
_ALIASES = {"vpp_stage": "num_layers_per_virtual_pipeline_stage", "tp": "tensor_model_parallel_size",
            "pp": "pipeline_model_parallel_size"}
_MARKERS = ("tensor_model_parallel_size", "pipeline_model_parallel_size", "num_layers", "micro_batch_size",
            "global_batch_size", "num_attention_heads")


def parse_args(words: tuple[str, ...]) -> dict[str, str]:
    """``--name value`` / ``--name=value`` / ``--flag`` words into {dest: value} (flags get "")."""
    out: dict[str, str] = {}
    i = 0
    while i < len(words):
        w = words[i]
        if w.startswith("--") and len(w) > 2:
            key, eq, value = w[2:].partition("=")
            dest = key.replace("-", "_")
            dest = _ALIASES.get(dest, dest)
            if eq:
                out[dest] = value
            elif i + 1 < len(words) and not (words[i + 1].startswith("--") or re.fullmatch(r"-[A-Za-z]", words[i + 1])):
                out[dest] = words[i + 1]
                i += 1
            else:
                out[dest] = ""
        i += 1
    return out


def looks_like_megatron(script: str | None, args: dict[str, str]) -> bool:
    name = (script or "").rsplit("/", 1)[-1]
    return name.startswith("pretrain_") or sum(k in args for k in _MARKERS) >= 2


def _num(args: dict[str, str], key: str, default: int | None = None) -> int | None:
    value = args.get(key)
    if value is None:
        return default
    return int(value) if re.fullmatch(r"\d+", value) else None  # an unexpanded $VAR cannot be checked


# Megatron-DeepSpeed and other forks keep the older arguments: a launch with these is not for Megatron-LM itself
_FORK_MARKERS = ("deepspeed", "deepspeed_config", "zero_stage", "deepspeed_activation_checkpointing", "deepscale")


@lru_cache(maxsize=1)
def removed_arguments() -> dict[str, tuple[str, dict[str, str]]]:
    """``megatron_removed.yaml`` by argparse destination: (how current Megatron-LM refuses it, its entry)."""
    data = bundled_yaml("distdx.lint", "megatron_removed.yaml")
    out = {}
    for section in ("options", "rejected_at_validation"):
        for flag, entry in (data.get(section) or {}).items():
            out[_ALIASES.get(flag.replace("-", "_"), flag.replace("-", "_"))] = (section, entry)
    return out


def _removed(args: dict[str, str], hit) -> None:  # noqa: ANN001
    if any(k in args for k in _FORK_MARKERS):
        return
    table = removed_arguments()
    for dest, value in args.items():
        found = table.get(dest)
        if found is None:
            continue
        section, entry = found
        how = ("its argument parser no longer defines it (\"unrecognized arguments\")" if section == "options"
               else "validate_args() stops on it")
        instead = f"; use {entry['replacement']}" if entry.get("replacement") else ""
        hit("LINT-MEG-015", dest, value, f"current Megatron-LM refuses it: {how}; the last release that took it is "
            f"{entry['last']} (gone in {entry['removed_in']}){instead}")


def check_megatron(args: dict[str, str], world_size: int | None, line: int) -> list[Hit]:
    hits: list[Hit] = []

    def hit(code: str, key: str, value: object, message: str) -> None:
        hits.append(Hit(code, "--" + key.replace("_", "-"), value, message, line))

    _removed(args, hit)

    tp = _num(args, "tensor_model_parallel_size", 1)
    pp = _num(args, "pipeline_model_parallel_size", 1)
    cp = _num(args, "context_parallel_size", 1)
    ep = _num(args, "expert_model_parallel_size", 1)
    etp = _num(args, "expert_tensor_parallel_size", tp)
    layers = _num(args, "num_layers")
    hidden = _num(args, "hidden_size")
    heads = _num(args, "num_attention_heads")
    groups = _num(args, "num_query_groups") if "group_query_attention" in args or "num_query_groups" in args else None
    micro = _num(args, "micro_batch_size")
    glob = _num(args, "global_batch_size")
    seq = _num(args, "seq_length")
    maxpos = _num(args, "max_position_embeddings")
    experts = _num(args, "num_experts")
    vpp_layers = _num(args, "num_layers_per_virtual_pipeline_stage")

    if "fp16" in args and "bf16" in args:
        hit("LINT-MEG-010", "bf16", True, "--fp16 and --bf16 are both given; Megatron allows one")
    if tp == 1 and "sequence_parallel" in args:
        hit("LINT-MEG-007", "sequence_parallel", True,
            "--sequence-parallel with tensor parallel size 1: Megatron disables it")
    if tp and heads and heads % tp:
        hit("LINT-MEG-005", "num_attention_heads", heads,
            f"num_attention_heads ({heads}) must be a multiple of tensor_model_parallel_size ({tp})")
    if tp and groups and groups % tp and tp % groups:
        hit("LINT-MEG-006", "num_query_groups", groups,
            f"num_query_groups ({groups}) must be a multiple of tensor_model_parallel_size ({tp}) "
            "(or, from megatron-core 0.16.0, a divisor of it)")
    elif tp and groups and groups % tp:
        hit("LINT-MEG-014", "num_query_groups", groups,
            f"num_query_groups ({groups}) is smaller than tensor_model_parallel_size ({tp}): megatron-core "
            "accepts that from 0.16.0 on (QKV sub-sharding); earlier releases need a multiple of TP")
    if hidden and heads and "kv_channels" not in args and hidden % heads:
        hit("LINT-MEG-004", "hidden_size", hidden,
            f"hidden_size {hidden} is not divisible by num_attention_heads {heads} (and --kv-channels is not set)")
    if seq and maxpos and maxpos < seq:
        hit("LINT-MEG-009", "seq_length", seq,
            f"max_position_embeddings ({maxpos}) must be greater than or equal to seq_length ({seq})")
    if seq and cp and cp > 1 and seq % (2 * cp):
        hit("LINT-MEG-012", "seq_length", seq,
            f"seq-length {seq} is not a multiple of 2 * context-parallel-size ({2 * cp})")
    uneven = any(k in args for k in ("decoder_first_pipeline_num_layers", "decoder_last_pipeline_num_layers",
                                     "pipeline_model_parallel_layout", "hybrid_layer_pattern"))
    if layers and pp and not uneven:
        counted = layers + ("account_for_embedding_in_pipeline_split" in args) + \
            ("account_for_loss_in_pipeline_split" in args)
        if counted % pp:
            hit("LINT-MEG-002", "num_layers", layers,
                f"{counted} layers are not divisible by pipeline-model-parallel size {pp}")
        elif vpp_layers and (counted // pp) % vpp_layers:
            hit("LINT-MEG-003", "num_layers_per_virtual_pipeline_stage", vpp_layers,
                f"{counted // pp} layers per pipeline stage are not divisible by {vpp_layers} layers per virtual stage")
    if experts and ep and ep > 1 and experts % ep:
        hit("LINT-MEG-011", "expert_model_parallel_size", ep,
            f"num_experts {experts} is not a multiple of expert_model_parallel_size {ep}")
    if None in (tp, pp, cp):
        return hits
    if world_size is None:
        hit("LINT-MEG-013", "tensor_model_parallel_size", tp,
            f"world size unknown: TP {tp} x PP {pp} x CP {cp} and the batch were not checked against the GPU count")
        return hits
    model = tp * pp * cp
    if world_size % model:
        hit("LINT-MEG-001", "tensor_model_parallel_size", tp,
            f"world size {world_size} is not divisible by TP {tp} x PP {pp} x CP {cp} = {model}")
        return hits
    dp = world_size // model
    if ep and etp and pp and ep > 1 and world_size % (etp * ep * pp):
        hit("LINT-MEG-011", "expert_model_parallel_size", ep,
            f"world size {world_size} is not divisible by expert TP {etp} x EP {ep} x PP {pp} = {etp * ep * pp}")
    if micro and glob and "step_batch_size_schedule" not in args and "rampup_batch_size" not in args \
            and glob % (micro * dp):
        hit("LINT-MEG-008", "global_batch_size", glob,
            f"global batch size ({glob}) is not divisible by micro batch size ({micro}) times data parallel size ({dp})")
    return hits
