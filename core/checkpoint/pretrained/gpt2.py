"""Convert GPT-2 models in the Hugging Face format (model_type "gpt2": openai-community/gpt2 and its -medium, -large,
-xl sizes, distilbert/distilgpt2).

Reads config.json, model.safetensors and tokenizer.json. Never a pickle. GPT-2 is the paper's decoder without
cross-attention, pre-norm, with learned positions, GELU's tanh form ("gelu_new"), and the output projection tied to
the token embedding. Its linear layers are stored as Conv1D, (in, out): transposed here into nn.Linear's (out, in).
"""
from __future__ import annotations

from pathlib import Path

from core.model.decoder_only_config import DecoderOnlyConfig

from .common import Architecture, Converted, Converter, HFImportError, build_config
from .lm_common import (NEEDED, check_activation, converted, refuse, require_sizes, special_id, take_embeddings,
                        unbuilt, use_causal_buffers)

ACTIVATIONS = {"gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu": "gelu", "relu": "relu",
               "silu": "silu", "swish": "silu"}
SIZES = ("vocab_size", "n_embd", "n_layer", "n_head", "n_positions")
# Flags of GPT2Config: the value GPT-2 has, and why another one is refused.
FLAGS = {"scale_attn_weights": (True, "attention scores not divided by sqrt(d_k) are not built"),
         "scale_attn_by_inverse_layer_idx": (False, "scores divided by the layer's number too are not built"),
         "add_cross_attention": (False, "a GPT-2 with cross-attention is an encoder-decoder's half")}


def refusals(hf: dict) -> list[str]:
    """What this config.json asks that is not built (checked before any weight is downloaded)."""
    problems = unbuilt(hf) + [f"{k}={hf[k]}: {why}" for k, (ok, why) in FLAGS.items() if k in hf and hf[k] != ok]
    check_activation(hf, "activation_function", "gelu_new", ACTIVATIONS, problems)
    return problems


def check(hf: dict) -> None:
    """HFImportError naming everything this config.json asks that is not built."""
    refuse(hf, "GPT-2", refusals(hf))


def gpt2_config(hf: dict) -> DecoderOnlyConfig:
    """Hugging Face's GPT2Config (as a dict) -> our DecoderOnlyConfig, or HFImportError if unsupported."""
    require_sizes(hf, SIZES, "GPT-2 model")
    check(hf)
    d = hf["n_embd"]
    return build_config(
        DecoderOnlyConfig, vocab_size=hf["vocab_size"], N=hf["n_layer"], d_model=d, d_ff=hf.get("n_inner") or 4 * d,
        h=hf["n_head"], max_len=hf["n_positions"], positions="learned", norm="pre",
        layer_norm_eps=hf.get("layer_norm_epsilon", 1e-5),
        activation=ACTIVATIONS[hf.get("activation_function", "gelu_new")], bias=True,
        tie_output=bool(hf.get("tie_word_embeddings", True)), pad_id=special_id(hf, "pad_token_id"),
        eos_id=special_id(hf, "eos_token_id"))


def convert_weights(state: dict, cfg: DecoderOnlyConfig) -> dict:
    """GPT-2's state dict -> ours. openai-community/gpt2 names its tensors without the "transformer." of
    transformers' GPT2LMHeadModel (distilgpt2 and save_pretrained): both are read. Every tensor must be used."""
    prefix = "transformer." if "transformer.wte.weight" in state else ""
    c = Converter(state)
    d = cfg.d_model
    take_embeddings(c, cfg, f"{prefix}wte.weight", "lm_head.weight")
    c.take("pos.table", f"{prefix}wpe.weight")
    for i in range(cfg.N):
        theirs, ours = f"{prefix}h.{i}.", f"layers.{i}."
        for norm, to in (("ln_1", "res_attn.norm"), ("ln_2", "res_ffn.norm")):
            for p in ("weight", "bias"):
                c.take(f"{ours}{to}.{p}", f"{theirs}{norm}.{p}")
        for name in ("attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"):
            c.used.update({f"{theirs}{name}.weight", f"{theirs}{name}.bias"})
            if f"{theirs}{name}.weight" not in state:
                raise HFImportError(f"model.safetensors lacks {theirs}{name}.weight: it does not match config.json.")
        w, b = state[f"{theirs}attn.c_attn.weight"].t(), state[f"{theirs}attn.c_attn.bias"]   # (3d, d), (3d,)
        for j, name in enumerate(("w_q", "w_k", "w_v")):
            c.out[f"{ours}self_attn.{name}.weight"] = w[j * d: (j + 1) * d].contiguous()
            c.out[f"{ours}self_attn.{name}.bias"] = b[j * d: (j + 1) * d]
        for name, to in (("attn.c_proj", "self_attn.w_o"), ("mlp.c_fc", "ffn.w_1"), ("mlp.c_proj", "ffn.w_2")):
            c.out[f"{ours}{to}.weight"] = state[f"{theirs}{name}.weight"].t().contiguous()
            c.out[f"{ours}{to}.bias"] = state[f"{theirs}{name}.bias"]
        use_causal_buffers(c, f"{theirs}attn.bias", f"{theirs}attn.masked_bias")
    for p in ("weight", "bias"):
        c.take(f"norm.{p}", f"{prefix}ln_f.{p}")
    return c.done("GPT-2")


def convert(hf_dir: Path, hf: dict, generation: dict, source: str | None = None, src_lang: str | None = None,
            tgt_lang: str | None = None) -> Converted:
    """A GPT-2 download -> our config, weights and tokenizer."""
    return converted(hf_dir, hf, gpt2_config(hf), convert_weights, "GPT-2", source,
                     ("gpt2", "GPT-2 by OpenAI (Radford et al. 2019), MIT licence"))


ARCH = Architecture("GPT-2", NEEDED, "openai-community/gpt2", convert, check)
