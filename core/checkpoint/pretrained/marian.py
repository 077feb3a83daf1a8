"""Convert OPUS-MT (Marian) models in the Hugging Face format (model_type "marian", Helsinki-NLP/opus-mt-*).

Reads config.json, model.safetensors, source.spm, target.spm and vocab.json. Never a pickle.
Marian is the paper's post-norm Transformer with a few differences, each a TransformerConfig option:
swish FFN, sines-then-cosines positions, a bias on the logits, <pad> as decoder start, </s> = id 0.
"""
from __future__ import annotations

from pathlib import Path

import torch

from core.model.config import TransformerConfig
from core.tokenizer import Tokenizer
from .common import (Architecture, Converted, Converter, HFImportError, build_config, check_sizes,
                     checked_eos, read_json, read_weights)

NEEDED = ("config.json", "source.spm", "target.spm", "vocab.json")
# Flags of the BART-era Marian configs: the value OPUS-MT models have, and why another one is refused.
FLAGS = {
    "normalize_before": (False, "it asks for pre-norm layers, but Marian models in this format are post-norm "
                                "(transformers' MarianMTModel ignores the flag and Marian's converter only "
                                "accepts post-norm models), so the config and the weights disagree"),
    "add_final_layer_norm": (False, "a LayerNorm after each stack is not part of Marian models in this format"),
    "normalize_embedding": (False, "a LayerNorm on the embeddings is not supported"),
    "static_position_embeddings": (True, "learned position embeddings are not supported: Marian uses fixed sinusoids"),
}   # add_bias_logits is not here: either value means final_logits_bias, which every Marian model has


def marian_config(hf: dict, generation: dict, vocab: dict) -> TransformerConfig:
    """Hugging Face's MarianConfig (as a dict) -> our TransformerConfig, or HFImportError if unsupported."""
    if hf.get("model_type") != "marian":
        raise HFImportError(f"config.json describes a '{hf.get('model_type')}' model, not a Marian one "
                            "(model_type 'marian', e.g. Helsinki-NLP/opus-mt-*).")
    problems = check_sizes(hf, "vocab_size") + [f"{k}={hf[k]}: {why}" for k, (ok, why) in FLAGS.items()
                                                if k in hf and hf[k] != ok]
    V = hf["vocab_size"]
    if hf.get("decoder_vocab_size") not in (None, V):
        problems.append(f"separate source and target vocabularies ({V} and {hf['decoder_vocab_size']} pieces) "
                        "are not supported")
    # gelu: MarianConfig's default activation; OPUS-MT models use swish
    eos = checked_eos(hf, "Marian", problems, ("swish", "silu", "relu"), default_activation="gelu", default_eos=0)
    pad = hf["pad_token_id"]
    activation = hf.get("activation_function", "gelu")
    bad_words = generation.get("bad_words_ids", hf.get("bad_words_ids", [[pad]]))   # OPUS-MT: [[pad]]
    return build_config(
        vocab_size=V, N=hf["encoder_layers"], N_dec=hf["decoder_layers"], d_model=hf["d_model"],
        d_ff=hf["encoder_ffn_dim"], h=hf["encoder_attention_heads"], dropout=hf.get("dropout", 0.1),
        max_len=hf["max_position_embeddings"], positions="sinusoidal", pe_layout="concat", norm="post",
        activation="relu" if activation == "relu" else "swish",
        layer_norm_eps=1e-5,                                  # nn.LayerNorm's default, which Marian uses
        share_embeddings=bool(hf.get("share_encoder_decoder_embeddings", True) and hf.get("tie_word_embeddings", True)),
        scale_embeddings=bool(hf.get("scale_embedding", False)), final_logits_bias=True,
        forbid_pad_output=[pad] in (bad_words or []), pad_id=pad, unk_id=vocab.get("<unk>", 1),
        bos_id=hf.get("decoder_start_token_id", pad), eos_id=eos)


def convert_weights(state: dict, cfg: TransformerConfig) -> dict:
    """Marian's state dict -> ours. Every Marian tensor must be used, so nothing is silently dropped."""
    c = Converter(state)
    src = c.pick(["model.shared.weight", "model.encoder.embed_tokens.weight"], "source embedding")
    c.take("src_embed.weight", src)
    tgt = c.pick(["model.decoder.embed_tokens.weight", "model.shared.weight"], "target embedding")
    lm = c.pick(["lm_head.weight", tgt], "output projection")
    ties = [("model.encoder.embed_tokens.weight", src), ("model.decoder.embed_tokens.weight", tgt)]
    if cfg.share_embeddings:
        ties += [(tgt, src), (lm, src)]
    for alias, key in ties:
        c.tied(alias, key)
    if not cfg.share_embeddings:
        c.take("tgt_embed.weight", tgt)
        c.take("generator.weight", lm)
    c.out["logits_bias"] = state.get("final_logits_bias", torch.zeros(1, cfg.vocab_size)).reshape(-1)
    c.used.add("final_logits_bias")
    c.layers(cfg)
    for stack in ("encoder", "decoder"):          # older exports store the fixed table: check it is ours
        c.fixed_table(f"model.{stack}.embed_positions.weight", cfg)
    return c.done("Marian")


def guess_source(hf_dir: Path, hf: dict) -> str:
    """'Helsinki-NLP/opus-mt-en-de' from a Hub cache path, config.json or the folder name."""
    for part in hf_dir.resolve().parts:
        if part.startswith("models--"):
            return part[len("models--"):].replace("--", "/")
    name_or_path = str(hf.get("_name_or_path", ""))
    if "Helsinki-NLP/" in name_or_path:
        return "Helsinki-NLP/" + name_or_path.split("Helsinki-NLP/")[-1].strip("/")
    name = hf_dir.resolve().name
    return f"Helsinki-NLP/{name}" if name.startswith("opus-mt-") else name


def guess_languages(source: str) -> dict | None:
    """{"source": "en", "target": "de"} from an OPUS-MT name such as Helsinki-NLP/opus-mt-en-de, else None."""
    parts = source.rsplit("/", 1)[-1].split("-")
    if len(parts) == 4 and parts[:2] == ["opus", "mt"]:
        return {"source": parts[2], "target": parts[3]}
    return None


def load_tokenizer(hf_dir: Path, cfg: TransformerConfig, vocab: dict) -> Tokenizer:
    """source.spm + target.spm + vocab.json -> our Tokenizer, checked against the config's ids."""
    tok_cfg = read_json(hf_dir / "tokenizer_config.json") if (hf_dir / "tokenizer_config.json").exists() else {}
    if tok_cfg.get("separate_vocabs") or (hf_dir / "target_vocab.json").exists():
        raise HFImportError("This model has separate source and target vocabularies: not supported.")
    ids = sorted(vocab.values()) if all(isinstance(i, int) for i in vocab.values()) else None
    if ids != list(range(cfg.vocab_size)):
        raise HFImportError(f"vocab.json should number its {cfg.vocab_size} pieces 0..{cfg.vocab_size - 1} "
                            f"(config.json's vocab_size), but it has {len(vocab)} entries with other ids.")
    for piece, want in [("<pad>", cfg.pad_id), ("</s>", cfg.eos_id)]:
        if vocab.get(piece) != want:
            raise HFImportError(f"vocab.json gives {piece} the id {vocab.get(piece)}, config.json {want}.")
    try:
        return Tokenizer((hf_dir / "source.spm").read_bytes(), (hf_dir / "target.spm").read_bytes(), vocab)
    except (RuntimeError, OSError) as e:
        raise HFImportError(f"source.spm or target.spm is not a SentencePiece model ({e}).") from None


def convert(hf_dir: Path, hf: dict, generation: dict, source: str | None = None, src_lang: str | None = None,
            tgt_lang: str | None = None) -> Converted:
    """A Marian download -> our config, weights and tokenizer; the languages from the name unless given."""
    vocab = read_json(hf_dir / "vocab.json")
    cfg = marian_config(hf, generation, vocab)
    tokenizer = load_tokenizer(hf_dir, cfg, vocab)
    state = convert_weights(read_weights(hf_dir), cfg)
    source = source or guess_source(hf_dir, hf)
    languages = ({"source": src_lang, "target": tgt_lang} if src_lang and tgt_lang else guess_languages(source))
    credit = ("OPUS-MT by the Language Technology Research Group at the University of Helsinki "
              "(Tiedemann & Thottingal 2020), CC-BY 4.0") if source.startswith("Helsinki-NLP/") else None
    return Converted(cfg, state, tokenizer, f"{source} (Marian)", languages, credit)


ARCH = Architecture("Marian", NEEDED, "Helsinki-NLP/opus-mt-en-de", convert)

