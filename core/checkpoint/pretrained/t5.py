"""Convert T5, T5 v1.1, mT5 and Flan-T5 models (Hugging Face's model_type "t5" or "mt5", T5ForConditionalGeneration).

T5 (Raffel et al. 2020) is the paper's encoder-decoder with options that each are a TransformerConfig flag: no
positions added to the embeddings but a learned bias per head and relative distance on the attention scores
(positions="relative", core/model/position_bias.py), no 1/sqrt(d_k) (scale_scores=False), pre-norm layers with RMSNorm
and a norm after each stack (norm="pre", rms_norm), linear layers without biases (bias=False), unscaled embeddings, and
<pad> as the decoder's start. The original T5 has a ReLU FFN and a tied output scaled by d_model^-0.5; T5 v1.1, mT5
and Flan-T5 a gated GELU FFN (gated_ffn, activation="gelu_tanh") and an output projection of their own. Their
tokenizer is spiece.model (SentencePiece ids are the model's ids) with 100 <extra_id_N> sentinels after its pieces.
A task prompt ("translate English to German: ") tells the model what to do: it is put before every source sentence
(cfg.src_prompt_ids), and the app marks it as the prompt in every map.
"""
from __future__ import annotations

from pathlib import Path

import langcodes

from core.model.config import TransformerConfig
from core.tokenizer import Tokenizer

from .common import (Architecture, Converted, Converter, HFImportError, build_config, guess_source,
                     read_sentencepiece, read_weights)

NEEDED = ("config.json", "spiece.model")
DEFAULT_LANGS = ("en", "de")                          # the project's direction
SIZES = ("vocab_size", "d_model", "d_kv", "d_ff", "num_layers", "num_heads")
CREDIT = {"t5": "T5 by Google (Raffel et al. 2020, 'Exploring the Limits of Transfer Learning with a Unified "
                "Text-to-Text Transformer'), Apache 2.0",
          "flan": "Flan-T5 by Google (Chung et al. 2022, 'Scaling Instruction-Finetuned Language Models'), Apache 2.0",
          "mt5": "mT5 by Google (Xue et al. 2021, 'mT5: A Massively Multilingual Pre-trained Text-to-Text "
                 "Transformer'), Apache 2.0"}


def language(tag: str) -> tuple[str, str]:
    """('de', 'German') from a code or an English name ('de', 'German', 'deu'), or HFImportError."""
    try:
        lang = langcodes.Language.get(tag) if len(tag) <= 3 else langcodes.find(tag)
    except (ValueError, LookupError):
        lang = None
    if lang is None or not lang.is_valid() or not lang.language:
        raise HFImportError(f"'{tag}' is not a language T5's prompt can name: give a code (en, de, fr, ro) or an "
                            "English name (German).")
    return lang.language, lang.display_name()


def prompt(src_lang: str | None, tgt_lang: str | None) -> tuple[str, dict]:
    """T5's task prompt for a direction and the card's languages: ('translate English to German: ', {...})."""
    (src_code, src_name), (tgt_code, tgt_name) = (language(src_lang or DEFAULT_LANGS[0]),
                                                  language(tgt_lang or DEFAULT_LANGS[1]))
    return f"translate {src_name} to {tgt_name}: ", {"source": src_code, "target": tgt_code}


def load_tokenizer(hf_dir: Path, vocab_size: int) -> Tokenizer:
    """spiece.model, its ids as the model's, then <extra_id_99> .. <extra_id_0> and fillers up to vocab_size."""
    proto, sp = read_sentencepiece(hf_dir / "spiece.model")
    n = sp.get_piece_size()
    vocab = {sp.id_to_piece(i): i for i in range(n)}
    extra = 100 if vocab_size - n >= 100 else 0          # T5's 100 sentinels, <extra_id_0> last; else none named
    vocab.update({f"<extra_id_{extra - 1 - i}>": n + i for i in range(extra)})
    vocab.update({f"<unused_{i}>": i for i in range(len(vocab), vocab_size)})      # the model's rows beyond them
    if len(vocab) != vocab_size or sorted(vocab.values()) != list(range(vocab_size)):
        raise HFImportError(f"spiece.model has {n} pieces, more than config.json's vocab_size ({vocab_size}), or "
                            "pieces twice: they do not belong together.")
    return Tokenizer(proto, proto, vocab)


def flavour(hf: dict, source: str) -> str:
    """"t5" (the original), "flan" or "mt5", for the card's credit: by model_type and the model's name."""
    name = f"{source} {hf.get('_name_or_path', '')}".lower()
    return "mt5" if hf.get("model_type") == "mt5" or "mt5" in name else "flan" if "flan" in name else "t5"


def t5_config(hf: dict, prompt_ids: list) -> TransformerConfig:
    """Hugging Face's T5Config (as a dict) -> our TransformerConfig, or HFImportError for what ours cannot be."""
    missing = [k for k in SIZES if hf.get(k) is None]
    if missing:
        raise HFImportError(f"config.json lacks {', '.join(missing)}: it does not describe a whole T5 model.")
    ffn = str(hf.get("feed_forward_proj", "relu"))
    if ffn not in ("relu", "gated-gelu"):
        raise HFImportError(f"This T5 model's FFN is '{ffn}': the explorer reads 'relu' (T5) and 'gated-gelu' (T5 "
                            "v1.1, mT5, Flan-T5).")
    if hf.get("is_decoder") or hf.get("is_encoder_decoder") is False:
        raise HFImportError("config.json describes T5's encoder or decoder alone; the explorer reads the whole "
                            "encoder-decoder (T5ForConditionalGeneration).")
    tied = hf.get("tie_word_embeddings", True) is not False
    eos = hf.get("eos_token_id", 1)
    return build_config(
        vocab_size=hf["vocab_size"], N=hf["num_layers"], N_dec=hf.get("num_decoder_layers") or hf["num_layers"],
        d_model=hf["d_model"], d_ff=hf["d_ff"], h=hf["num_heads"], d_kv=hf["d_kv"],
        dropout=hf.get("dropout_rate", 0.1), attn_dropout=hf.get("dropout_rate", 0.1),
        ffn_dropout=hf.get("dropout_rate", 0.1), max_len=hf.get("n_positions") or 512, positions="relative",
        rel_buckets=hf.get("relative_attention_num_buckets", 32),
        rel_max_distance=hf.get("relative_attention_max_distance", 128), scale_scores=False, norm="pre",
        rms_norm=True, layer_norm_eps=hf.get("layer_norm_epsilon", 1e-6), bias=False,
        activation="relu" if ffn == "relu" else "gelu_tanh", gated_ffn=ffn != "relu", share_embeddings=True,
        tie_output=tied, scale_output=bool(hf.get("scale_decoder_outputs", tied)), scale_embeddings=False,
        pad_id=hf.get("pad_token_id", 0), unk_id=2, bos_id=hf.get("decoder_start_token_id", 0),
        eos_id=eos[0] if isinstance(eos, list) else eos, src_prompt_ids=prompt_ids)


# The original T5 checkpoints (t5-small ...) carry a position table for the first encoder-decoder attention, which
# T5 never uses (transformers ignores it on loading): read as unused, not refused
UNUSED = "decoder.block.0.layer.1.EncDecAttention.relative_attention_bias.weight"
# Per layer, our parameter -> T5's (layer.0 self-attention, layer.1 cross-attention or FFN, layer.2 FFN)
ATTENTION = {"w_q": "q", "w_k": "k", "w_v": "v", "w_o": "o"}


def ffn_names(cfg: TransformerConfig, sub: str) -> dict:
    names = {"w_1": "wi_0", "w_3": "wi_1", "w_2": "wo"} if cfg.gated_ffn else {"w_1": "wi", "w_2": "wo"}
    return {f"ffn.{ours}.weight": f"{sub}.DenseReluDense.{theirs}.weight" for ours, theirs in names.items()}


def layer_names(cfg: TransformerConfig, stack: str) -> dict:
    """Our names -> T5's for one layer of a stack (without the 'encoder.block.i.' before them)."""
    names = {f"self_attn.{o}.weight": f"layer.0.SelfAttention.{t}.weight" for o, t in ATTENTION.items()}
    if stack == "encoder":
        return {**names, "res_attn.norm.weight": "layer.0.layer_norm.weight",
                "res_ffn.norm.weight": "layer.1.layer_norm.weight", **ffn_names(cfg, "layer.1")}
    names.update({f"cross_attn.{o}.weight": f"layer.1.EncDecAttention.{t}.weight" for o, t in ATTENTION.items()})
    return {**names, "res_self.norm.weight": "layer.0.layer_norm.weight",
            "res_cross.norm.weight": "layer.1.layer_norm.weight", "res_ffn.norm.weight": "layer.2.layer_norm.weight",
            **ffn_names(cfg, "layer.2")}


def convert_weights(state: dict, cfg: TransformerConfig) -> dict:
    """T5's state dict -> ours. Every tensor must be used, so nothing is silently dropped."""
    c = Converter(state)
    shared = c.pick(["shared.weight", "encoder.embed_tokens.weight"], "embedding")
    c.take("src_embed.weight", shared)
    for alias in ("encoder.embed_tokens.weight", "decoder.embed_tokens.weight"):
        c.tied(alias, shared)
    if cfg.tie_output:
        c.tied("lm_head.weight", shared)
    else:
        c.take("generator.weight", c.pick(["lm_head.weight"], "output projection (lm_head)"))
    for stack, n, ours in [("encoder", cfg.N, "encoder"), ("decoder", cfg.N_dec, "decoder")]:
        for i in range(n):
            for o, t in layer_names(cfg, stack).items():
                c.take(f"{ours}.{i}.{o}", f"{stack}.block.{i}.{t}")
        c.take(f"{stack[:3]}_norm.weight", f"{stack}.final_layer_norm.weight")
        c.take(f"{stack[:3]}_pos_bias.table.weight",          # the first layer's table, shared by all
               f"{stack}.block.0.layer.0.SelfAttention.relative_attention_bias.weight")
    if UNUSED in state:
        c.used.add(UNUSED)
    return c.done("T5")


def convert(hf_dir: Path, hf: dict, generation: dict, source: str | None = None, src_lang: str | None = None,
            tgt_lang: str | None = None) -> Converted:
    """A T5 / T5 v1.1 / mT5 / Flan-T5 download -> our config (with its prompt for one direction), weights, tokenizer."""
    if hf.get("model_type") not in ("t5", "mt5"):
        raise HFImportError(f"config.json describes a '{hf.get('model_type')}' model, not a T5 one.")
    if hf.get("vocab_size") is None:
        raise HFImportError("config.json lacks vocab_size: it does not describe a whole T5 model.")
    tokenizer = load_tokenizer(hf_dir, hf["vocab_size"])
    text, languages = prompt(src_lang, tgt_lang)
    cfg = t5_config(hf, tokenizer.encode(text.strip(), "src"))
    state = read_weights(hf_dir)
    source = source or guess_source(hf_dir, hf)
    kind = flavour(hf, source)
    name = {"t5": "T5", "flan": "Flan-T5", "mt5": "mT5"}[kind]
    return Converted(cfg, convert_weights(state, cfg), tokenizer, f"{source} ({name}, prompt '{text.strip()}')",
                     languages, CREDIT[kind])


ARCH = Architecture("T5 / mT5 / Flan-T5", NEEDED, "google-t5/t5-small", convert)
