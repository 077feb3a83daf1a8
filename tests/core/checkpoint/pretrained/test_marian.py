"""Imported OPUS-MT (Marian) models give the same attention maps and greedy output as transformers' MarianMTModel.

Everything is built here, offline: tiny SentencePiece models and a tiny random MarianMTModel.
"""
import io
import json
import shutil
import warnings

import numpy as np
import pytest
import torch

transformers = pytest.importorskip("transformers",
                                   reason="transformers is not installed (pip install -r requirements-dev.txt)")
import sentencepiece as spm  # noqa: E402
from safetensors import safe_open  # noqa: E402
from safetensors.torch import save_file  # noqa: E402
from transformers import GenerationConfig, MarianConfig, MarianMTModel, MarianTokenizer  # noqa: E402

import core  # noqa: E402
from tests.helpers import CORPUS  # noqa: E402
from core.checkpoint.pretrained import HFImportError as MarianImportError  # noqa: E402
from core.checkpoint.pretrained import convert_folder as import_marian  # noqa: E402
from scripts.import_hf import main  # noqa: E402

SENTENCES = ["the quick brown fox jumps over the lazy dog", "two young girls are playing",
             "a man in a blue shirt is standing on a ladder and the weather is nice"]
TARGET = "der schnelle braune Fuchs springt über den faulen Hund"


def _spm(lines) -> bytes:
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines * 20), model_writer=buf, vocab_size=100,
                                   model_type="unigram", hard_vocab_limit=False, minloglevel=2)
    return buf.getvalue()


@pytest.fixture(scope="module")
def spm_files():
    """(source.spm, target.spm, vocab.json dict) as OPUS-MT has them: </s> 0, <unk> 1, pieces, <pad> last."""
    german = [s for s in CORPUS if any(w in s for w in ("der", "ein", "zwei", "das", "Grüße"))]
    src, tgt = _spm([s for s in CORPUS if s not in german]), _spm(german)
    pieces = []
    for proto in (src, tgt):
        sp = spm.SentencePieceProcessor(model_proto=proto)
        pieces += [sp.id_to_piece(i) for i in range(sp.get_piece_size())
                   if not (sp.is_control(i) or sp.is_unknown(i)) and sp.id_to_piece(i) not in pieces]
    vocab = {"</s>": 0, "<unk>": 1, **{p: i + 2 for i, p in enumerate(pieces)}}
    vocab["<pad>"] = len(vocab)
    return src, tgt, vocab


def build_marian(folder, spm_files, shared: bool, seed: int = 0):
    """A tiny random MarianMTModel saved in the Hugging Face format (as downloaded from the Hub)."""
    src, tgt, vocab = spm_files
    V, pad = len(vocab), vocab["<pad>"]
    config = MarianConfig(
        vocab_size=V, decoder_vocab_size=V, d_model=32, encoder_layers=2, decoder_layers=2,
        encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64,
        max_position_embeddings=128, activation_function="swish" if shared else "relu", scale_embedding=True,
        pad_token_id=pad, decoder_start_token_id=pad, eos_token_id=0, forced_eos_token_id=0, dropout=0.0,
        share_encoder_decoder_embeddings=shared, tie_word_embeddings=shared)
    torch.manual_seed(seed)
    model = MarianMTModel(config).eval()
    with torch.no_grad():   # large random weights: peaked attention, so a wrong mapping shows
        for name, p in model.named_parameters():
            if "embed_positions" not in name:
                p.copy_(torch.randn_like(p) * (0.3 if p.dim() > 1 else 0.2) + name.endswith("norm.weight"))
        model.final_logits_bias.normal_(0, 1.0)
        model.final_logits_bias[0, pad] = 10.0     # <pad> would win every step were it not forbidden
    model.generation_config = GenerationConfig(  # what OPUS-MT's generation_config.json says
        bad_words_ids=[[pad]], decoder_start_token_id=pad, eos_token_id=0, forced_eos_token_id=0,
        pad_token_id=pad, max_length=128, num_beams=1)
    model.save_pretrained(folder, safe_serialization=True)
    (folder / "source.spm").write_bytes(src)
    (folder / "target.spm").write_bytes(tgt)
    (folder / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    return folder


@pytest.fixture(scope="module", params=["shared", "separate"])
def marian(request, spm_files, tmp_path_factory):
    """(hf_dir, transformers model with eager attention, MarianTokenizer, our imported TranslationModel)."""
    root = tmp_path_factory.mktemp(f"marian-{request.param}")
    hf_dir = build_marian(root / "opus-mt-en-de", spm_files, shared=request.param == "shared")
    hf = MarianMTModel.from_pretrained(hf_dir, attn_implementation="eager").eval()
    with warnings.catch_warnings():   # "Recommended: pip install sacremoses" (punctuation normalisation)
        warnings.simplefilter("ignore")
        tok = MarianTokenizer(str(hf_dir / "source.spm"), str(hf_dir / "target.spm"), str(hf_dir / "vocab.json"))
    out = import_marian(hf_dir, root / "ckpt", dtype=torch.float32)
    return hf_dir, hf, tok, core.load_checkpoint(out)


def test_tokenizer_matches_marian_tokenizer(marian):
    _, _, tok, tm = marian
    for s in SENTENCES + ["Zebras jump: 42!"]:                    # unknown characters become <unk>
        assert tm.tokenizer.encode(s, "src") + [tm.cfg.eos_id] == tok(s)["input_ids"]
    assert tm.tokenizer.encode(TARGET, "tgt") + [tm.cfg.eos_id] == tok(text_target=TARGET)["input_ids"]


def test_config_and_card(marian):
    hf_dir, hf, _, tm = marian
    cfg = tm.cfg
    assert (cfg.pad_id, cfg.bos_id, cfg.eos_id) == (hf.config.pad_token_id, hf.config.pad_token_id, 0)
    assert cfg.pe_layout == "concat" and cfg.final_logits_bias and cfg.forbid_pad_output and cfg.norm == "post"
    assert cfg.share_embeddings == hf.config.share_encoder_decoder_embeddings and cfg.max_len == 128
    assert tm.card.trained_here is False
    assert tm.card.source == "Helsinki-NLP/opus-mt-en-de (Marian), converted from the Hugging Face format"
    assert tm.card.extra["languages"] == {"source": "en", "target": "de"}
    assert tm.card.extra["original_config"] == json.loads((hf_dir / "config.json").read_text())


@pytest.mark.parametrize("tgt", [TARGET, None])
def test_attention_maps_match_transformers(marian, tgt):
    _, hf, tok, tm = marian
    for s in SENTENCES:
        r = tm.attend(s, tgt)
        tgt_ids = [tm.tokenizer.vocab[p] for p in r.tgt_tokens]        # decoder inputs: <pad> + target
        assert r.tgt_tokens[0] == "<pad>" and r.out_tokens[-1] == "</s>"
        with torch.no_grad():
            out = hf(input_ids=torch.tensor([tok(s)["input_ids"]]), decoder_input_ids=torch.tensor([tgt_ids]),
                     output_attentions=True)
        for ours, theirs in [(r.enc_self, out.encoder_attentions), (r.dec_self, out.decoder_attentions),
                             (r.cross, out.cross_attentions)]:
            theirs = torch.cat(theirs, 0).numpy()
            assert ours.shape == theirs.shape
            np.testing.assert_allclose(ours, theirs, atol=1e-5, rtol=0)
        logits = tm.model(torch.tensor([tok(s)["input_ids"]]), torch.tensor([tgt_ids]))
        torch.testing.assert_close(logits, out.logits, atol=1e-4, rtol=1e-4)


def _generate(hf, src_ids, max_length):
    with torch.no_grad():
        seq = hf.generate(torch.tensor([src_ids]), num_beams=1, do_sample=False, max_length=max_length)[0, 1:].tolist()
    return seq[: seq.index(0)] if 0 in seq else seq


@pytest.mark.slow
def test_greedy_matches_generate(marian):
    _, hf, tok, tm = marian
    for i, s in enumerate(SENTENCES[:2]):
        src_ids = tok(s)["input_ids"]
        limit = min(len(src_ids) + 50, tm.cfg.max_len - 1)     # our greedy's length limit, </s> included
        theirs = _generate(hf, src_ids, max_length=limit + 1)  # + the decoder start token
        src = torch.tensor([src_ids])
        assert len(theirs) > 2 and tm.cfg.pad_id not in theirs
        assert core.greedy_search(tm.model, src)[0] == theirs
        assert tm.translate(s, beam=1) == tok.decode(theirs, skip_special_tokens=True)
        if i == 0:
            assert core.greedy_search(tm.model, src, use_cache=False)[0] == theirs   # <pad> start, full mask
            tm.cfg.forbid_pad_output = False       # the option matters: without it, <pad> (bias +10) wins
            try:
                assert core.greedy_search(tm.model, src)[0] != theirs
            finally:
                tm.cfg.forbid_pad_output = True
            assert tm.translate(s, beam=3)         # beam search runs on a Marian model too


def test_fp16_default_and_existing_output(marian, tmp_path):
    hf_dir, _, _, tm32 = marian
    out = import_marian(hf_dir, tmp_path / "ckpt16")
    with safe_open(str(out / "model.safetensors"), "pt") as f:
        assert {f.get_tensor(k).dtype for k in f.keys()} == {torch.float16}
    r16, r32 = core.load_checkpoint(out).attend(SENTENCES[0], TARGET), tm32.attend(SENTENCES[0], TARGET)
    np.testing.assert_allclose(r16.cross, r32.cross, atol=2e-2)
    with pytest.raises(MarianImportError, match="already exists"):
        import_marian(hf_dir, out)


@pytest.mark.parametrize("change, match", [
    ({"normalize_before": True}, "pre-norm"),
    ({"static_position_embeddings": False}, "learned position"),
    ({"normalize_embedding": True}, "LayerNorm on the embeddings"),
    ({"activation_function": "gelu"}, "only swish and relu"),
    ({"decoder_vocab_size": 7}, "separate source and target vocabularies"),
    ({"model_type": "bart"}, "'bart' model; the explorer reads"),
])
def test_unsupported_configs_are_readable_errors(marian, tmp_path, change, match):
    hf_dir = marian[0]
    folder = tmp_path / "changed"
    shutil.copytree(hf_dir, folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, **change}))
    with pytest.raises(MarianImportError, match=match):
        import_marian(folder, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_older_exports_with_every_tied_copy_and_the_position_table(marian, tmp_path):
    """Older safetensors files store tied matrices under each name, and the sinusoid tables: both accepted."""
    hf_dir, hf, _, tm = marian
    folder = tmp_path / "older"
    shutil.copytree(hf_dir, folder)
    state = {k: v.clone().contiguous() for k, v in hf.state_dict().items()}    # every name, positions included
    assert "model.encoder.embed_positions.weight" in state
    save_file(state, str(folder / "model.safetensors"))
    older = core.load_checkpoint(import_marian(folder, tmp_path / "out", dtype=torch.float32))
    np.testing.assert_array_equal(older.attend(SENTENCES[0]).cross, tm.attend(SENTENCES[0]).cross)
    state["model.decoder.embed_positions.weight"][5:] += 0.1                   # as if learned
    save_file(state, str(folder / "model.safetensors"))
    with pytest.raises(MarianImportError, match="not the fixed sinusoid table"):
        import_marian(folder, tmp_path / "out2")


def test_add_bias_logits_means_the_final_logits_bias(marian, tmp_path):
    """Old configs carry add_bias_logits; transformers ignores it and always adds final_logits_bias, as we do."""
    folder = tmp_path / "old-config"
    shutil.copytree(marian[0], folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "add_bias_logits": True, "normalize_before": False}))
    assert core.load_checkpoint(import_marian(folder, tmp_path / "out")).cfg.final_logits_bias


def test_missing_folder_and_files(marian, tmp_path):
    with pytest.raises(MarianImportError, match="There is no folder .* hf download"):
        import_marian(tmp_path / "nowhere", tmp_path / "out")
    folder = tmp_path / "partial"
    shutil.copytree(marian[0], folder)
    (folder / "target.spm").unlink()
    with pytest.raises(MarianImportError, match="lacks target.spm"):
        import_marian(folder, tmp_path / "out")


def test_causal_mask_keeps_a_pad_start_token_and_nothing_else_changes():
    tgt = torch.tensor([[2, 5, 6, 0, 0], [0, 5, 0, 0, 0]])    # ours (<s> = 2), Marian's (<pad> = 0 starts)
    mask = core.model.transformer.causal_mask(tgt, pad_id=0)[:, 0]          # (B, T, T)
    old = (tgt != 0)[:, None, :] & torch.ones(5, 5, dtype=torch.bool).tril()
    assert torch.equal(mask[0], old[0])                         # our models: unchanged
    assert mask[1, :, 0].all() and not mask[1, :, 2:].any()     # the start is kept, later padding masked


def test_the_command_converts_a_folder_into_out(marian, tmp_path, capsys):
    main([str(marian[0]), str(tmp_path / "out"), "--fp32"])
    assert "imported" in capsys.readouterr().out
    assert core.load_checkpoint(tmp_path / "out").card.source.endswith("converted from the Hugging Face format")
