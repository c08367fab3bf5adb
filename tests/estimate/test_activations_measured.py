"""The activation formula against what autograd really saves: one Hugging Face GPT-2 block on the CPU.

Every tensor the forward pass saves for backward is caught with ``torch.autograd.graph.saved_tensors_hooks``
and counted once per storage, weights excluded. With native GELU and eager attention (the set-up the
Korthikanti et al. formula describes: 16-bit activations, dropout, stored s x s scores) the measurement
lands within a few percent to 15% above s*b*h*(34 + 5*a*s/h); the pieces of Python-composed GELU
(gelu_new) are kept on top of that and are reported, not hidden."""

from __future__ import annotations

import pytest

from distdx.estimate import Setup
from distdx.estimate.formulas import activation_bytes_per_layer
from distdx.estimate.models import ModelShape

torch = pytest.importorskip("torch", reason="measuring saved activations needs torch")
transformers = pytest.importorskip("transformers", reason="the measured block is Hugging Face's GPT2Block")


def saved_bytes(h: int, a: int, s: int, b: int, activation: str) -> int:
    from transformers.models.gpt2.modeling_gpt2 import GPT2Block

    torch.manual_seed(0)
    config = transformers.GPT2Config(n_embd=h, n_head=a, n_positions=s, attn_pdrop=0.1, resid_pdrop=0.1,
                                     activation_function=activation)
    config._attn_implementation = "eager"
    block = GPT2Block(config, layer_idx=0).to(torch.bfloat16).train()
    weights = {p.untyped_storage().data_ptr() for p in block.parameters()}
    seen: dict[int, int] = {}

    def pack(t):  # type: ignore[no-untyped-def]
        storage = t.untyped_storage()
        if storage.data_ptr() not in weights:
            seen[storage.data_ptr()] = storage.nbytes()
        return t

    x = torch.randn(b, s, h, dtype=torch.bfloat16, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        block(x)
    return sum(seen.values())


def formula(h: int, a: int, s: int, b: int, *, kv: int | None = None, f: int | None = None,
            model_type: str | None = None) -> float:
    shape = ModelShape(params=1, layers=1, hidden=h, heads=a, kv_heads=kv or a, head_dim=h // a, ffn=f or 4 * h,
                       vocab=1, largest_layer_params=1, source="test", model_type=model_type)
    per = activation_bytes_per_layer(shape, Setup(seq_len=s, micro_batch=b, attention="eager"))
    return per["stored"] + per["attention_scores"]


@pytest.mark.slow
@pytest.mark.parametrize("h,a,s,b", [(256, 4, 128, 2), (512, 8, 256, 1), (512, 8, 512, 2)])
def test_formula_matches_a_real_block(h: int, a: int, s: int, b: int) -> None:
    measured = saved_bytes(h, a, s, b, "gelu")
    ratio = measured / formula(h, a, s, b)
    # the formula carries activation_factor (terms.yaml) for what unfused kernels keep beyond Korthikanti's count
    assert 0.9 <= ratio <= 1.1, ratio
    # the s^2 term matters: without it the formula would be off by far more at long sequences
    assert measured / (34 * s * b * h) > 1.3


@pytest.mark.slow
def test_python_composed_gelu_keeps_more_than_the_formula() -> None:
    h, a, s, b = 512, 8, 256, 1
    assert saved_bytes(h, a, s, b, "gelu_new") > 1.3 * formula(h, a, s, b)


def llama_saved_bytes(h: int, a: int, kv: int, f: int, s: int, b: int) -> int:
    from transformers.models.llama.modeling_llama import LlamaDecoderLayer, LlamaRotaryEmbedding

    torch.manual_seed(0)
    config = transformers.LlamaConfig(hidden_size=h, num_attention_heads=a, num_key_value_heads=kv,
                                      intermediate_size=f, max_position_embeddings=s)
    config._attn_implementation = "eager"
    layer = LlamaDecoderLayer(config, layer_idx=0).to(torch.bfloat16).train()
    weights = {p.untyped_storage().data_ptr() for p in layer.parameters()}
    seen: dict[int, int] = {}

    def pack(t):  # type: ignore[no-untyped-def]
        storage = t.untyped_storage()
        if storage.data_ptr() not in weights:
            seen[storage.data_ptr()] = storage.nbytes()
        return t

    x = torch.randn(b, s, h, dtype=torch.bfloat16, requires_grad=True)
    positions = torch.arange(s).unsqueeze(0)
    cos_sin = LlamaRotaryEmbedding(config)(x, positions)
    mask = torch.full((s, s), float("-inf")).triu(1)[None, None].to(torch.bfloat16)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        layer(x, attention_mask=mask, position_ids=positions, position_embeddings=cos_sin)
    return sum(seen.values())


@pytest.mark.slow
@pytest.mark.parametrize("h,a,kv,f,s,b", [(512, 8, 8, 1376, 256, 1), (512, 8, 2, 1376, 512, 2)])
def test_llama_layer_matches_the_gated_count(h, a, kv, f, s, b) -> None:
    """SwiGLU (four f-wide tensors) and grouped K/V are counted for llama-style configs: measured 1.11-1.18x; the
    rest is Hugging Face's eager softmax, upcast to fp32, beyond the 5 bytes per score counted (flash attention,
    the default, stores no scores)."""
    ratio = llama_saved_bytes(h, a, kv, f, s, b) / formula(h, a, s, b, kv=kv, f=f, model_type="llama")
    assert 1.0 <= ratio <= 1.25, ratio
