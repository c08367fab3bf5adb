"""The model's shape, from a Hugging Face ``config.json`` or from a parameter count.

From a config the parameter count is computed layer by layer, the way the Hugging Face modelling
code builds the model, for these families (``model_type``):

- llama, mistral, qwen2, qwen3 (and other llama-style decoders): embedding V*h; per layer
  q (h*a*d), k and v (h*kv*d each), o (a*d*h), gated MLP 3*h*f, two RMSNorms (h each);
  final norm h; an LM head V*h unless ``tie_word_embeddings``. qwen2 adds q/k/v biases,
  ``attention_bias`` adds q/k/v/o biases, ``mlp_bias`` MLP biases, qwen3 per-head q/k norms (d each).
- gpt2: token and position embeddings (V*h + n_positions*h); per layer two LayerNorms (2h each),
  fused qkv h*3h+3h, projection h*h+h, MLP h*f+f and f*h+h (f = n_inner or 4h); final LayerNorm;
  the head is tied.
- gpt_neox: like gpt2 without position embeddings, untied ``embed_out`` unless tied.
- opt: token embeddings V*p (p = word_embed_proj_dim), learned positions (n_positions+2)*h,
  project_in/out p*h when p != h, per layer q/k/v/o with biases, two LayerNorms, fc1/fc2; the
  head is tied by default.

``largest_layer_params`` follows DeepSpeed's ``model_to_params`` (stage3.py): the most parameters
held directly by one module, i.e. the larger of the embedding and the largest linear layer.

From a bare parameter count the dimensions are derived (and listed in ``ModelShape.assumed``):
a GPT-style block of 12*h^2 parameters with h = 128 * layers (the aspect ratio of Llama-2-7B,
4096/32, and of GPT-3 175B, 12288/96), 128-wide heads, an FFN of 4h and a 32000-token vocabulary,
unless the options give them.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Mapping

from distdx import jsonio
from distdx.errors import DistdxError
from distdx.estimate.models import ModelShape, number_text

LLAMA_STYLE = ("llama", "mistral", "qwen2", "qwen3")
MOE = ("mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v3")
FAMILIES = LLAMA_STYLE + MOE + ("gpt2", "gpt_neox", "opt")
MAX_CONFIG_BYTES = 4 * 2**20
ASSUMED_ASPECT = 128  # hidden size per layer
ASSUMED_HEAD_DIM = 128
ASSUMED_VOCAB = 32000


def _read_json(path: Path) -> dict[str, Any]:
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise DistdxError("DX-ESTIMATE-002", f"model config {path} not found",
                          hint="pass the path of a Hugging Face config.json (--model-config PATH)") from None
    except OSError as e:
        raise DistdxError("DX-ESTIMATE-002", f"cannot read model config {path}: {e.strerror or e}",
                          hint="pass a readable config.json") from None
    if path.is_dir():
        candidate = path / "config.json"
        if candidate.is_file():
            return _read_json(candidate)
        raise DistdxError("DX-ESTIMATE-002", f"{path} is a directory without a config.json",
                          hint="pass the config.json of the model, or its directory")
    if size > MAX_CONFIG_BYTES:
        raise DistdxError("DX-ESTIMATE-002", f"model config {path} is {size} bytes",
                          why=f"a config.json is a few kilobytes; this is over {MAX_CONFIG_BYTES // 2**20} MiB "
                              "(the weights, perhaps?)",
                          hint="pass the model's config.json, not a weights file")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise DistdxError("DX-ESTIMATE-002", f"model config {path} is not UTF-8 text",
                          why="config.json is JSON text; this looks binary",
                          hint="pass the model's config.json, not a weights or tokenizer file") from None
    except OSError as e:
        raise DistdxError("DX-ESTIMATE-002", f"cannot read model config {path}: {e.strerror or e}",
                          hint="pass a readable config.json") from None
    try:
        data = jsonio.loads(text)
    except json.JSONDecodeError as e:
        raise DistdxError("DX-ESTIMATE-002", f"model config {path} is not valid JSON: {e.msg} "
                          f"at line {e.lineno}, column {e.colno}",
                          why="config.json must be a JSON object as written by transformers' save_pretrained",
                          hint="fix the JSON at that position, or download the config.json again") from None
    if not isinstance(data, dict):
        raise DistdxError("DX-ESTIMATE-002", f"model config {path} holds a JSON {type(data).__name__}, "
                          "not an object", hint="pass a Hugging Face config.json ({\"model_type\": ..., ...})")
    return data


class _Fields:
    """Reads config fields, remembering which were used and naming the ones missing."""

    def __init__(self, data: Mapping[str, Any], source: str, family: str) -> None:
        self.data, self.source, self.family = data, source, family
        self.used: dict[str, object] = {}

    def int(self, *names: str, default: int | None = None) -> int:
        for name in names:
            value = self.data.get(name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise DistdxError("DX-ESTIMATE-003", f"{self.source}: field {name!r} is {value!r}",
                                  why="it must be a positive integer",
                                  hint=f"fix {name!r} in the config")
            self.used[name] = value
            return value
        if default is not None:
            return default
        raise DistdxError("DX-ESTIMATE-003", f"{self.source}: field {names[0]!r} is missing",
                          why=f"a {self.family} config needs {' or '.join(repr(n) for n in names)} to count "
                              "the parameters",
                          hint="pass the model's full config.json, or give --params and the shape options "
                               "(--layers, --hidden-size, --heads) instead")

    def bool(self, name: str, default: bool) -> bool:
        value = self.data.get(name)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise DistdxError("DX-ESTIMATE-003", f"{self.source}: field {name!r} is {value!r}",
                              why="it must be true or false", hint=f"fix {name!r} in the config")
        self.used[name] = value
        return value


def _llama_style(f: _Fields, family: str) -> tuple[int, dict[str, int], int]:
    h = f.int("hidden_size")
    layers = f.int("num_hidden_layers")
    inter = f.int("intermediate_size")
    vocab = f.int("vocab_size")
    heads = f.int("num_attention_heads")
    kv = f.int("num_key_value_heads", default=heads)
    if "num_key_value_heads" not in f.used:
        f.used["num_key_value_heads"] = f"absent: = num_attention_heads ({heads})"
    head_dim = f.int("head_dim", default=h // heads)
    tied = f.bool("tie_word_embeddings", False)
    attention_bias = f.bool("attention_bias", False)
    mlp_bias = f.bool("mlp_bias", False)
    q, k = h * heads * head_dim, h * kv * head_dim
    attn = q + 2 * k + heads * head_dim * h
    if family == "qwen2":
        attn += heads * head_dim + 2 * kv * head_dim  # q/k/v biases
    if attention_bias:
        attn += heads * head_dim + 2 * kv * head_dim + h
    mlp = 3 * h * inter + ((2 * inter + h) if mlp_bias else 0)
    norms = 2 * h + (2 * head_dim if family == "qwen3" else 0)
    per_layer = attn + mlp + norms
    embed = vocab * h
    total = embed + layers * per_layer + h + (0 if tied else vocab * h)
    largest = max(embed, q, h * inter + (inter if mlp_bias else 0))
    dims = dict(layers=layers, hidden=h, heads=heads, kv_heads=kv, head_dim=head_dim, ffn=inter, vocab=vocab)
    return total, dims, largest


def _moe(f: _Fields, family: str) -> tuple[int, dict[str, int], int]:
    """Mixture-of-experts decoders: the llama-style attention (multi-head latent attention for deepseek_v3) with
    routed experts (gate, up, down: 3*h*e_f each) and a router (experts*h) in the MoE layers, shared experts
    (qwen2_moe: one of shared_expert_intermediate_size with a 1-wide gate; deepseek_v3: n_shared_experts of
    moe_intermediate_size), and dense MLPs (intermediate_size) in the layers that are not MoE (deepseek_v3's
    first first_k_dense_replace, qwen2_moe's mlp_only_layers)."""
    h = f.int("hidden_size")
    layers = f.int("num_hidden_layers")
    vocab = f.int("vocab_size")
    heads = f.int("num_attention_heads")
    top_k = f.int("num_experts_per_tok")
    tied = f.bool("tie_word_embeddings", False)
    dense_layers, shared_ffn, v_dim = 0, 0, None
    if family == "mixtral":
        experts = f.int("num_local_experts")
        expert_ffn = dense_ffn = f.int("intermediate_size")
    elif family == "deepseek_v3":
        experts = f.int("n_routed_experts")
        expert_ffn = f.int("moe_intermediate_size")
        dense_ffn = f.int("intermediate_size")
        shared_ffn = f.int("n_shared_experts", default=0) * expert_ffn if "n_shared_experts" in f.data else 0
        if "first_k_dense_replace" in f.data:
            dense_layers = f.int("first_k_dense_replace")
    else:
        experts = f.int("num_experts", "num_local_experts")  # the hub's qwen3_moe configs; transformers 5 names
        expert_ffn = f.int("moe_intermediate_size")
        dense_ffn = f.int("intermediate_size", default=expert_ffn)
        if family == "qwen2_moe":
            shared_ffn = f.int("shared_expert_intermediate_size")
        only = f.data.get("mlp_only_layers") or []
        if isinstance(only, list):
            dense_layers = len(only)
            f.used["mlp_only_layers"] = only
    if family == "deepseek_v3":
        q_lora = f.int("q_lora_rank")
        kv_lora = f.int("kv_lora_rank")
        nope, rope, v_dim = f.int("qk_nope_head_dim"), f.int("qk_rope_head_dim"), f.int("v_head_dim")
        head_dim, kv = nope + rope, heads
        attn = (h * q_lora + q_lora + q_lora * heads * head_dim + h * (kv_lora + rope) + kv_lora
                + kv_lora * heads * (nope + v_dim) + heads * v_dim * h)
    else:
        kv = f.int("num_key_value_heads", default=heads)
        head_dim = f.int("head_dim", default=h // heads)
        attn = h * heads * head_dim + 2 * h * kv * head_dim + heads * head_dim * h
        if family == "qwen2_moe":
            attn += heads * head_dim + 2 * kv * head_dim
        if family == "qwen3_moe":
            attn += 2 * head_dim
    moe_layers = layers - dense_layers
    expert_params = moe_layers * experts * 3 * h * expert_ffn
    router = experts * h  # deepseek_v3's e_score_correction_bias is a buffer in transformers, not a parameter
    shared = 3 * h * shared_ffn + (h if family == "qwen2_moe" else 0)
    total = (vocab * h + layers * (attn + 2 * h) + h + (0 if tied else vocab * h) + expert_params
             + moe_layers * (router + shared) + dense_layers * 3 * h * dense_ffn)
    # transformers keeps a layer's routed experts in one module (fused gate/up and down weights)
    largest = max(vocab * h, h * heads * head_dim, h * dense_ffn if dense_layers else 0, experts * 3 * h * expert_ffn)
    dims = dict(layers=layers, hidden=h, heads=heads, kv_heads=kv, head_dim=head_dim, ffn=dense_ffn, vocab=vocab,
                experts=experts, experts_per_token=top_k, expert_ffn=expert_ffn, shared_ffn=shared_ffn,
                moe_layers=moe_layers, expert_params=expert_params, v_head_dim=v_dim)
    return total, dims, largest


def _gpt2(f: _Fields) -> tuple[int, dict[str, int], int]:
    h = f.int("n_embd", "hidden_size")
    layers = f.int("n_layer", "num_hidden_layers")
    heads = f.int("n_head", "num_attention_heads")
    vocab = f.int("vocab_size")
    positions = f.int("n_positions", "max_position_embeddings")
    inter = f.int("n_inner", default=4 * h)
    per_layer = 2 * h + (h * 3 * h + 3 * h) + (h * h + h) + 2 * h + (h * inter + inter) + (inter * h + h)
    total = vocab * h + positions * h + layers * per_layer + 2 * h
    largest = max(vocab * h, h * 3 * h + 3 * h, h * inter + inter)
    dims = dict(layers=layers, hidden=h, heads=heads, kv_heads=heads, head_dim=h // heads, ffn=inter, vocab=vocab)
    return total, dims, largest


def _gpt_neox(f: _Fields) -> tuple[int, dict[str, int], int]:
    h = f.int("hidden_size")
    layers = f.int("num_hidden_layers")
    heads = f.int("num_attention_heads")
    inter = f.int("intermediate_size")
    vocab = f.int("vocab_size")
    tied = f.bool("tie_word_embeddings", False)
    per_layer = 4 * h + (h * 3 * h + 3 * h) + (h * h + h) + (h * inter + inter) + (inter * h + h)
    total = vocab * h + layers * per_layer + 2 * h + (0 if tied else vocab * h)
    largest = max(vocab * h, h * 3 * h + 3 * h, h * inter + inter)
    dims = dict(layers=layers, hidden=h, heads=heads, kv_heads=heads, head_dim=h // heads, ffn=inter, vocab=vocab)
    return total, dims, largest


def _opt(f: _Fields) -> tuple[int, dict[str, int], int]:
    h = f.int("hidden_size")
    layers = f.int("num_hidden_layers")
    heads = f.int("num_attention_heads")
    inter = f.int("ffn_dim")
    vocab = f.int("vocab_size")
    positions = f.int("max_position_embeddings")
    proj = f.int("word_embed_proj_dim", default=h)
    tied = f.bool("tie_word_embeddings", True)
    final_norm = f.bool("do_layer_norm_before", True) and not f.bool("_remove_final_layer_norm", False)
    per_layer = 4 * (h * h + h) + 4 * h + (h * inter + inter) + (inter * h + h)
    total = vocab * proj + (positions + 2) * h + layers * per_layer
    total += (2 * proj * h if proj != h else 0) + (2 * h if final_norm else 0) + (0 if tied else vocab * proj)
    largest = max(vocab * proj, h * inter + inter)
    dims = dict(layers=layers, hidden=h, heads=heads, kv_heads=heads, head_dim=h // heads, ffn=inter, vocab=vocab)
    return total, dims, largest


def shape_from_config(path: str | Path) -> ModelShape:
    """Count the parameters of a Hugging Face ``config.json`` (see the module docstring)."""
    path = Path(path)
    data = _read_json(path)
    model_type = data.get("model_type")
    if not isinstance(model_type, str) or not model_type:
        raise DistdxError("DX-ESTIMATE-003", f"{path}: field 'model_type' is missing",
                          why="the family (llama, gpt2, ...) decides how the parameters are counted",
                          hint=f"add \"model_type\" (one of {', '.join(FAMILIES)}) or use --params with "
                               "--layers/--hidden-size/--heads")
    family = model_type.lower()
    if family not in FAMILIES:
        raise DistdxError("DX-ESTIMATE-003", f"{path}: model_type {model_type!r} is not one distdx can count",
                          why=f"distdx counts the parameters of {', '.join(FAMILIES)} configs",
                          hint="give the count yourself: --params N (with --layers, --hidden-size, --heads, "
                               "--vocab-size for the activations)")
    f = _Fields(data, str(path), family)
    f.used["model_type"] = model_type
    if family in LLAMA_STYLE:
        total, dims, largest = _llama_style(f, family)
    elif family in MOE:
        total, dims, largest = _moe(f, family)
    elif family == "gpt2":
        total, dims, largest = _gpt2(f)
    elif family == "gpt_neox":
        total, dims, largest = _gpt_neox(f)
    else:
        total, dims, largest = _opt(f)
    if dims["hidden"] % dims["heads"] and family not in MOE:
        raise DistdxError("DX-ESTIMATE-003", f"{path}: hidden size {dims['hidden']} is not divisible by "
                          f"{dims['heads']} attention heads", why="each head gets hidden/heads dimensions",
                          hint="check the hidden size and number of heads in the config")
    if dims["heads"] % dims["kv_heads"]:
        raise DistdxError("DX-ESTIMATE-003", f"{path}: {dims['heads']} attention heads are not a multiple of "
                          f"{dims['kv_heads']} key/value heads", why="grouped-query attention shares each "
                          "key/value head between a whole number of query heads",
                          hint="check num_key_value_heads in the config")
    return ModelShape(params=total, largest_layer_params=largest, source=str(path), model_type=model_type,
                      fields_used=dict(f.used), **dims)


MAX_DIM = 10**15  # above any real model's parameter count, below float rounding trouble


def shape_from_params(params: int, *, layers: int | None = None, hidden: int | None = None,
                      heads: int | None = None, kv_heads: int | None = None, ffn: int | None = None,
                      vocab: int | None = None, largest_layer_params: int | None = None) -> ModelShape:
    """A shape for a bare parameter count; what is not given is derived and listed in ``assumed``."""
    for flag, value in (("--params", params), ("--layers", layers), ("--hidden-size", hidden), ("--heads", heads),
                        ("--kv-heads", kv_heads), ("--ffn-size", ffn), ("--vocab-size", vocab),
                        ("--largest-layer-params", largest_layer_params)):
        if value is not None and not 1 <= value <= MAX_DIM:
            raise DistdxError("DX-ESTIMATE-003", f"{flag} is {number_text(value)}; it must be a whole number from 1 to "
                              f"{MAX_DIM:,}", why="a model dimension counts something: zero, negative or "
                              "astronomically large sizes describe no model", hint=f"pass the model's real {flag[2:]}")
    assumed: list[str] = []
    if hidden is None and layers is None:
        # 12*L*h^2 = params with h = 128*L  ->  L = (params / (12 * 128^2))^(1/3)
        exact = (params / (12 * ASSUMED_ASPECT**2)) ** (1 / 3)
        # a multiple of 4 layers (when that large) so that common pipeline sizes divide it
        layers = max(4, round(exact / 4) * 4) if exact >= 4 else max(1, round(exact))
        hidden = ASSUMED_ASPECT * layers
        assumed += ["layers", "hidden"]
    elif hidden is None:
        hidden = max(ASSUMED_HEAD_DIM, int(round(math.sqrt(params / (12 * layers)) / 128)) * 128)
        assumed.append("hidden")
    elif layers is None:
        layers = max(1, round(params / (12 * hidden * hidden)))
        assumed.append("layers")
    if heads is None:
        heads = max(1, hidden // ASSUMED_HEAD_DIM)
        assumed.append("heads")
    if hidden % heads:
        raise DistdxError("DX-ESTIMATE-004", f"--hidden-size {hidden} is not divisible by --heads {heads}",
                          why="each attention head gets hidden/heads dimensions",
                          hint="pick a head count that divides the hidden size")
    if kv_heads is None:
        kv_heads = heads
        assumed.append("kv_heads")
    elif heads % kv_heads:
        raise DistdxError("DX-ESTIMATE-004", f"--heads {heads} is not a multiple of --kv-heads {kv_heads}",
                          why="grouped-query attention shares each key/value head between a whole number of "
                              "query heads", hint="pick --kv-heads that divides --heads")
    if ffn is None:
        ffn = 4 * hidden
        assumed.append("ffn")
    if vocab is None:
        vocab = ASSUMED_VOCAB
        assumed.append("vocab")
    if largest_layer_params is None:
        largest_layer_params = min(params, max(vocab * hidden, hidden * ffn))
        assumed.append("largest_layer_params")
    used: dict[str, object] = {"params": params}
    used.update({k: v for k, v in dict(layers=layers, hidden=hidden, heads=heads, kv_heads=kv_heads, ffn=ffn,
                                       vocab=vocab, largest_layer_params=largest_layer_params).items()
                 if k not in assumed})
    return ModelShape(params=params, layers=layers, hidden=hidden, heads=heads, kv_heads=kv_heads,
                      head_dim=hidden // heads, ffn=ffn, vocab=vocab, largest_layer_params=largest_layer_params,
                      source="--params", fields_used=used, assumed=tuple(assumed))
