"""Convert FSMT models (fairseq's WMT19 winners, e.g. facebook/wmt19-en-de).

FSMT is the paper's Transformer-big: post-norm, as in the paper. What differs is TransformerConfig options only:
fairseq's sinusoids counted from pad_id + 1 (pe_layout="fairseq", pos_offset), </s> as the decoder's start token,
and a source vocabulary of its own (src_vocab_size; the source embedding, the target embedding and the output
projection are three matrices). Its tokenizer is Moses + BPE (core.tokenizer_moses: sacremoses and `tokenizers`).
"""
from __future__ import annotations

from pathlib import Path

from core.model.config import TransformerConfig
from .common import (Architecture, Converted, Converter, HFImportError, build_config, check_sizes,
                     checked_eos, guess_source, optional_json, read_json, read_weights)

NEEDED = ("config.json", "vocab-src.json", "vocab-tgt.json", "merges.txt")
SPECIAL_IDS = {"<pad>": "pad_id", "</s>": "eos_id", "<unk>": "unk_id"}


def fsmt_config(hf: dict) -> TransformerConfig:
    """Hugging Face's FSMTConfig (as a dict) -> our TransformerConfig, or HFImportError if unsupported."""
    if hf.get("model_type") != "fsmt":
        raise HFImportError(f"config.json describes a '{hf.get('model_type')}' model, not an FSMT one.")
    problems = check_sizes(hf, "src_vocab_size", "tgt_vocab_size")
    if not isinstance(hf.get("langs"), list) or len(hf["langs"]) != 2:
        problems.append(f"langs={hf.get('langs')!r}: FSMT needs a source and a target language, e.g. ['en', 'de']")
    eos = checked_eos(hf, "FSMT", problems)
    pad = hf["pad_token_id"]
    return build_config(
        vocab_size=hf["tgt_vocab_size"], src_vocab_size=hf["src_vocab_size"], N=hf["encoder_layers"],
        N_dec=hf["decoder_layers"], d_model=hf["d_model"], d_ff=hf["encoder_ffn_dim"], h=hf["encoder_attention_heads"],
        dropout=hf.get("dropout", 0.1), attn_dropout=hf.get("attention_dropout", 0.0),
        ffn_dropout=hf.get("activation_dropout", 0.0), max_len=hf["max_position_embeddings"], positions="sinusoidal",
        pe_layout="fairseq", pos_offset=pad + 1, norm="post", activation="relu", layer_norm_eps=1e-5,
        share_embeddings=bool(hf.get("tie_word_embeddings", False)), scale_embeddings=bool(hf.get("scale_embedding",
                                                                                                  True)),
        pad_id=pad, unk_id=3, bos_id=hf.get("decoder_start_token_id", eos), eos_id=eos)


def load_tokenizer(hf_dir: Path, hf: dict, cfg: TransformerConfig):
    """merges.txt, vocab-src.json and vocab-tgt.json -> our Moses + BPE tokenizer, checked against the config."""
    from core.tokenizer_moses import MosesBPETokenizer, read_merges   # here: sacremoses takes 0.5 s to import
    if optional_json(hf_dir / "tokenizer_config.json").get("do_lower_case"):
        raise HFImportError("tokenizer_config.json asks to lower-case the text: not supported.")
    vocabs = {"src": read_json(hf_dir / "vocab-src.json"), "tgt": read_json(hf_dir / "vocab-tgt.json")}
    for side, size in [("src", cfg.source_vocab_size), ("tgt", cfg.vocab_size)]:
        if sorted(vocabs[side].values()) != list(range(size)):
            raise HFImportError(f"vocab-{side}.json should number its pieces 0..{size - 1} (config.json's "
                                f"{side}_vocab_size), but it has {len(vocabs[side])} entries with other ids.")
        for piece, field in SPECIAL_IDS.items():
            if vocabs[side].get(piece) != getattr(cfg, field):
                raise HFImportError(f"vocab-{side}.json gives {piece} the id {vocabs[side].get(piece)}, "
                                    f"config.json {getattr(cfg, field)}.")
    merges = read_merges((hf_dir / "merges.txt").read_text(encoding="utf-8"))
    if not merges:
        raise HFImportError(f"{hf_dir}/merges.txt has no BPE merges.")
    return MosesBPETokenizer(merges, vocabs, {"src": hf["langs"][0], "tgt": hf["langs"][1]})


def convert_weights(state: dict, cfg: TransformerConfig) -> dict:
    """FSMT's state dict -> ours. Every tensor must be used, so nothing is silently dropped."""
    c = Converter(state)
    src, tgt = "model.encoder.embed_tokens.weight", "model.decoder.embed_tokens.weight"
    lm = c.pick(["model.decoder.output_projection.weight", tgt], "output projection")
    c.take("src_embed.weight", c.pick([src, tgt], "source embedding"))
    if cfg.share_embeddings:
        for alias in (tgt, lm):
            c.tied(alias, c.pick([src, tgt], "source embedding"))
    else:
        c.take("tgt_embed.weight", tgt)
        c.take("generator.weight", lm)
    c.layers(cfg)
    for stack in ("encoder", "decoder"):
        c.fixed_table(f"model.{stack}.embed_positions.weight", cfg, pad_row=cfg.pad_id)
    return c.done("FSMT")


def convert(hf_dir: Path, hf: dict, generation: dict, source: str | None = None, src_lang: str | None = None,
            tgt_lang: str | None = None) -> Converted:
    """An FSMT download -> our config, weights and tokenizer. Its languages are fixed (config.json's langs)."""
    cfg = fsmt_config(hf)
    if (src_lang, tgt_lang) not in [(None, None), tuple(hf["langs"])]:
        raise HFImportError(f"This FSMT model translates {hf['langs'][0]} -> {hf['langs'][1]} only: leave "
                            "--src-lang and --tgt-lang out.")
    tokenizer = load_tokenizer(hf_dir, hf, cfg)
    state = convert_weights(read_weights(hf_dir), cfg)
    languages = {"source": hf["langs"][0], "target": hf["langs"][1]}
    credit = ("fairseq's WMT19 news translation models by Facebook AI Research (Ng et al. 2019), "
              "ported to FSMT by Hugging Face, Apache 2.0")
    return Converted(cfg, state, tokenizer, f"{source or guess_source(hf_dir, hf)} (FSMT)", languages, credit)


ARCH = Architecture("FSMT", NEEDED, "facebook/wmt19-en-de", convert)
