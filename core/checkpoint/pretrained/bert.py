"""Convert BERT, RoBERTa and DistilBERT models (Hugging Face's model_type "bert", "roberta", "distilbert").

All three are the paper's encoder alone (core/model/encoder_only.py): post-norm layers with GELU, learned positions,
token types (BERT: sentence A / B; RoBERTa: one; DistilBERT: none) and a masked-LM head tied to the word embedding.
RoBERTa numbers positions from pad_id + 1 over real tokens only (pos_offset) and separates two segments by </s></s>;
DistilBERT names its tensors otherwise. The tokenizer is tokenizer.json (read with `tokenizers`).

A checkpoint without the masked-LM head (saved as BertModel, or fine-tuned with a classifier) is converted as the
encoder only: its attention maps can be shown, not which word fills [MASK]. The pooler and the task heads on top
(next-sentence, classifier, question answering) are not attention: they are left out, and the card's source says so.
"""
from __future__ import annotations

from pathlib import Path

import torch

from core.model.encoder_only import EncoderOnlyConfig
from core.tokenizer_json import JsonTokenizer

from .common import Architecture, Converted, Converter, HFImportError, guess_source, optional_json, read_weights

NAMES = {"bert": "BERT", "roberta": "RoBERTa", "distilbert": "DistilBERT"}
ACTIVATIONS = {"gelu": "gelu", "gelu_new": "gelu_tanh", "relu": "relu"}      # theirs -> ours
SPECIALS = {"bert": ("[CLS]", "[SEP]", "[MASK]", "[PAD]", "[UNK]"),
            "roberta": ("<s>", "</s>", "<mask>", "<pad>", "<unk>")}
SPECIAL_FIELDS = ("cls", "sep", "mask", "pad", "unk")
# Per layer: our parameter -> theirs
BERT_LAYER = {"self_attn.w_q": "attention.self.query", "self_attn.w_k": "attention.self.key",
              "self_attn.w_v": "attention.self.value", "self_attn.w_o": "attention.output.dense",
              "res_attn.norm": "attention.output.LayerNorm", "ffn.w_1": "intermediate.dense",
              "ffn.w_2": "output.dense", "res_ffn.norm": "output.LayerNorm"}
DISTILBERT_LAYER = {"self_attn.w_q": "attention.q_lin", "self_attn.w_k": "attention.k_lin",
                    "self_attn.w_v": "attention.v_lin", "self_attn.w_o": "attention.out_lin",
                    "res_attn.norm": "sa_layer_norm", "ffn.w_1": "ffn.lin1", "ffn.w_2": "ffn.lin2",
                    "res_ffn.norm": "output_layer_norm"}
# The masked-LM head: ours -> theirs (dense, LayerNorm, the output bias, the tied output matrix)
HEADS = {"bert": {"dense": "cls.predictions.transform.dense", "norm": "cls.predictions.transform.LayerNorm",
                  "bias": "cls.predictions.bias", "decoder": "cls.predictions.decoder"},
         "roberta": {"dense": "lm_head.dense", "norm": "lm_head.layer_norm", "bias": "lm_head.bias",
                     "decoder": "lm_head.decoder"},
         "distilbert": {"dense": "vocab_transform", "norm": "vocab_layer_norm", "bias": "vocab_projector.bias",
                        "decoder": "vocab_projector"}}
# What sits on top of the encoder and is not attention: left out (the card's source names them)
TASK_HEADS = {"pooler": "the pooler", "cls.seq_relationship": "the next-sentence head",
              "classifier": "the classifier", "pre_classifier": "the classifier", "qa_outputs": "the answer head"}
CREDITS = {"google-bert/": "BERT by Google (Devlin et al. 2019, 'BERT: Pre-training of Deep Bidirectional "
                           "Transformers for Language Understanding'), Apache-2.0",
           "FacebookAI/": "RoBERTa by Facebook AI (Liu et al. 2019, 'RoBERTa: A Robustly Optimized BERT "
                          "Pretraining Approach'), MIT license",
           "distilbert/": "DistilBERT by Hugging Face (Sanh et al. 2019, 'DistilBERT, a distilled version of BERT'), "
                          "Apache-2.0"}


def sizes(hf: dict, kind: str) -> dict:
    """config.json's sizes under our names, or HFImportError naming the missing ones."""
    names = (dict(N="n_layers", d_model="dim", d_ff="hidden_dim", h="n_heads", dropout="dropout",
                  attn_dropout="attention_dropout", activation="activation") if kind == "distilbert" else
             dict(N="num_hidden_layers", d_model="hidden_size", d_ff="intermediate_size", h="num_attention_heads",
                  dropout="hidden_dropout_prob", attn_dropout="attention_probs_dropout_prob", activation="hidden_act"))
    names.update(vocab_size="vocab_size", max_positions="max_position_embeddings")
    optional = {"dropout": 0.1, "attn_dropout": 0.1, "activation": "gelu"}
    missing = [theirs for ours, theirs in names.items() if hf.get(theirs) is None and ours not in optional]
    if missing:
        raise HFImportError(f"config.json lacks {', '.join(missing)}: it does not describe a whole model.")
    return {ours: hf.get(theirs, optional.get(ours)) for ours, theirs in names.items()}


def check_options(hf: dict, kind: str) -> None:
    """HFImportError listing every option of config.json the encoder-only model does not have (its sizes are
    checked when converting: a config.json without them is refused then)."""
    problems = []
    activation = hf.get("activation" if kind == "distilbert" else "hidden_act", "gelu")
    if activation not in ACTIVATIONS:
        problems.append(f"activation {activation!r}: only {', '.join(ACTIVATIONS)} are supported")
    if hf.get("position_embedding_type", "absolute") != "absolute":
        problems.append(f"position_embedding_type={hf['position_embedding_type']!r}: only absolute (learned) "
                        "positions are supported")
    if hf.get("is_decoder") or hf.get("add_cross_attention"):
        problems.append("is_decoder / add_cross_attention: this checkpoint is used as a decoder, not an encoder")
    if kind == "roberta" and hf.get("max_position_embeddings", 514) <= hf.get("pad_token_id", 1) + 1:
        problems.append("max_position_embeddings leaves no position after RoBERTa's pad_id + 1")
    if problems:
        raise HFImportError(f"This {NAMES[kind]} model uses options the explorer's encoder does not have:\n  - "
                            + "\n  - ".join(problems))


def special_tokens(hf_dir: Path, kind: str) -> dict:
    """{"cls": "[CLS]", ...}: the family's special tokens, as tokenizer_config.json / special_tokens_map.json name
    them when they do."""
    named = {**optional_json(hf_dir / "special_tokens_map.json"), **optional_json(hf_dir / "tokenizer_config.json")}
    out = {}
    for field, default in zip(SPECIAL_FIELDS, SPECIALS["roberta" if kind == "roberta" else "bert"]):
        token = named.get(f"{field}_token", default)
        out[field] = token.get("content", default) if isinstance(token, dict) else str(token or default)
    return out


def load_tokenizer(hf_dir: Path, vocab_size: int) -> JsonTokenizer:
    """tokenizer.json, or HFImportError."""
    if not (hf_dir / "tokenizer.json").exists():
        raise HFImportError(f"{hf_dir} has no tokenizer.json: the explorer reads BERT, RoBERTa and DistilBERT "
                            "tokenizers from it (a vocab.txt alone is not enough).")
    try:
        return JsonTokenizer((hf_dir / "tokenizer.json").read_text(encoding="utf-8"), vocab_size)
    except (ValueError, UnicodeDecodeError) as e:
        raise HFImportError(f"{hf_dir}/tokenizer.json: {e}") from None


def encoder_config(hf: dict, kind: str, tokenizer: JsonTokenizer, tokens: dict, mlm_head: bool) -> EncoderOnlyConfig:
    """Hugging Face's BertConfig, RobertaConfig or DistilBertConfig (as a dict) -> our EncoderOnlyConfig."""
    s = sizes(hf, kind)
    check_options(hf, kind)
    ids = {field: tokenizer.token_id(token) for field, token in tokens.items()}
    missing = [tokens[f] for f, i in ids.items() if i is None]
    if missing:
        raise HFImportError(f"tokenizer.json has no {', '.join(missing)}: it is not a {NAMES[kind]} tokenizer.")
    pad = hf.get("pad_token_id", ids["pad"])
    if pad != ids["pad"]:
        raise HFImportError(f"the tokenizer gives {tokens['pad']} the id {ids['pad']}, config.json {pad}: they do "
                            "not belong together.")
    offset = pad + 1 if kind == "roberta" else 0               # RobertaEmbeddings: positions from padding_idx + 1
    activation = ACTIVATIONS[s["activation"]]
    try:
        return EncoderOnlyConfig(
            vocab_size=s["vocab_size"], N=s["N"], d_model=s["d_model"], d_ff=s["d_ff"], h=s["h"],
            dropout=s["dropout"], attn_dropout=s["attn_dropout"], max_len=s["max_positions"] - offset,
            type_vocab_size=0 if kind == "distilbert" else hf.get("type_vocab_size", 2), pos_offset=offset,
            layer_norm_eps=1e-12 if kind == "distilbert" else hf.get("layer_norm_eps", 1e-12),
            activation=activation, head_activation="gelu" if kind == "roberta" else activation, mlm_head=mlm_head,
            tie_output=bool(hf.get("tie_word_embeddings", True)), pad_id=pad, unk_id=ids["unk"], cls_id=ids["cls"],
            sep_id=ids["sep"], mask_id=ids["mask"], pair_seps=2 if kind == "roberta" else 1)
    except (TypeError, ValueError) as e:
        raise HFImportError(f"config.json does not describe a model the explorer can build: {e}") from None


class EncoderConverter(Converter):
    """Converter with old LayerNorm names: gamma and beta (older BERT exports) for weight and bias."""

    def take_param(self, ours: str, theirs: str) -> None:
        """ours.weight/.bias <- theirs.weight/.bias (or .gamma/.beta)."""
        for p, old in (("weight", "gamma"), ("bias", "beta")):
            self.take(f"{ours}.{p}", self.pick([f"{theirs}.{p}", f"{theirs}.{old}"], f"{theirs}.{p}"))


def prefix_of(state: dict, kind: str) -> str:
    """"bert." as BertForMaskedLM stores the encoder, or "" as BertModel does."""
    return f"{kind}." if any(k.startswith(f"{kind}.") for k in state) else ""


def has_head(state: dict, kind: str) -> bool:
    """Whether the checkpoint has the masked-LM head (BertForMaskedLM) or not (BertModel, a classifier)."""
    dense = HEADS[kind]["dense"]
    return any(k.startswith(f"{dense}.") for k in state)


def left_out(state: dict, kind: str) -> list[str]:
    """The task heads on top of the encoder this checkpoint has (TASK_HEADS), in words."""
    p = prefix_of(state, kind)
    return sorted({what for key in state for name, what in TASK_HEADS.items()
                   if key.startswith(f"{name}.") or key.startswith(f"{p}{name}.")})


def convert_weights(state: dict, cfg: EncoderOnlyConfig, kind: str) -> dict:
    """A BERT, RoBERTa or DistilBERT state dict -> ours. Every tensor must be used, or named as a task head left
    out (TASK_HEADS), so nothing is silently dropped."""
    c, p = EncoderConverter(state), prefix_of(state, kind)
    word = f"{p}embeddings.word_embeddings.weight"
    c.take("embed.word.weight", word)
    c.take("embed.position.weight", f"{p}embeddings.position_embeddings.weight")
    if cfg.type_vocab_size:
        c.take("embed.token_type.weight", f"{p}embeddings.token_type_embeddings.weight")
    c.take_param("embed.norm", f"{p}embeddings.LayerNorm")
    ids = f"{p}embeddings.position_ids"                      # older exports store the buffer (0, 1, 2, ...)
    if ids in state:
        if not torch.equal(state[ids].flatten()[:cfg.max_len].long(), torch.arange(min(cfg.max_len,
                                                                                         state[ids].numel()))):
            raise HFImportError(f"{ids} is not 0, 1, 2, ...: positions numbered otherwise are not supported.")
        c.used.add(ids)
    layers, table = ((f"{p}transformer.layer", DISTILBERT_LAYER) if kind == "distilbert" else
                     (f"{p}encoder.layer", BERT_LAYER))
    for i in range(cfg.N):
        for ours, theirs in table.items():
            c.take_param(f"encoder.{i}.{ours}", f"{layers}.{i}.{theirs}")
    if cfg.mlm_head:
        head = HEADS[kind]
        c.take_param("head.dense", head["dense"])
        c.take_param("head.norm", head["norm"])
        bias = c.pick([head["bias"], f"{head['decoder']}.bias"], "output bias of the masked-LM head")
        c.take("head.bias", bias)
        c.tied(f"{head['decoder']}.bias", bias)
        if cfg.tie_output:
            c.tied(f"{head['decoder']}.weight", word)
        else:
            c.take("head.decoder.weight", f"{head['decoder']}.weight")
    c.used |= {k for k in state for name in TASK_HEADS if k.startswith(f"{name}.") or k.startswith(f"{p}{name}.")}
    return c.done(NAMES[kind])


def refuse(hf: dict) -> None:
    """HFImportError for what config.json asks that the encoder-only model does not have (before any download)."""
    kind = hf.get("model_type")
    if kind in NAMES:
        check_options(hf, kind)


def credit_of(source: str) -> str | None:
    """Whom to credit for the original checkpoints of each family, by the Hub owner."""
    return next((text for owner, text in CREDITS.items() if source.startswith(owner)), None)


def convert(hf_dir: Path, hf: dict, generation: dict, source: str | None = None, src_lang: str | None = None,
            tgt_lang: str | None = None) -> Converted:
    """A BERT, RoBERTa or DistilBERT download -> our config, weights and tokenizer (no languages: not a translator;
    src_lang and tgt_lang are ignored)."""
    kind = hf.get("model_type")
    if kind not in NAMES:
        raise HFImportError(f"config.json describes a '{kind}' model, not a BERT, RoBERTa or DistilBERT one.")
    vocab_size = sizes(hf, kind)["vocab_size"]
    state = read_weights(hf_dir)
    tokenizer = load_tokenizer(hf_dir, vocab_size)
    cfg = encoder_config(hf, kind, tokenizer, special_tokens(hf_dir, kind), has_head(state, kind))
    weights = convert_weights(state, cfg, kind)
    source = source or guess_source(hf_dir, hf)
    notes = ([] if cfg.mlm_head else ["encoder only: no masked-LM head"]) + [f"{what} left out" for what in
                                                                            left_out(state, kind)]
    return Converted(cfg, weights, tokenizer, f"{source} ({NAMES[kind]}{''.join(', ' + n for n in notes)})",
                     None, credit_of(source))


ARCH = Architecture("BERT / RoBERTa / DistilBERT", ("config.json", "tokenizer.json"), "google-bert/bert-base-uncased",
                    convert, refuse)
