"""Parameter counts from config.json: published counts, Hugging Face's own models, and bad configs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from distdx.errors import DistdxError
from distdx.estimate import shape_from_config, shape_from_params

CONFIGS = Path(__file__).parent / "configs"

# Parameter counts published with the models (model cards, the Pythia paper's table 1).
PUBLISHED = {
    "llama-2-7b.json": 6_738_415_616,
    "mistral-7b.json": 7_241_732_096,
    "gpt2.json": 124_439_808,
    "pythia-160m.json": 162_322_944,
    "opt-125m.json": 125_239_296,
}


@pytest.mark.parametrize("name,count", sorted(PUBLISHED.items()))
def test_published_parameter_counts(name: str, count: int) -> None:
    shape = shape_from_config(CONFIGS / name)
    assert shape.params == count
    assert shape.fields_used["model_type"]
    assert not shape.assumed


def test_fields_used_are_named() -> None:
    shape = shape_from_config(CONFIGS / "mistral-7b.json")
    for key in ("hidden_size", "num_hidden_layers", "intermediate_size", "vocab_size", "num_attention_heads",
                "num_key_value_heads", "tie_word_embeddings"):
        assert key in shape.fields_used
    assert (shape.kv_heads, shape.head_dim) == (8, 128)
    assert "rope_theta" not in shape.fields_used


def test_directory_with_config_json(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text((CONFIGS / "gpt2.json").read_text())
    assert shape_from_config(tmp_path).params == 124_439_808


def test_missing_kv_heads_defaults_to_heads_and_says_so(tmp_path: Path) -> None:
    data = json.loads((CONFIGS / "llama-2-7b.json").read_text())
    del data["num_key_value_heads"]
    (tmp_path / "c.json").write_text(json.dumps(data))
    shape = shape_from_config(tmp_path / "c.json")
    assert shape.params == 6_738_415_616
    assert "absent" in str(shape.fields_used["num_key_value_heads"])


TINY = {
    "llama": dict(hidden_size=64, intermediate_size=160, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, vocab_size=1000),
    "llama-biases-tied": dict(hidden_size=64, intermediate_size=160, num_hidden_layers=2, num_attention_heads=4,
                              num_key_value_heads=2, vocab_size=50, attention_bias=True, mlp_bias=True,
                              tie_word_embeddings=True),
    "mistral": dict(hidden_size=64, intermediate_size=160, num_hidden_layers=2, num_attention_heads=4,
                    num_key_value_heads=1, vocab_size=1000, head_dim=32),
    "qwen2": dict(hidden_size=64, intermediate_size=160, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, vocab_size=1000, tie_word_embeddings=True),
    "qwen3": dict(hidden_size=64, intermediate_size=160, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, vocab_size=1000, head_dim=32),
    "gpt2": dict(n_embd=64, n_layer=2, n_head=4, n_positions=128, vocab_size=1000, bos_token_id=0, eos_token_id=0),
    "gpt2-n_inner": dict(n_embd=64, n_layer=2, n_head=4, n_positions=128, vocab_size=10, n_inner=500,
                         bos_token_id=0, eos_token_id=0),
    "gpt_neox": dict(hidden_size=64, intermediate_size=160, num_hidden_layers=2, num_attention_heads=4,
                     vocab_size=1000),
    "gpt_neox-tied": dict(hidden_size=64, intermediate_size=160, num_hidden_layers=2, num_attention_heads=4,
                          vocab_size=1000, tie_word_embeddings=True),
    "opt-proj": dict(hidden_size=64, ffn_dim=160, num_hidden_layers=2, num_attention_heads=4, vocab_size=1000,
                     max_position_embeddings=128, word_embed_proj_dim=32),
    "opt-post-norm": dict(hidden_size=64, ffn_dim=160, num_hidden_layers=2, num_attention_heads=4, vocab_size=1000,
                          max_position_embeddings=128, do_layer_norm_before=False),
    "mixtral": dict(hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                    num_key_value_heads=2, vocab_size=1000, num_local_experts=4, num_experts_per_tok=2),
    "qwen2_moe": dict(hidden_size=64, intermediate_size=160, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, vocab_size=1000, num_experts=4, num_experts_per_tok=2,
                      moe_intermediate_size=48, shared_expert_intermediate_size=96),
    "qwen3_moe": dict(hidden_size=64, intermediate_size=160, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, head_dim=32, vocab_size=1000, num_local_experts=4, num_experts_per_tok=2,
                      moe_intermediate_size=48),
    "deepseek_v3": dict(hidden_size=64, intermediate_size=160, moe_intermediate_size=48, num_hidden_layers=3,
                        num_attention_heads=4, num_key_value_heads=4, vocab_size=1000, n_routed_experts=4,
                        n_shared_experts=1, num_experts_per_tok=2, first_k_dense_replace=1, q_lora_rank=32,
                        kv_lora_rank=16, qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16, n_group=1,
                        topk_group=1),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(TINY))
def test_counts_equal_hugging_face_models(case: str, tmp_path: Path) -> None:
    """Build the real model class (on the meta device) and count its parameters and DeepSpeed's
    largest layer (deepspeed's model_to_params: most parameters held directly by one module)."""
    transformers = pytest.importorskip("transformers", reason="the cross-check builds Hugging Face models")
    torch = pytest.importorskip("torch", reason="building Hugging Face models needs torch")
    config = transformers.AutoConfig.for_model(case.split("-")[0], **TINY[case])
    config.save_pretrained(tmp_path)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    total = sum(p.numel() for p in model.parameters())
    largest = max(sum(p.numel() for p in m.parameters(recurse=False)) for m in model.modules())
    shape = shape_from_config(tmp_path / "config.json")
    assert (shape.params, shape.largest_layer_params) == (total, largest)


def _write(tmp_path: Path, content: str | bytes) -> Path:
    path = tmp_path / "config.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


@pytest.mark.parametrize("content,code,words", [
    ('{"model_type": "llama", "hidden_size": 4096,', "DX-ESTIMATE-002", "not valid JSON"),
    (b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe", "DX-ESTIMATE-002", "not UTF-8"),
    ("[1, 2, 3]", "DX-ESTIMATE-002", "JSON list"),
    ('{"hidden_size": 4096}', "DX-ESTIMATE-003", "model_type"),
    ('{"model_type": "t5", "d_model": 512}', "DX-ESTIMATE-003", "not one distdx can count"),
    ('{"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, "intermediate_size": 11008,'
     ' "num_attention_heads": 32}', "DX-ESTIMATE-003", "'vocab_size' is missing"),
    ('{"model_type": "llama", "hidden_size": "4096", "num_hidden_layers": 32}', "DX-ESTIMATE-003", "'hidden_size'"),
    ('{"model_type": "gpt2", "n_embd": 768, "n_layer": -1}', "DX-ESTIMATE-003", "positive integer"),
    ('{"model_type": "gpt_neox", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,'
     ' "intermediate_size": 10, "vocab_size": 10, "tie_word_embeddings": "yes"}', "DX-ESTIMATE-003", "true or false"),
    ('{"model_type": "llama", "hidden_size": 100, "num_hidden_layers": 2, "intermediate_size": 10,'
     ' "num_attention_heads": 3, "vocab_size": 10}', "DX-ESTIMATE-003", "not divisible"),
    ('{"model_type": "llama", "hidden_size": 96, "num_hidden_layers": 2, "intermediate_size": 10,'
     ' "num_attention_heads": 6, "num_key_value_heads": 4, "vocab_size": 10}', "DX-ESTIMATE-003", "key/value"),
])
def test_bad_configs(tmp_path: Path, content, code: str, words: str) -> None:
    with pytest.raises(DistdxError) as info:
        shape_from_config(_write(tmp_path, content))
    assert info.value.code == code
    assert words in info.value.render()
    assert info.value.hint


def test_missing_file_directory_and_huge_file(tmp_path: Path) -> None:
    with pytest.raises(DistdxError, match="not found"):
        shape_from_config(tmp_path / "nope.json")
    with pytest.raises(DistdxError, match="directory without a config.json"):
        shape_from_config(tmp_path)
    big = tmp_path / "model.safetensors"
    big.write_bytes(b"\0" * (5 * 2**20))
    with pytest.raises(DistdxError, match="over 4 MiB"):
        shape_from_config(big)


def test_shape_from_params_derives_a_llama_like_shape() -> None:
    shape = shape_from_params(7_000_000_000)
    assert (shape.layers, shape.hidden, shape.heads, shape.head_dim) == (32, 4096, 32, 128)
    assert set(shape.assumed) >= {"layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "largest_layer_params"}
    given = shape_from_params(7_000_000_000, layers=32, hidden=4096, heads=32, kv_heads=8, ffn=11008, vocab=32000,
                              largest_layer_params=131_072_000)
    assert given.assumed == ()
    assert given.fields_used["kv_heads"] == 8
    only_layers = shape_from_params(7_000_000_000, layers=32)
    assert only_layers.hidden == 4224 and "hidden" in only_layers.assumed  # sqrt(7e9/(12*32)) rounded to 128
    only_hidden = shape_from_params(7_000_000_000, hidden=4096)
    assert only_hidden.layers == 35 and "layers" in only_hidden.assumed  # 7e9 / (12 * 4096^2)


@pytest.mark.parametrize("kwargs,words", [(dict(hidden=100, heads=3), "not divisible"),
                                          (dict(hidden=128, heads=4, kv_heads=3), "multiple of --kv-heads")])
def test_shape_from_params_rejects_impossible_shapes(kwargs, words) -> None:
    with pytest.raises(DistdxError, match=words) as info:
        shape_from_params(1_000_000, layers=2, **kwargs)
    assert info.value.code == "DX-ESTIMATE-004"


@pytest.mark.parametrize("field", ["layers", "hidden", "heads", "kv_heads", "ffn", "vocab"])
@pytest.mark.parametrize("value", [0, -1, 10**40])
def test_zero_negative_and_absurd_dimensions_are_bad_input(field: str, value: int) -> None:
    with pytest.raises(DistdxError) as e:
        shape_from_params(7 * 10**9, **{field: value})
    assert e.value.code == "DX-ESTIMATE-003" and "whole number from 1" in e.value.message
    assert len(e.value.message) < 200  # a 40-digit number is described, not printed


def test_a_config_nested_past_the_recursion_limit_is_bad_input(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text('{"a":' * 50_000 + "1" + "}" * 50_000)
    with pytest.raises(DistdxError) as e:
        shape_from_config(path)
    assert e.value.code == "DX-ESTIMATE-002" and "nested too deeply" in e.value.message
