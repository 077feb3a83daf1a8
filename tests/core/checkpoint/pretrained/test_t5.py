"""Imported T5, mT5 and Flan-T5 models agree with transformers' T5ForConditionalGeneration (MT5...): the token ids
with the task prompt, the teacher-forced logits, every attention map (the position bias included), greedy output, and
the maps recorded while decoding step by step. Each variant is a tiny random model built here from transformers'
own config (core/checkpoint/pretrained/t5.py says what each option is); nothing is downloaded."""
import shutil

import pytest
import torch

transformers = pytest.importorskip("transformers",
                                   reason="transformers is not installed (pip install -r requirements-dev.txt)")
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer  # noqa: E402

import core  # noqa: E402
from core.checkpoint.pretrained import HFImportError, open_pretrained  # noqa: E402
from core.checkpoint.pretrained import convert_folder as import_model  # noqa: E402
from core.model.position_bias import relative_bucket  # noqa: E402
from tests.core.checkpoint.pretrained.fake_hub import serving  # noqa: E402
from tests.core.checkpoint.pretrained.hf_models import (SENTENCES, T5_PROMPT, T5_UNUSED, TARGET,  # noqa: E402
                                                        assert_greedy_matches_generate,
                                                        assert_matches_transformers, build_t5, differences,
                                                        edited_copy)

LONG = " ".join(SENTENCES)          # distances beyond the exact buckets (and beyond Flan-T5-tiny's max_distance)


@pytest.fixture(scope="module", params=["t5", "mt5", "flan-t5"])
def imported(request, tmp_path_factory):
    """(variant, hf_dir, transformers model with eager attention, their tokenizer, our imported TranslationModel)."""
    root = tmp_path_factory.mktemp(request.param)
    hf_dir = build_t5(root / f"{request.param}-tiny", request.param)
    hf = AutoModelForSeq2SeqLM.from_pretrained(hf_dir, attn_implementation="eager").eval()
    tok = AutoTokenizer.from_pretrained(hf_dir)
    tm = core.load_checkpoint(import_model(hf_dir, root / "ckpt", dtype=torch.float32))
    return request.param, hf_dir, hf, tok, tm


def test_the_prompt_and_the_sentence_have_their_tokenizers_ids(imported):
    _, _, _, tok, tm = imported
    for s in SENTENCES + [TARGET, "Zebras jump: 42!"]:
        assert tm.source_ids(s) == tok(T5_PROMPT + s)["input_ids"]                 # prompt + pieces + </s>
        assert tm.target_ids(s) + [tm.cfg.eos_id] == tok(text_target=s)["input_ids"]


def test_the_prompt_is_marked_in_the_result(imported):
    tm = imported[-1]
    r = tm.attend(SENTENCES[1])
    n = len(tm.cfg.src_prompt_ids)
    assert r.src_prompt == n > 0 and tm.tokenizer.decode(tm.cfg.src_prompt_ids, "src") == T5_PROMPT.strip()
    assert r.src_tokens[n:-1] == tm.tokenizer.pieces(tm.tokenizer.encode(SENTENCES[1]), "src")
    assert r.src == SENTENCES[1]                                                 # the sentence, without the prompt


@pytest.mark.parametrize("src", SENTENCES + [LONG])
def test_logits_and_attention_match_transformers(imported, src):
    assert_matches_transformers(imported[-1], imported[2], src)
    diff = differences(imported[-1], imported[2], src, TARGET)
    assert max(diff.values()) <= 1e-5, diff          # T5's logits too: its attention is written out as theirs is


@pytest.mark.slow
def test_greedy_matches_generate_with_and_without_the_cache(imported):
    _, _, hf, tok, tm = imported
    assert_greedy_matches_generate(tm, hf, tok, SENTENCES[:2])
    assert tm.trace(SENTENCES[0], beam=3).translation == tm.translate(SENTENCES[0], beam=3)   # beam search too


def test_the_maps_recorded_while_decoding_are_the_teacher_forced_ones(imported):
    """The step-by-step recorder recomputes each step's attention: with T5's bias and without 1/sqrt(d_k)."""
    tm = imported[-1]
    tr = tm.trace(SENTENCES[0], beam=1)
    assert tr.translation == tm.translate(SENTENCES[0], beam=1)
    dec_in = torch.tensor([[tm.cfg.bos_id] + tr.tokens])
    with torch.no_grad():
        _, attns = tm.model(torch.tensor([tm.source_ids(SENTENCES[0])]), dec_in, need_weights=True)
    cross, dec_self = (torch.cat(maps).numpy() for maps in (attns.cross, attns.dec_self))   # (N_dec, h, T, ...)
    for t, (step, i) in enumerate(tr.search.path()[: len(tr.tokens) + 1]):
        hyp = tr.steps[step].hyps[i]
        assert abs(hyp.cross - cross[:, :, t]).max() < 1e-4            # an incremental pass: its own rounding
        assert abs(hyp.dec_self - dec_self[:, :, t, : t + 1]).max() < 1e-4


def test_config_and_card(imported):
    variant, _, _, _, tm = imported
    cfg, gated = tm.cfg, variant != "t5"
    assert (cfg.positions, cfg.norm, cfg.rms_norm, cfg.bias, cfg.scale_scores, cfg.scale_embeddings) == \
        ("relative", "pre", True, False, False, False)
    assert (cfg.gated_ffn, cfg.tie_output, cfg.scale_output) == (gated, not gated, not gated)
    assert (cfg.bos_id, cfg.eos_id, cfg.pad_id) == (0, 1, 0)
    assert cfg.d_k == (6 if variant == "mt5" else 8) and cfg.N_dec == (1 if variant == "flan-t5" else 2)
    assert tm.card.extra["languages"] == {"source": "en", "target": "de"}
    assert "prompt 'translate English to German:'" in tm.card.source and "Google" in tm.card.credit


def test_another_direction_is_another_prompt(imported, tmp_path):
    _, hf_dir, _, tok, _ = imported
    tm = core.load_checkpoint(import_model(hf_dir, tmp_path / "fr", src_lang="en", tgt_lang="French"))
    assert tm.source_ids("the dog") == tok("translate English to French: the dog")["input_ids"]
    assert tm.card.extra["languages"] == {"source": "en", "target": "fr"}
    with pytest.raises(HFImportError, match="'zz-not' is not a language T5's prompt can name"):
        import_model(hf_dir, tmp_path / "bad", tgt_lang="zz-not")


def test_an_ffn_the_explorer_lacks_is_refused_with_the_two_it_reads(imported, tmp_path):
    folder = edited_copy(imported[1], tmp_path / "silu", "config.json", feed_forward_proj="gated-silu")
    with pytest.raises(HFImportError, match="FFN is 'gated-silu'.*'relu' .T5. and 'gated-gelu'"):
        import_model(folder, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_unused_and_unknown_tensors(imported, tmp_path):
    """The original T5's unused cross-attention table is read as unused; a table in another layer (UMT5 has one in
    every layer) is refused, never dropped silently."""
    from safetensors.torch import load_file, save_file
    variant, hf_dir = imported[:2]
    state = load_file(hf_dir / "model.safetensors")
    assert (T5_UNUSED in state) == (variant == "t5")
    folder = tmp_path / "umt5-like"
    shutil.copytree(hf_dir, folder)
    table = "encoder.block.1.layer.0.SelfAttention.relative_attention_bias.weight"
    save_file({**state, table: torch.zeros(4, 4)}, folder / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(HFImportError, match="weights this importer does not understand.*block.1.layer.0"):
        import_model(folder, tmp_path / "out")


def test_buckets_are_transformers_buckets():
    from transformers.models.t5.modeling_t5 import T5Attention
    distance = torch.arange(-300, 300)
    for both, buckets, far in [(True, 32, 128), (False, 32, 128), (True, 8, 12), (False, 16, 40)]:
        theirs = T5Attention._relative_position_bucket(distance, both, buckets, far)
        assert torch.equal(relative_bucket(distance, both, buckets, far), theirs)


def test_the_paper_model_has_none_of_t5s_options():
    model = core.Transformer(core.preset("tiny"))
    assert model.enc_pos_bias is None and model.dec_pos_bias is None and model.cfg.scale_scores
    assert all(isinstance(m, torch.nn.LayerNorm) for n, m in model.named_modules() if n.endswith(".norm"))
    assert model.encoder[0].ffn.w_3 is None and model.encoder[0].ffn.w_1.bias is not None


@pytest.mark.slow
def test_by_hub_id_and_from_a_folder(imported, tmp_path, monkeypatch):
    """The local Hub stand-in serves the tiny model's repo: only the files a conversion reads come (spiece.model
    among them, never the pickle); offline, the Hugging Face cache is enough; the folder opens the same model."""
    variant, repo, _, _, tm = imported
    shutil.copytree(repo, tmp_path / "repo")
    (tmp_path / "repo" / "pytorch_model.bin").write_bytes(b"never fetched")
    with serving({f"google/{variant}-tiny": tmp_path / "repo"}, monkeypatch, tmp_path) as hub:
        by_id = open_pretrained(f"google/{variant}-tiny", dtype=torch.float32)
        assert {"spiece.model", "model.safetensors", "config.json"} <= hub.fetched()
        assert "pytorch_model.bin" not in hub.fetched()
        hub.stop()                                         # offline, the Hugging Face cache is enough
        monkeypatch.setenv("ATTN_EXPLORER_CACHE", str(tmp_path / "another-explorer-cache"))
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
        offline = open_pretrained(f"google/{variant}-tiny", dtype=torch.float32)
    by_folder = open_pretrained(repo, dtype=torch.float32)
    assert by_id.translate(SENTENCES[0], beam=1) == by_folder.translate(SENTENCES[0], beam=1) == \
        offline.translate(SENTENCES[0], beam=1) == tm.translate(SENTENCES[0], beam=1)
    assert by_id.card.extra["imported_from"]["hub"] == f"google/{variant}-tiny"


@pytest.mark.slow
def test_an_id_from_before_owners_opens_the_owners_repo(imported, tmp_path, monkeypatch):
    """'t5-small', as T5's paper and many tutorials spell it, is google-t5/t5-small, as the Hub's redirect has it."""
    variant, repo, _, _, tm = imported
    if variant != "t5":
        pytest.skip("one variant is enough")
    with serving({"google-t5/t5-small": repo}, monkeypatch, tmp_path):
        by_old_id = open_pretrained("t5-small", dtype=torch.float32)
    assert by_old_id.card.extra["imported_from"]["hub"] == "google-t5/t5-small"
    assert by_old_id.translate(SENTENCES[0], beam=1) == tm.translate(SENTENCES[0], beam=1)
