"""Convert GPT-NeoX models in the Hugging Face format (model_type "gpt_neox": EleutherAI/pythia-70m .. pythia-12b, the
Pythia suite's checkpoints over training, gpt-neox-20b).

Reads config.json, model.safetensors and tokenizer.json. Never a pickle. GPT-NeoX is the paper's decoder without
cross-attention, pre-norm with LayerNorm, rotary positions on a share of each head's dimensions (rotary_pct: Pythia's
a quarter), exact GELU, and the parallel residual: x + Attn(LN1(x)) + FFN(LN2(x)). W^Q, W^K and W^V are one fused
matrix, grouped by head ([q, k, v] of head 0, then of head 1, ...); the output projection (embed_out) is its own.
"""
from __future__ import annotations

from pathlib import Path

from core.model.decoder_only_config import DecoderOnlyConfig
from core.model.rotary import inverse_frequencies

from .common import Architecture, Converted, Converter, HFImportError, build_config
from .lm_common import (NEEDED, check_activation, converted, refuse, require_sizes, rope_settings, special_id,
                        take_embeddings, unbuilt, use_causal_buffers, use_rotary_frequencies)

ACTIVATIONS = {"gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "relu": "relu",
               "silu": "silu"}
SIZES = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size")


def refusals(hf: dict) -> list[str]:
    """What this config.json asks that is not built (checked before any weight is downloaded)."""
    problems = unbuilt(hf)
    check_activation(hf, "hidden_act", "gelu", ACTIVATIONS, problems)
    _, scaling, partial = rope_settings(hf, problems)
    if scaling is not None:
        problems.append(f"rope_scaling {scaling['rope_type']!r}: not built for GPT-NeoX")
    if hf.get("hidden_size") and hf.get("num_attention_heads"):
        head = hf["hidden_size"] // hf["num_attention_heads"]
        if int(head * partial) < 2:
            problems.append(f"rotary_pct={partial}: fewer than 2 of each head's {head} dimensions would rotate")
    return problems


def check(hf: dict) -> None:
    """HFImportError naming everything this config.json asks that is not built."""
    refuse(hf, "GPT-NeoX", refusals(hf))


def neox_config(hf: dict) -> DecoderOnlyConfig:
    """Hugging Face's GPTNeoXConfig (as a dict) -> our DecoderOnlyConfig, or HFImportError if unsupported."""
    require_sizes(hf, SIZES, "GPT-NeoX model")
    check(hf)
    theta, _, partial = rope_settings(hf, [])
    d, h = hf["hidden_size"], hf["num_attention_heads"]
    rotary = int(d // h * partial)              # transformers' rotary_ndims: rounded down
    return build_config(
        DecoderOnlyConfig, vocab_size=hf["vocab_size"], N=hf["num_hidden_layers"], d_model=d,
        d_ff=hf["intermediate_size"], h=h, max_len=hf.get("max_position_embeddings", 2048), positions="rotary",
        rope_base=theta, rotary_dim=rotary - rotary % 2, norm="pre", layer_norm_eps=hf.get("layer_norm_eps", 1e-5),
        activation=ACTIVATIONS[hf.get("hidden_act", "gelu")], bias=True,
        qkv_bias=bool(hf.get("attention_bias", True)), out_bias=bool(hf.get("attention_bias", True)),
        parallel_residual=bool(hf.get("use_parallel_residual", True)),
        tie_output=bool(hf.get("tie_word_embeddings", False)), pad_id=special_id(hf, "pad_token_id"),
        eos_id=special_id(hf, "eos_token_id"))


def convert_weights(state: dict, cfg: DecoderOnlyConfig) -> dict:
    """GPTNeoXForCausalLM's state dict -> ours. Every tensor must be used."""
    c = Converter(state)
    take_embeddings(c, cfg, "gpt_neox.embed_in.weight", "embed_out.weight")
    h, d_k = cfg.h, cfg.d_k
    ours_freq = inverse_frequencies(cfg.rotary_dim, cfg.rope_base)
    ps = ("weight", "bias") if cfg.qkv_bias else ("weight",)      # the FFN always has biases
    for i in range(cfg.N):
        theirs, ours = f"gpt_neox.layers.{i}.", f"layers.{i}."
        for norm, to in (("input_layernorm", "res_attn.norm"), ("post_attention_layernorm", "res_ffn.norm")):
            for p in ("weight", "bias"):
                c.take(f"{ours}{to}.{p}", f"{theirs}{norm}.{p}")
        for p in ps:
            key = f"{theirs}attention.query_key_value.{p}"
            if key not in state:
                raise HFImportError(f"model.safetensors lacks {key}: it does not match config.json.")
            c.used.add(key)
            fused = state[key].view(h, 3, d_k, *state[key].shape[1:])          # per head: its q, k, v rows
            for j, name in enumerate(("w_q", "w_k", "w_v")):
                c.out[f"{ours}self_attn.{name}.{p}"] = fused[:, j].reshape(h * d_k, *state[key].shape[1:]).clone()
            c.take(f"{ours}self_attn.w_o.{p}", f"{theirs}attention.dense.{p}")
        for p in ("weight", "bias"):
            for theirs_name, to in (("mlp.dense_h_to_4h", "ffn.w_1"), ("mlp.dense_4h_to_h", "ffn.w_2")):
                c.take(f"{ours}{to}.{p}", f"{theirs}{theirs_name}.{p}")
        use_causal_buffers(c, f"{theirs}attention.bias", f"{theirs}attention.masked_bias")   # older exports'
        use_rotary_frequencies(c, f"{theirs}attention.rotary_emb.inv_freq", ours_freq)
    for p in ("weight", "bias"):
        c.take(f"norm.{p}", f"gpt_neox.final_layer_norm.{p}")
    return c.done("GPT-NeoX")


def convert(hf_dir: Path, hf: dict, generation: dict, source: str | None = None, src_lang: str | None = None,
            tgt_lang: str | None = None) -> Converted:
    """A GPT-NeoX / Pythia download -> our config, weights and tokenizer."""
    return converted(hf_dir, hf, neox_config(hf), convert_weights, "GPT-NeoX", source,
                     ("pythia", "Pythia by EleutherAI (Biderman et al. 2023), Apache 2.0"))


ARCH = Architecture("GPT-NeoX / Pythia", NEEDED, "EleutherAI/pythia-70m", convert, check)
