"""What the importer tests share: tiny random transformers models built here (never downloaded), and the
comparison of our imported model with theirs: teacher-forced logits, every attention map, greedy output."""
from __future__ import annotations

import io
import json
import shutil
import string

import numpy as np
import sentencepiece as spm
import torch
from sacremoses import MosesTokenizer
from tokenizers import Tokenizer as HFTokenizer, models, pre_tokenizers, trainers

import core
from tests.helpers import CORPUS

SENTENCES = ["the quick brown fox jumps over the lazy dog", "two young girls are playing",
             "a man in a blue shirt is standing on a ladder and the weather is nice"]
TARGET = "der schnelle braune Fuchs springt über den faulen Hund"
TINY = dict(d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
            encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=128, dropout=0.0, attention_dropout=0.0,
            activation_dropout=0.0)
LOGITS_ATOL, MAPS_ATOL = 1e-4, 1e-5          # fp32, as the project promises for imported models
EXTRA_EN = ['the well-known "dogs" & the cats aren\'t here.', "it costs $5, doesn't it?"]


class Evil:
    """Unpickling this creates a file: proof that opening a pickle runs code."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return open, (str(self.path), "w")


def edited_copy(folder, to, name: str, **changes):
    """A copy of a model's folder at `to` whose JSON file `name` has these keys changed: a variant to be refused."""
    shutil.copytree(folder, to)
    (to / name).write_text(json.dumps({**json.loads((to / name).read_text()), **changes}))
    return to


def english_german() -> tuple[list[str], list[str]]:
    """The test corpus split into its English and its German lines."""
    german = [s for s in CORPUS if any(w in s for w in ("der", "ein", "zwei", "das", "Grüße"))]
    return [s for s in CORPUS if s not in german], german


def train_spm(lines, vocab_size: int = 100, model_type: str = "unigram") -> bytes:
    """A tiny SentencePiece model (serialized) of these lines."""
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines * 20), model_writer=buf, vocab_size=vocab_size,
                                   model_type=model_type, hard_vocab_limit=False, minloglevel=2)
    return buf.getvalue()


@torch.no_grad()
def randomize(model: torch.nn.Module, seed: int = 0) -> torch.nn.Module:
    """Large random weights (LayerNorm gains around 1): peaked attention, so that a wrong mapping shows."""
    g = torch.Generator().manual_seed(seed)
    for name, p in model.named_parameters():
        if "embed_positions" in name:
            continue
        noise = torch.randn(p.shape, generator=g) * (0.3 if p.dim() > 1 else 0.2)
        p.copy_(noise + (1.0 if name.endswith("norm.weight") else 0.0))
    return model.eval()


@torch.no_grad()
def differences(tm: core.TranslationModel, hf, src: str, tgt: str) -> dict:
    """Max |ours - theirs| of the teacher-forced logits and of every kind of attention map, on our ids."""
    r = tm.attend(src, tgt)
    src_ids = torch.tensor([tm.source_ids(src)])
    dec_in = torch.tensor([[tm.cfg.bos_id] + tm.target_ids(tgt)])
    # use_cache=False: transformers' FSMT leaves out the causal mask when it expects to decode step by step
    out = hf(input_ids=src_ids, decoder_input_ids=dec_in, output_attentions=True, use_cache=False)
    diff = {"logits": (tm.model(src_ids, dec_in) - out.logits).abs().max().item()}
    for kind, theirs in [("enc_self", out.encoder_attentions), ("dec_self", out.decoder_attentions),
                         ("cross", out.cross_attentions)]:
        theirs = torch.cat(theirs, 0).numpy()                  # (layers, h, rows, cols)
        ours = getattr(r, kind)
        assert ours.shape == theirs.shape, kind
        diff[kind] = float(np.abs(ours - theirs).max())
    return diff


def assert_matches_transformers(tm: core.TranslationModel, hf, src: str, tgt: str = TARGET) -> None:
    """Our logits and every attention map equal transformers' within LOGITS_ATOL and MAPS_ATOL."""
    diff = differences(tm, hf, src, tgt)
    assert diff["logits"] <= LOGITS_ATOL, diff
    assert max(diff[k] for k in ("enc_self", "dec_self", "cross")) <= MAPS_ATOL, diff


def assert_greedy_matches_generate(tm: core.TranslationModel, hf, tok, sentences: list[str]) -> None:
    """Our greedy output equals generate's token by token (with and without the cache), and so does its text."""
    for s in sentences:
        src_ids = tm.source_ids(s)
        theirs = generate(hf, src_ids, greedy_length(tm, src_ids), tm.cfg.eos_id)
        assert len(theirs) > 2
        assert core.greedy_search(tm.model, torch.tensor([src_ids]))[0] == theirs
        assert core.greedy_search(tm.model, torch.tensor([src_ids]), use_cache=False)[0] == theirs
        assert tm.translate(s, beam=1) == tok.decode(theirs, skip_special_tokens=True)


def assert_greedy_with_language_token(tm: core.TranslationModel, hf, tok, sentences: list[str]) -> None:
    """A many-to-many model's greedy output equals generate's with the target language forced first (with and
    without the cache), and its text leaves the language token out; beam search forces it too."""
    for s in sentences:
        src_ids = tm.source_ids(s)
        theirs = generate(hf, src_ids, greedy_length(tm, src_ids), tm.cfg.eos_id,
                          forced_bos_token_id=tm.cfg.tgt_prefix_id)
        assert theirs[0] == tm.cfg.tgt_prefix_id and len(theirs) > 2
        assert core.greedy_search(tm.model, torch.tensor([src_ids]))[0] == theirs
        assert core.greedy_search(tm.model, torch.tensor([src_ids]), use_cache=False)[0] == theirs
        # the text without the language token (transformers 5's M2M100Tokenizer would keep "__de__" in it)
        assert tm.translate(s, beam=1) == tok.decode(theirs[1:], skip_special_tokens=True)
    assert tm.translate(sentences[0], beam=3)


def generate(hf, src_ids: list[int], max_length: int, eos: int, **kwargs) -> list[int]:
    """transformers' greedy output after the decoder start, cut at </s> (forced at max_length, as our limit does)."""
    with torch.no_grad():
        seq = hf.generate(torch.tensor([src_ids]), num_beams=1, do_sample=False, max_length=max_length,
                          forced_eos_token_id=eos, **kwargs)[0, 1:].tolist()
    return seq[: seq.index(eos)] if eos in seq else seq


def greedy_length(tm: core.TranslationModel, src_ids: list[int]) -> int:
    """generate's max_length that matches our greedy search's limit (source + 50, </s> and the start included)."""
    return min(len(src_ids) + 50, tm.cfg.max_len - 1) + 1


# ---- tiny models of each architecture, in the Hub's format (transformers is imported where they are built) ----

def nllb_tokenizer(folder):
    """A tiny NLLB tokenizer saved as tokenizer.json (BPE over the test corpus, then the 202 language codes)."""
    from transformers import NllbTokenizer
    bpe = HFTokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    bpe.train_from_iterator(CORPUS * 10, trainers.BpeTrainer(vocab_size=200,
                                                             special_tokens=["<s>", "<pad>", "</s>", "<unk>"]))
    model = json.loads(bpe.to_str())["model"]
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split()) for m in model["merges"]]
    tok = NllbTokenizer(vocab=model["vocab"], merges=merges)
    tok.save_pretrained(folder)
    return len(tok)


def m2m100_tokenizer(folder):
    """A tiny M2M100 tokenizer: sentencepiece.bpe.model and vocab.json in fairseq's order (<s> <pad> </s> <unk>)."""
    proto = train_spm(CORPUS, vocab_size=120, model_type="bpe")
    (folder / "sentencepiece.bpe.model").write_bytes(proto)
    sp = spm.SentencePieceProcessor(model_proto=proto)
    pieces = [sp.id_to_piece(i) for i in range(sp.get_piece_size()) if not (sp.is_control(i) or sp.is_unknown(i))]
    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3, **{p: i + 4 for i, p in enumerate(pieces)}}
    (folder / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    return len(vocab) + 100 + 8                          # + the language tokens + 8 "madeup words", as M2M100


def build_m2m100(folder, kind: str, seed: int = 0, max_positions: int = 128):
    """A tiny random M2M100ForConditionalGeneration with an NLLB or M2M100 tokenizer, in the Hub's format."""
    from transformers import M2M100Config, M2M100ForConditionalGeneration
    folder.mkdir(parents=True)
    n = nllb_tokenizer(folder) if kind == "nllb" else m2m100_tokenizer(folder)
    V = n + 2 if kind == "nllb" else n                  # NLLB's model has ids its tokenizer never makes
    config = M2M100Config(vocab_size=V, pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2,
                          scale_embedding=True, encoder_layerdrop=0.0, decoder_layerdrop=0.0,
                          **{**TINY, "max_position_embeddings": max_positions})
    torch.manual_seed(seed)
    model = randomize(M2M100ForConditionalGeneration(config), seed)
    if kind == "m2m100":      # small language-token rows: the random model then writes text, not language tokens
        with torch.no_grad():  # (transformers' M2M100Tokenizer keeps those in decoded text; we leave them out)
            model.model.shared.weight[n - 108:] *= 0.01
    model.save_pretrained(folder)
    return folder


def bpe(lines, lang: str, size: int) -> dict:
    """A BPE model ({"vocab", "merges"}) of these lines' Moses tokens, with fairseq's specials 0..3."""
    moses = MosesTokenizer(lang)
    tokens = [" ".join(moses.tokenize(line, aggressive_dash_splits=True, escape=True)) for line in lines]
    tok = HFTokenizer(models.BPE(unk_token="<unk>", end_of_word_suffix="</w>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.train_from_iterator(tokens * 10, trainers.BpeTrainer(vocab_size=size, end_of_word_suffix="</w>",
                                                             special_tokens=["<s>", "<pad>", "</s>", "<unk>"]))
    model = json.loads(tok.to_str())["model"]
    return {"vocab": model["vocab"], "merges": [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]}


def build_fsmt(folder, seed: int = 0, max_positions: int = 128):
    """A tiny random FSMTForConditionalGeneration with its merges.txt, vocab-src.json and vocab-tgt.json."""
    from transformers import FSMTConfig, FSMTForConditionalGeneration
    folder.mkdir(parents=True)
    english, german = english_german()
    src, tgt = bpe(english + EXTRA_EN, "en", 260), bpe(german, "de", 200)
    merges = src["merges"] + [m for m in tgt["merges"] if m not in src["merges"]]
    (folder / "merges.txt").write_text("".join(f"{m}\n" for m in merges), encoding="utf-8")
    for name, model in [("vocab-src.json", src), ("vocab-tgt.json", tgt)]:
        (folder / name).write_text(json.dumps(model["vocab"], ensure_ascii=False), encoding="utf-8")
    (folder / "tokenizer_config.json").write_text(json.dumps({"langs": ["en", "de"], "do_lower_case": False}))
    config = FSMTConfig(langs=["en", "de"], src_vocab_size=len(src["vocab"]), tgt_vocab_size=len(tgt["vocab"]),
                        pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2,
                        forced_eos_token_id=2, scale_embedding=True, encoder_layerdrop=0.0, decoder_layerdrop=0.0,
                        **{**TINY, "max_position_embeddings": max_positions})
    torch.manual_seed(seed)
    randomize(FSMTForConditionalGeneration(config), seed).save_pretrained(folder)
    return folder


def mbart50_tokenizer(folder) -> int:
    """A tiny mBART-50 tokenizer: transformers' MBart50Tokenizer over a tiny SentencePiece model, saved as
    tokenizer.json, and the SentencePiece model itself as sentencepiece.bpe.model (the Hub has both)."""
    from transformers import MBart50Tokenizer
    proto = train_spm(CORPUS, vocab_size=120)
    (folder / "sentencepiece.bpe.model").write_bytes(proto)
    sp = spm.SentencePieceProcessor(model_proto=proto)
    pieces = [(sp.id_to_piece(i), sp.get_score(i)) for i in range(sp.get_piece_size())]
    tok = MBart50Tokenizer(vocab=pieces, src_lang="en_XX", tgt_lang="de_DE")
    tok.save_pretrained(folder)
    return len(tok)


def build_mbart(folder, seed: int = 0, max_positions: int = 128):
    """A tiny random MBartForConditionalGeneration with an mBART-50 tokenizer, in the Hub's format."""
    from transformers import MBartConfig, MBartForConditionalGeneration
    folder.mkdir(parents=True)
    n = mbart50_tokenizer(folder)
    config = MBartConfig(vocab_size=n, pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2,
                         forced_eos_token_id=2, scale_embedding=True, activation_function="gelu",
                         encoder_layerdrop=0.0, decoder_layerdrop=0.0,
                         **{**TINY, "max_position_embeddings": max_positions})
    torch.manual_seed(seed)
    model = randomize(MBartForConditionalGeneration(config), seed)
    with torch.no_grad():     # positions are learned here: random too, so a wrong offset shows
        for stack in (model.model.encoder, model.model.decoder):
            stack.embed_positions.weight.normal_(0, 0.3)
        model.model.shared.weight[n - 53:] *= 0.01      # small language rows: the random model writes text
        model.final_logits_bias.normal_(0, 0.5)
    model.save_pretrained(folder)
    return folder


T5_PROMPT = "translate English to German: "
# Three T5 variants, from transformers' own configs: the original (ReLU, tied output scaled by d_model^-0.5),
# mT5 / T5 v1.1 (gated GELU, an untied lm_head, heads narrower than d_model / h) and Flan-T5 (as v1.1, with fewer
# decoder layers and buckets, so that long distances share the logarithmic buckets and the last one)
T5_VARIANTS = {
    "t5": dict(model_type="t5", feed_forward_proj="relu", tie_word_embeddings=True, d_kv=8),
    "mt5": dict(model_type="mt5", feed_forward_proj="gated-gelu", tie_word_embeddings=False, d_kv=6),
    "flan-t5": dict(model_type="t5", feed_forward_proj="gated-gelu", tie_word_embeddings=False, d_kv=8,
                    num_decoder_layers=1, relative_attention_num_buckets=8, relative_attention_max_distance=12),
}


T5_UNUSED = "decoder.block.0.layer.1.EncDecAttention.relative_attention_bias.weight"


def t5_spiece(lines, vocab_size: int = 120) -> bytes:
    """A tiny SentencePiece model numbered as T5's spiece.model: <pad> 0, </s> 1, <unk> 2, no <s>."""
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines * 20), model_writer=buf, vocab_size=vocab_size,
                                   pad_id=0, eos_id=1, unk_id=2, bos_id=-1, character_coverage=1.0,
                                   hard_vocab_limit=False, minloglevel=2)
    return buf.getvalue()


def build_t5(folder, variant: str = "t5", seed: int = 0):
    """A tiny random T5ForConditionalGeneration (or MT5) with a T5 spiece.model, in the Hub's format (an untied
    lm_head stored in model.safetensors, as T5 v1.1, mT5 and Flan-T5 have it)."""
    from safetensors.torch import load_file, save_file
    from transformers import MT5Config, MT5ForConditionalGeneration, T5Config, T5ForConditionalGeneration
    folder.mkdir(parents=True)
    from core.studies.paper_figures import FIGURES     # the pages' own sentences: no <unk> in them
    proto = t5_spiece(CORPUS + [T5_PROMPT + "the house", *(sentence for _, sentence in FIGURES.values()),
                                string.ascii_letters + string.digits + string.punctuation])
    (folder / "spiece.model").write_bytes(proto)
    n = spm.SentencePieceProcessor(model_proto=proto).get_piece_size()
    opts = dict(T5_VARIANTS[variant])
    config_class, model_class = ((MT5Config, MT5ForConditionalGeneration) if opts.pop("model_type") == "mt5"
                                 else (T5Config, T5ForConditionalGeneration))
    tied = opts["tie_word_embeddings"]
    config = config_class(vocab_size=n + 100 + 8, d_model=32, d_ff=64, num_layers=2, num_heads=4, dropout_rate=0.0,
                          pad_token_id=0, eos_token_id=1, decoder_start_token_id=0, **opts)
    torch.manual_seed(seed)
    model = randomize(model_class(config), seed)
    with torch.no_grad():
        for stack in (model.encoder, model.decoder):   # a strong position bias, so that a wrong bucket shows
            stack.block[0].layer[0].SelfAttention.relative_attention_bias.weight.normal_(0, 2.0)
        model.shared.weight[[0, 2]] *= 0.01            # the random model should not write <pad> nor <unk>
    model.save_pretrained(folder)
    state = load_file(folder / "model.safetensors")
    if variant == "t5":          # as the original checkpoints: the tied copies stored too, and an unused table of
        state[T5_UNUSED] = torch.randn(config.relative_attention_num_buckets, config.num_heads)   # the first cross
        for alias in ("encoder.embed_tokens.weight", "decoder.embed_tokens.weight", "lm_head.weight"):
            state[alias] = state["shared.weight"].clone()
    if not tied:                                       # transformers 5 ties in memory; the Hub's files do not
        head = torch.randn(model.shared.weight.shape, generator=torch.Generator().manual_seed(seed + 1)) * 0.3
        head[[0, 2]] *= 0.01
        state["lm_head.weight"] = head.contiguous()
        hf_config = json.loads((folder / "config.json").read_text())
        hf_config["tie_word_embeddings"] = False
        hf_config.pop("scale_decoder_outputs", None)   # as the Hub's configs say it: tie_word_embeddings alone
        (folder / "config.json").write_text(json.dumps(hf_config))
    save_file(state, folder / "model.safetensors", metadata={"format": "pt"})
    return folder
