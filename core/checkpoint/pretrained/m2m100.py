"""Convert NLLB-200 and M2M100 models (Hugging Face's model_type "m2m_100").

Both are fairseq Transformers that differ from the paper in TransformerConfig options only: pre-norm layers with a
LayerNorm after each stack (norm="pre"), fairseq's sinusoids counted from pad_id + 1 (pe_layout="fairseq",
pos_offset), </s> as the decoder's start token, and a language token first on each side (src_prefix_id, and
tgt_prefix_id, forced as the first output). NLLB comes with a tokenizer.json (read with `tokenizers`); M2M100 with
sentencepiece.bpe.model + vocab.json, its language tokens numbered after vocab.json's pieces.
"""
from __future__ import annotations

import re
from pathlib import Path

from core.model.config import TransformerConfig
from core.tokenizer import Tokenizer
from core.tokenizer_json import JsonTokenizer
from .common import (Architecture, Converted, Converter, HFImportError, build_config, check_sizes,
                     checked_eos, guess_source, optional_json, read_json, read_weights)

# The language tokens of M2M100 in the order of fairseq's language dictionary: "__en__" has id len(vocab.json) + 18.
M2M100_LANGUAGES = {
    "m2m100": "af am ar ast az ba be bg bn br bs ca ceb cs cy da de el en es et fa ff fi fr fy ga gd gl gu ha he hi hr "
              "ht hu hy id ig ilo is it ja jv ka kk km kn ko lb lg ln lo lt lv mg mk ml mn mr ms my ne nl no ns oc or "
              "pa pl ps pt ro ru sd si sk sl so sq sr ss su sv sw ta th tl tn tr uk ur uz vi wo xh yi yo zh zu".split(),
    "wmt21": "en ha is ja cs ru zh de".split()}
DEFAULT_LANGS = {"nllb": ("eng_Latn", "deu_Latn"), "m2m100": ("en", "de")}     # the project's direction
SPECIAL_IDS = {"<pad>": "pad_id", "</s>": "eos_id", "<unk>": "unk_id"}


def variant(hf_dir: Path) -> str:
    """"nllb" (tokenizer.json) or "m2m100" (sentencepiece.bpe.model + vocab.json), by the tokenizer files."""
    if (hf_dir / "tokenizer.json").exists():
        return "nllb"
    if (hf_dir / "sentencepiece.bpe.model").exists() and (hf_dir / "vocab.json").exists():
        return "m2m100"
    raise HFImportError(f"{hf_dir} has no tokenizer: an NLLB model needs tokenizer.json, an M2M100 model "
                        "sentencepiece.bpe.model and vocab.json (docs/importing.md lists the files).")


def language_token(kind: str, code: str) -> str:
    """The token of a language: NLLB's are the codes themselves (eng_Latn), M2M100's are "__en__"."""
    return code if kind == "nllb" or code.startswith("__") else f"__{code}__"


def m2m100_tokenizer(hf_dir: Path, vocab_size: int) -> Tokenizer:
    """sentencepiece.bpe.model + vocab.json, then the language tokens and "madeupword" fillers up to vocab_size."""
    vocab = read_json(hf_dir / "vocab.json")
    codes = M2M100_LANGUAGES.get(optional_json(hf_dir / "tokenizer_config.json").get("language_codes", "m2m100"))
    if codes is None:
        raise HFImportError("tokenizer_config.json names language codes this importer does not know "
                            f"(it knows {', '.join(M2M100_LANGUAGES)}).")
    full = {**vocab, **{f"__{c}__": len(vocab) + i for i, c in enumerate(codes)}}
    if sorted(full.values()) != list(range(len(full))) or len(full) > vocab_size:
        raise HFImportError(f"vocab.json ({len(vocab)} pieces) and {len(codes)} language tokens do not number "
                            f"0..{len(full) - 1} within config.json's vocab_size ({vocab_size}).")
    full.update({f"madeupword{i:04d}": i + len(full) for i in range(vocab_size - len(full))})
    spm = (hf_dir / "sentencepiece.bpe.model").read_bytes()
    try:
        return Tokenizer(spm, spm, full)
    except (RuntimeError, OSError) as e:
        raise HFImportError(f"sentencepiece.bpe.model is not a SentencePiece model ({e}).") from None


def load_tokenizer(hf_dir: Path, kind: str, vocab_size: int):
    """The NLLB or M2M100 tokenizer of the download."""
    if kind == "m2m100":
        return m2m100_tokenizer(hf_dir, vocab_size)
    try:
        return JsonTokenizer((hf_dir / "tokenizer.json").read_text(encoding="utf-8"), vocab_size)
    except (ValueError, UnicodeDecodeError) as e:
        raise HFImportError(f"{hf_dir}/tokenizer.json: {e}") from None


def token_id(tokenizer, token: str) -> int | None:
    """A token's id in either kind of tokenizer."""
    return tokenizer.token_id(token) if isinstance(tokenizer, JsonTokenizer) else tokenizer.vocab.get(token)


# A language token: M2M100's "__en__", NLLB's "eng_Latn", mBART-50's "en_XX" / "de_DE"
LANGUAGE_TOKEN = re.compile(r"__[a-z]{2,3}__|[a-z]{2,3}_[A-Z][A-Za-z]{1,3}")


def known_languages(tokenizer) -> list[str]:
    """The language codes a tokenizer has, as --src-lang takes them ("en", "eng_Latn", "en_XX")."""
    pieces = (tokenizer.tok.get_vocab(with_added_tokens=True) if isinstance(tokenizer, JsonTokenizer)
              else tokenizer.vocab)
    return sorted(p.strip("_") for p in pieces if LANGUAGE_TOKEN.fullmatch(p))


def language_ids(tokenizer, tokens: dict) -> dict:
    """{"source": id, "target": id} of the language tokens {"source": token, "target": token}, or HFImportError
    listing the model's languages when one is not among them."""
    ids = {side: token_id(tokenizer, token) for side, token in tokens.items()}
    for side, token in tokens.items():
        if ids[side] is None:
            codes = known_languages(tokenizer)
            raise HFImportError(f"'{token.strip('_')}' is not a language of this model: the {side} language "
                                f"(--{'src' if side == 'source' else 'tgt'}-lang) is one of its {len(codes)} codes: "
                                f"{', '.join(codes)}.")
    return ids


def m2m100_config(hf: dict, tokenizer, kind: str, src_lang: str | None, tgt_lang: str | None) -> TransformerConfig:
    """Hugging Face's M2M100Config (as a dict) and the chosen languages -> our TransformerConfig."""
    eos = checked_eos(hf, "M2M100 / NLLB", check_sizes(hf, "vocab_size"))
    langs = language_ids(tokenizer, {"source": language_token(kind, src_lang or DEFAULT_LANGS[kind][0]),
                                     "target": language_token(kind, tgt_lang or DEFAULT_LANGS[kind][1])})
    pad = hf["pad_token_id"]
    cfg = build_config(
        vocab_size=hf["vocab_size"], N=hf["encoder_layers"], N_dec=hf["decoder_layers"], d_model=hf["d_model"],
        d_ff=hf["encoder_ffn_dim"], h=hf["encoder_attention_heads"], dropout=hf.get("dropout", 0.1),
        attn_dropout=hf.get("attention_dropout", 0.1), ffn_dropout=hf.get("activation_dropout", 0.0),
        max_len=hf["max_position_embeddings"], positions="sinusoidal", pe_layout="fairseq", pos_offset=pad + 1,
        norm="pre", activation="relu", layer_norm_eps=1e-5, share_embeddings=bool(hf.get("tie_word_embeddings", True)),
        scale_embeddings=bool(hf.get("scale_embedding", True)), pad_id=pad, unk_id=3,
        bos_id=hf.get("decoder_start_token_id", eos), eos_id=eos,
        src_prefix_id=langs["source"], tgt_prefix_id=langs["target"])
    check_special_ids(tokenizer, cfg)
    return cfg


def check_special_ids(tokenizer, cfg: TransformerConfig) -> None:
    """The tokenizer's <pad>, </s> and <unk> must have config.json's ids, or HFImportError."""
    for piece, field in SPECIAL_IDS.items():
        if token_id(tokenizer, piece) != getattr(cfg, field):
            raise HFImportError(f"the tokenizer gives {piece} the id {token_id(tokenizer, piece)}, "
                                f"config.json {getattr(cfg, field)}: they do not belong together.")


def take_embeddings(c: Converter, cfg: TransformerConfig) -> None:
    """The embeddings and output projection of a BART-style model (M2M100, mBART): one tied matrix, or three."""
    src = c.pick(["model.shared.weight", "model.encoder.embed_tokens.weight"], "source embedding")
    c.take("src_embed.weight", src)
    tgt = c.pick(["model.decoder.embed_tokens.weight", src], "target embedding")
    lm = c.pick(["lm_head.weight", tgt], "output projection")
    c.tied("model.encoder.embed_tokens.weight", src)
    if cfg.share_embeddings:
        for alias in (tgt, lm):
            c.tied(alias, src)
    else:
        c.take("tgt_embed.weight", tgt)
        c.take("generator.weight", lm)


def take_stacks(c: Converter, cfg: TransformerConfig) -> None:
    """Every layer, and the LayerNorm after each stack of a pre-norm model (M2M100, mBART)."""
    c.layers(cfg)
    for ours, stack in [("enc_norm", "encoder"), ("dec_norm", "decoder")]:
        for p in ("weight", "bias"):
            c.take(f"{ours}.{p}", f"model.{stack}.layer_norm.{p}")


def convert_weights(state: dict, cfg: TransformerConfig) -> dict:
    """M2M100's state dict -> ours. Every tensor must be used, so nothing is silently dropped."""
    c = Converter(state)
    take_embeddings(c, cfg)
    take_stacks(c, cfg)
    for stack in ("encoder", "decoder"):
        for name in ("weight", "weights"):          # older exports may store the fixed table
            c.fixed_table(f"model.{stack}.embed_positions.{name}", cfg, pad_row=cfg.pad_id)
    return c.done("M2M100")


CREDITS = {"nllb": "NLLB-200 by Meta AI (NLLB Team et al. 2022, 'No Language Left Behind'), CC-BY-NC 4.0",
           "m2m100": "M2M100 by Meta AI (Fan et al. 2021, 'Beyond English-Centric Multilingual Machine "
                     "Translation'), MIT license"}


def convert(hf_dir: Path, hf: dict, generation: dict, source: str | None = None, src_lang: str | None = None,
            tgt_lang: str | None = None) -> Converted:
    """An NLLB or M2M100 download -> our config (for one direction), weights and tokenizer."""
    if hf.get("model_type") != "m2m_100":
        raise HFImportError(f"config.json describes a '{hf.get('model_type')}' model, not an M2M100 or NLLB one.")
    kind = variant(hf_dir)
    check_sizes(hf, "vocab_size")
    tokenizer = load_tokenizer(hf_dir, kind, hf["vocab_size"])
    cfg = m2m100_config(hf, tokenizer, kind, src_lang, tgt_lang)
    state = convert_weights(read_weights(hf_dir), cfg)
    names = tokenizer.pieces([cfg.src_prefix_id, cfg.tgt_prefix_id])
    languages = {"source": names[0].strip("_"), "target": names[1].strip("_")}
    name = {"nllb": "NLLB-200", "m2m100": "M2M100"}[kind]
    return Converted(cfg, state, tokenizer, f"{source or guess_source(hf_dir, hf)} ({name}, "
                                            f"{languages['source']} -> {languages['target']})",
                     languages, CREDITS[kind])


ARCH = Architecture("M2M100 / NLLB", ("config.json",), "facebook/nllb-200-distilled-600M", convert)
