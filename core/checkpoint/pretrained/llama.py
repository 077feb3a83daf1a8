"""Convert Llama-architecture models in the Hugging Face format: model_type "llama" (meta-llama/Llama-3.2-1B,
HuggingFaceTB/SmolLM2-135M, TinyLlama) and "qwen2" (Qwen/Qwen2.5-0.5B and the other Qwen2 / Qwen2.5 sizes).

Reads config.json, model.safetensors and tokenizer.json. Never a pickle. Both are the paper's decoder without
cross-attention, pre-norm with RMSNorm, rotary positions (rope_theta; Llama 3.1 / 3.2's "llama3" rescaling), a SwiGLU
FFN and grouped-query attention (num_key_value_heads); Qwen2 adds biases to W^Q, W^K and W^V. The output projection
is the token embedding or a matrix of its own (tie_word_embeddings).
"""
from __future__ import annotations

from functools import partial
from pathlib import Path

from core.model.decoder_only_config import DecoderOnlyConfig
from core.model.rotary import inverse_frequencies

from .common import Architecture, Converted, Converter, build_config
from .lm_common import (NEEDED, check_activation, converted, refuse, require_sizes, rope_settings, special_id,
                        take_embeddings, unbuilt, use_rotary_frequencies)

NAMES = {"llama": "Llama", "qwen2": "Qwen2"}
ACTIVATIONS = {"silu": "silu", "swish": "silu", "gelu": "gelu", "gelu_pytorch_tanh": "gelu_tanh"}
SIZES = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size")
LAYER = {"self_attn.w_q": "self_attn.q_proj", "self_attn.w_k": "self_attn.k_proj", "self_attn.w_v": "self_attn.v_proj",
         "self_attn.w_o": "self_attn.o_proj", "ffn.w_1": "mlp.gate_proj", "ffn.w_3": "mlp.up_proj",
         "ffn.w_2": "mlp.down_proj", "res_attn.norm": "input_layernorm", "res_ffn.norm": "post_attention_layernorm"}


def refusals(hf: dict) -> list[str]:
    """What this config.json asks that is not built (checked before any weight is downloaded)."""
    problems = unbuilt(hf)
    check_activation(hf, "hidden_act", "silu", ACTIVATIONS, problems)
    rope_settings(hf, problems)
    return problems


def check(hf: dict) -> None:
    """HFImportError naming everything this config.json asks that is not built."""
    refuse(hf, NAMES.get(hf.get("model_type"), "Llama"), refusals(hf))


def llama_config(hf: dict) -> DecoderOnlyConfig:
    """Hugging Face's LlamaConfig or Qwen2Config (as a dict) -> our DecoderOnlyConfig, or HFImportError."""
    require_sizes(hf, SIZES, "model")
    check(hf)
    theta, scaling, _ = rope_settings(hf, [])
    qwen = hf.get("model_type") == "qwen2"
    d, h = hf["hidden_size"], hf["num_attention_heads"]
    head_dim = hf.get("head_dim") or d // h
    attention_bias = True if qwen else bool(hf.get("attention_bias", False))
    return build_config(
        DecoderOnlyConfig, vocab_size=hf["vocab_size"], N=hf["num_hidden_layers"], d_model=d,
        d_ff=hf["intermediate_size"], h=h, h_kv=hf.get("num_key_value_heads") or h,
        d_kv=None if head_dim * h == d else head_dim, max_len=hf.get("max_position_embeddings", 2048),
        positions="rotary", rope_base=theta, rope_scaling=scaling, norm="pre", rms_norm=True,
        layer_norm_eps=hf.get("rms_norm_eps", 1e-6), activation=ACTIVATIONS[hf.get("hidden_act", "silu")],
        gated_ffn=True, bias=bool(hf.get("mlp_bias", False)), qkv_bias=attention_bias,
        out_bias=False if qwen else attention_bias, tie_output=bool(hf.get("tie_word_embeddings", False)),
        pad_id=special_id(hf, "pad_token_id"), eos_id=special_id(hf, "eos_token_id"))


def convert_weights(state: dict, cfg: DecoderOnlyConfig, what: str) -> dict:
    """LlamaForCausalLM's / Qwen2ForCausalLM's state dict -> ours. Every tensor must be used."""
    c = Converter(state)
    take_embeddings(c, cfg, "model.embed_tokens.weight", "lm_head.weight")
    qkv_bias = cfg.bias if cfg.qkv_bias is None else cfg.qkv_bias
    out_bias = cfg.bias if cfg.out_bias is None else cfg.out_bias
    biased = {"self_attn.w_q": qkv_bias, "self_attn.w_k": qkv_bias, "self_attn.w_v": qkv_bias,
              "self_attn.w_o": out_bias, "ffn.w_1": cfg.bias, "ffn.w_2": cfg.bias, "ffn.w_3": cfg.bias}
    ours_freq = inverse_frequencies(cfg.rotary_dim or cfg.d_k, cfg.rope_base, cfg.rope_scaling)
    for i in range(cfg.N):
        for ours, theirs in LAYER.items():
            c.take(f"layers.{i}.{ours}.weight", f"model.layers.{i}.{theirs}.weight")
            if biased.get(ours):
                c.take(f"layers.{i}.{ours}.bias", f"model.layers.{i}.{theirs}.bias")
        use_rotary_frequencies(c, f"model.layers.{i}.self_attn.rotary_emb.inv_freq", ours_freq)   # older exports'
    c.take("norm.weight", "model.norm.weight")
    return c.done(what)


def convert(hf_dir: Path, hf: dict, generation: dict, source: str | None = None, src_lang: str | None = None,
            tgt_lang: str | None = None) -> Converted:
    """A Llama or Qwen2 download -> our config, weights and tokenizer."""
    what = NAMES[hf["model_type"]]
    return converted(hf_dir, hf, llama_config(hf), partial(convert_weights, what=what), what, source)


ARCH = Architecture("Llama / SmolLM2 / Qwen2", NEEDED, "HuggingFaceTB/SmolLM2-135M", convert, check)
