"""Convert mBART-50 models (Hugging Face's model_type "mbart", e.g. facebook/mbart-large-50-many-to-many-mmt).

mBART is M2M100's cousin (pre-norm layers, a LayerNorm after each stack, </s> as the decoder's start token, a
language token first on each side: src_prefix_id, tgt_prefix_id) with three differences, each a TransformerConfig
option: learned positions (positions="learned"; Hugging Face's table has two unused rows first, left out here), a
LayerNorm on the embeddings + positions (embed_norm) and GELU in the FFN (activation="gelu"). Its tokenizer is
tokenizer.json (read with `tokenizers`) or, without one, sentencepiece.bpe.model in fairseq's order with the 52
language codes and <mask> after its pieces.
"""
from __future__ import annotations

from pathlib import Path

import torch

from core.model.config import TransformerConfig
from core.tokenizer import Tokenizer
from core.tokenizer_json import JsonTokenizer

from .common import (Architecture, Converted, Converter, HFImportError, build_config, check_sizes, checked_eos,
                     guess_source, optional_json, read_sentencepiece, read_weights)
from .m2m100 import check_special_ids, language_ids, take_embeddings, take_stacks

# mBART-50's language codes in the order of its vocabulary (after the SentencePiece pieces)
LANGUAGES = ("ar_AR cs_CZ de_DE en_XX es_XX et_EE fi_FI fr_XX gu_IN hi_IN it_IT ja_XX kk_KZ ko_KR lt_LT lv_LV my_MM "
             "ne_NP nl_XX ro_RO ru_RU si_LK tr_TR vi_VN zh_CN af_ZA az_AZ bn_IN fa_IR he_IL hr_HR id_ID ka_GE km_KH "
             "mk_MK ml_IN mn_MN mr_IN pl_PL ps_AF pt_XX sv_SE sw_KE ta_IN te_IN th_TH tl_XX uk_UA ur_PK xh_ZA gl_ES "
             "sl_SI").split()
DEFAULT_LANGS = ("en_XX", "de_DE")                    # the project's direction
POSITION_OFFSET = 2        # Hugging Face's MBartLearnedPositionalEmbedding: position p is row p + 2
CREDIT = ("mBART-50 by Facebook AI (Tang et al. 2020, 'Multilingual Translation with Extensible Multilingual "
          "Pretraining and Finetuning'), MIT license")


def spm_tokenizer(hf_dir: Path, vocab_size: int) -> Tokenizer:
    """sentencepiece.bpe.model in fairseq's order: <s> <pad> </s> <unk>, its pieces (SentencePiece's id + 1), the
    language codes, <mask>."""
    proto, sp = read_sentencepiece(hf_dir / "sentencepiece.bpe.model")
    n = sp.get_piece_size()
    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3, **{sp.id_to_piece(i): i + 1 for i in range(3, n)}}
    vocab.update({code: n + 1 + i for i, code in enumerate(LANGUAGES)})
    vocab["<mask>"] = len(vocab)
    if len(vocab) > vocab_size:
        raise HFImportError(f"sentencepiece.bpe.model ({n} pieces) and {len(LANGUAGES)} language codes make "
                            f"{len(vocab)} ids, more than config.json's vocab_size ({vocab_size}).")
    return Tokenizer(proto, proto, vocab)


def load_tokenizer(hf_dir: Path, vocab_size: int):
    """tokenizer.json when the download has one, else sentencepiece.bpe.model."""
    if (hf_dir / "tokenizer.json").exists():
        try:
            return JsonTokenizer((hf_dir / "tokenizer.json").read_text(encoding="utf-8"), vocab_size)
        except (ValueError, UnicodeDecodeError) as e:
            raise HFImportError(f"{hf_dir}/tokenizer.json: {e}") from None
    if (hf_dir / "sentencepiece.bpe.model").exists():
        return spm_tokenizer(hf_dir, vocab_size)
    raise HFImportError(f"{hf_dir} has no tokenizer: an mBART-50 model needs tokenizer.json or "
                        "sentencepiece.bpe.model (docs/importing.md lists the files).")


def check_flavour(hf_dir: Path, hf: dict) -> None:
    """mBART-50 only: the first mBART (mbart-large-cc25) puts the language code last and is refused."""
    if hf.get("model_type") != "mbart":
        raise HFImportError(f"config.json describes a '{hf.get('model_type')}' model, not an mBART one.")
    tokenizer_class = optional_json(hf_dir / "tokenizer_config.json").get("tokenizer_class", "MBart50Tokenizer")
    if not str(tokenizer_class).startswith("MBart50"):
        raise HFImportError(f"This mBART model's tokenizer is {tokenizer_class}: the first mBART (cc25) writes "
                            "the language code after the sentence, which the explorer does not read. mBART-50 "
                            "models (facebook/mbart-large-50-many-to-many-mmt) are supported.")
    problems = [] if hf.get("normalize_embedding", True) else ["normalize_embedding=False: mBART has a LayerNorm "
                                                               "on its embeddings"]
    if hf.get("add_final_layer_norm") is False:
        problems.append("add_final_layer_norm=False: mBART ends each stack with a LayerNorm")
    checked_eos(hf, "mBART", check_sizes(hf, "vocab_size") + problems, ("gelu",), default_activation="gelu")


def mbart_config(hf: dict, tokenizer, src_lang: str | None, tgt_lang: str | None) -> TransformerConfig:
    """Hugging Face's MBartConfig (as a dict) and the chosen languages -> our TransformerConfig."""
    eos = hf.get("eos_token_id", 2)
    langs = language_ids(tokenizer, {"source": src_lang or DEFAULT_LANGS[0], "target": tgt_lang or DEFAULT_LANGS[1]})
    cfg = build_config(
        vocab_size=hf["vocab_size"], N=hf["encoder_layers"], N_dec=hf["decoder_layers"], d_model=hf["d_model"],
        d_ff=hf["encoder_ffn_dim"], h=hf["encoder_attention_heads"], dropout=hf.get("dropout", 0.1),
        attn_dropout=hf.get("attention_dropout", 0.0), ffn_dropout=hf.get("activation_dropout", 0.0),
        max_len=hf["max_position_embeddings"], positions="learned", norm="pre", activation="gelu",
        layer_norm_eps=1e-5, share_embeddings=bool(hf.get("tie_word_embeddings", True)),
        scale_embeddings=bool(hf.get("scale_embedding", False)), final_logits_bias=True, embed_norm=True,
        pad_id=hf["pad_token_id"], unk_id=3, bos_id=hf.get("decoder_start_token_id", eos), eos_id=eos,
        src_prefix_id=langs["source"], tgt_prefix_id=langs["target"])
    check_special_ids(tokenizer, cfg)
    return cfg


def convert_weights(state: dict, cfg: TransformerConfig) -> dict:
    """mBART's state dict -> ours. Every tensor must be used, so nothing is silently dropped."""
    c = Converter(state)
    take_embeddings(c, cfg)
    take_stacks(c, cfg)
    for ours, stack in [("src", "encoder"), ("tgt", "decoder")]:
        table = f"model.{stack}.embed_positions.weight"
        c.take(f"{ours}_pos.table", table)
        if c.out[f"{ours}_pos.table"].shape[0] != cfg.max_len + POSITION_OFFSET:
            raise HFImportError(f"{table} has {c.out[f'{ours}_pos.table'].shape[0]} rows; config.json's "
                                f"max_position_embeddings + {POSITION_OFFSET} is {cfg.max_len + POSITION_OFFSET}.")
        c.out[f"{ours}_pos.table"] = c.out[f"{ours}_pos.table"][POSITION_OFFSET:]
        for p in ("weight", "bias"):
            c.take(f"{ours}_embed_norm.{p}", f"model.{stack}.layernorm_embedding.{p}")
    c.out["logits_bias"] = state.get("final_logits_bias", torch.zeros(1, cfg.vocab_size)).reshape(-1)
    c.used.add("final_logits_bias")
    return c.done("mBART")


def convert(hf_dir: Path, hf: dict, generation: dict, source: str | None = None, src_lang: str | None = None,
            tgt_lang: str | None = None) -> Converted:
    """An mBART-50 download -> our config (for one direction), weights and tokenizer."""
    check_flavour(hf_dir, hf)
    tokenizer = load_tokenizer(hf_dir, hf["vocab_size"])
    cfg = mbart_config(hf, tokenizer, src_lang, tgt_lang)
    state = convert_weights(read_weights(hf_dir), cfg)
    names = tokenizer.pieces([cfg.src_prefix_id, cfg.tgt_prefix_id])
    languages = {"source": names[0], "target": names[1]}
    return Converted(cfg, state, tokenizer, f"{source or guess_source(hf_dir, hf)} (mBART-50, "
                                            f"{languages['source']} -> {languages['target']})", languages, CREDIT)


ARCH = Architecture("mBART-50", ("config.json",), "facebook/mbart-large-50-many-to-many-mmt", convert)
