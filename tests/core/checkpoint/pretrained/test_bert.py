"""Imported BERT, RoBERTa and DistilBERT models agree with transformers' eager *ForMaskedLM: the logits and every
attention map of a padded batch, the token ids of their tokenizers, which word fills [MASK]; opened by id from a
local Hub stand-in and then offline.

Everything is built here, offline: tiny tokenizer.json vocabularies and tiny random models (encoder_models.py).
"""
import json
import shutil

import pytest
import torch

pytest.importorskip("transformers", reason="transformers is not installed (pip install -r requirements-dev.txt)")
from safetensors.torch import load_file, save_file  # noqa: E402
from transformers import AutoTokenizer  # noqa: E402

import core  # noqa: E402
from core.checkpoint.pretrained import HFImportError, open_pretrained  # noqa: E402
from core.checkpoint.pretrained import convert_folder as import_model  # noqa: E402
from core.checkpoint.pretrained.bert import refuse  # noqa: E402
from core.checkpoint.pretrained.hub import WANTED  # noqa: E402
from core.masked_language_model import MaskedLanguageModel  # noqa: E402
from tests.core.checkpoint.pretrained.encoder_models import KINDS, TEXTS, build_encoder, hf_model  # noqa: E402
from tests.core.checkpoint.pretrained.fake_hub import serving  # noqa: E402
from tests.core.checkpoint.pretrained.hf_models import LOGITS_ATOL, MAPS_ATOL, edited_copy  # noqa: E402

SPECIALS = {"bert": ("[CLS]", "[SEP]", "[MASK]"), "distilbert": ("[CLS]", "[SEP]", "[MASK]"),
            "roberta": ("<s>", "</s>", "<mask>")}


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    """kind -> (kind, hf_dir, transformers model with eager attention, their tokenizer, our imported
    MaskedLanguageModel), each built once in this module."""
    made = {}

    def imported(kind: str):
        if kind not in made:
            root = tmp_path_factory.mktemp(kind)
            hf_dir = build_encoder(root / f"{kind}-tiny", kind)
            out = import_model(hf_dir, root / "ckpt", dtype=torch.float32)
            made[kind] = (kind, hf_dir, hf_model(hf_dir, kind), AutoTokenizer.from_pretrained(hf_dir),
                          core.load_checkpoint(out))
        return made[kind]
    return imported


@pytest.fixture(params=KINDS)
def imported(request, build):
    """Each family's tiny model, imported (build)."""
    return build(request.param)


def max_differences(ours, theirs) -> dict:
    """Max |ours - theirs| of the logits and of every layer's maps: ours (logits, attns), theirs transformers'."""
    assert len(ours[1]) == len(theirs.attentions)
    maps = max((a - b).abs().max().item() for a, b in zip(ours[1], theirs.attentions, strict=True))
    return {"logits": (ours[0] - theirs.logits).abs().max().item(), "maps": maps}


def test_token_ids_match_their_tokenizer(imported):
    kind, _, _, tok, tm = imported
    for text in TEXTS + ["The Fox, [MASK] dog!"]:
        ids, types, cut = tm.ids(text)
        assert ids == tok(text.replace("[MASK]", tok.mask_token))["input_ids"] and not cut
    ids, types, _ = tm.ids(TEXTS[0], TEXTS[1])
    theirs = tok(TEXTS[0], TEXTS[1])
    assert ids == theirs["input_ids"]
    assert types == theirs.get("token_type_ids", [0] * len(ids))
    assert (kind != "bert") or 1 in types                                 # BERT tells sentence B apart


def test_config_and_card(imported):
    kind, hf_dir, hf, tok, tm = imported
    cfg = tm.cfg
    assert isinstance(tm, MaskedLanguageModel) and tm.has_head
    assert [cfg.cls_id, cfg.sep_id, cfg.mask_id, cfg.pad_id] == [tok.cls_token_id, tok.sep_token_id,
                                                                 tok.mask_token_id, tok.pad_token_id]
    assert tm.tokenizer.pieces([cfg.cls_id, cfg.sep_id, cfg.mask_id]) == list(SPECIALS[kind])
    assert (cfg.pos_offset, cfg.type_vocab_size, cfg.pair_seps) == {"bert": (0, 2, 1), "roberta": (2, 1, 2),
                                                                    "distilbert": (0, 0, 1)}[kind]
    assert cfg.max_len == 64 and cfg.vocab_size == hf.config.vocab_size and len(tm.tokenizer) == cfg.vocab_size
    assert json.loads((tm.folder / "config.json").read_text())["family"] == "encoder-only"
    assert tm.card.trained_here is False
    name = {"bert": "BERT", "roberta": "RoBERTa", "distilbert": "DistilBERT"}[kind]
    assert tm.card.source == f"{kind}-tiny ({name}), converted from the Hugging Face format"
    assert tm.card.extra["original_config"] == json.loads((hf_dir / "config.json").read_text())


@torch.no_grad()
def test_logits_and_every_attention_map_match_transformers_in_a_padded_batch(imported):
    _, _, hf, tok, tm = imported
    batch = tok(TEXTS, padding=True, return_tensors="pt")
    assert (batch["attention_mask"] == 0).any()                           # there is padding to mask
    theirs = hf(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], output_attentions=True)
    diff = max_differences(tm.model(batch["input_ids"], need_weights=True), theirs)
    assert diff["logits"] <= LOGITS_ATOL and diff["maps"] <= MAPS_ATOL, diff
    for b, text in enumerate(TEXTS):                                      # attend: each text alone, its own maps
        r = tm.attend(text)
        n = len(r.ids)
        theirs_maps = torch.stack([a[b, :, :n, :n] for a in theirs.attentions]).numpy()
        assert r.self_attn.shape == theirs_maps.shape
        assert abs(r.self_attn - theirs_maps).max() <= MAPS_ATOL


@torch.no_grad()
def test_a_pair_of_sentences_with_its_token_types_matches_transformers(imported):
    kind, _, hf, tok, tm = imported
    ids, types, _ = tm.ids(TEXTS[1], TEXTS[0])
    x, t = torch.tensor([ids]), torch.tensor([types])
    kwargs = {} if kind == "distilbert" else {"token_type_ids": t}
    theirs = hf(input_ids=x, output_attentions=True, **kwargs)
    diff = max_differences(tm.model(x, need_weights=True, token_types=t if tm.cfg.type_vocab_size else None), theirs)
    assert diff["logits"] <= LOGITS_ATOL and diff["maps"] <= MAPS_ATOL, diff


@torch.no_grad()
def test_which_word_fills_the_mask_is_theirs(imported):
    _, _, hf, tok, tm = imported
    text = "the quick brown [MASK] jumps over the [MASK] dog"
    fills = tm.fill_mask(text, k=3)
    ids, _, _ = tm.ids(text)
    logits = hf(input_ids=torch.tensor([ids])).logits[0].softmax(-1)
    positions = [i for i, j in enumerate(ids) if j == tm.cfg.mask_id]
    assert len(fills) == len(positions) == 2
    for pos, ours in zip(positions, fills):
        p, i = logits[pos].topk(3)
        assert [piece for piece, _ in ours] == tok.convert_ids_to_tokens(i.tolist())
        assert [q for _, q in ours] == pytest.approx(p.tolist(), abs=1e-5)
    r = tm.attend(text)
    assert r.roles[0] == "cls" and r.roles[-1] == "sep" and [r.roles[p] for p in positions] == ["mask", "mask"]
    assert r.roles.count(None) == len(ids) - 4
    with pytest.raises(ValueError, match="no \\[MASK\\]"):
        tm.fill_mask(TEXTS[0])


def test_a_long_text_is_cut_to_the_positions_with_its_sep_kept(imported):
    tm = imported[-1]
    r = tm.attend(" ".join(TEXTS * 10))
    assert len(r.ids) == tm.cfg.max_len and r.truncated and r.notices and r.roles[-1] == "sep"
    ids, types, cut = tm.ids(" ".join(TEXTS * 10), TEXTS[1])          # the longer sentence is cut, not the pair
    assert len(ids) == tm.cfg.max_len and cut and ids.count(tm.cfg.sep_id) == 1 + tm.cfg.pair_seps
    assert ids[-len(tm.ids(TEXTS[1])[0]) + 1:] == tm.ids(TEXTS[1])[0][1:]


@pytest.mark.parametrize("kind", ["bert", "distilbert"])
def test_a_checkpoint_without_the_head_is_imported_as_the_encoder_only(tmp_path, kind):
    hf_dir = build_encoder(tmp_path / f"{kind}-model", kind, head=False)
    hf = hf_model(hf_dir, kind, head=False)
    tm = core.load_checkpoint(import_model(hf_dir, tmp_path / "ckpt", dtype=torch.float32))
    assert not tm.has_head and tm.model.head is None
    assert "encoder only: no masked-LM head" in tm.card.source
    assert ("the pooler left out" in tm.card.source) == (kind == "bert")  # BertModel has a pooler, DistilBERT none
    r = tm.attend(TEXTS[0])
    with torch.no_grad():
        theirs = hf(input_ids=torch.tensor([r.ids]), output_attentions=True).attentions
    assert abs(r.self_attn - torch.cat(theirs).numpy()).max() <= MAPS_ATOL and r.fills == {}
    with pytest.raises(ValueError, match="no masked-LM head"):
        tm.fill_mask("the [MASK] dog")


def test_older_exports_gamma_beta_names_position_ids_and_tied_copies(build, tmp_path):
    """Older BERT files name LayerNorms gamma/beta and store the position ids and each tied copy: all accepted."""
    kind, hf_dir, *_, tm = build("bert")
    folder = tmp_path / "older"
    shutil.copytree(hf_dir, folder)
    state = load_file(folder / "model.safetensors")
    old = {(k[:-len(".weight")] + ".gamma" if "LayerNorm.weight" in k else
            k[:-len(".bias")] + ".beta" if "LayerNorm.bias" in k else k): v for k, v in state.items()}
    old["bert.embeddings.position_ids"] = torch.arange(64)[None]
    old["cls.predictions.decoder.weight"] = state["bert.embeddings.word_embeddings.weight"].clone()
    old["cls.predictions.decoder.bias"] = state["cls.predictions.bias"].clone()
    old["cls.seq_relationship.weight"], old["cls.seq_relationship.bias"] = torch.randn(2, 32), torch.randn(2)
    save_file(old, folder / "model.safetensors")
    older = core.load_checkpoint(import_model(folder, tmp_path / "out", dtype=torch.float32))
    assert (older.attend(TEXTS[0]).self_attn == tm.attend(TEXTS[0]).self_attn).all()
    assert "the next-sentence head left out" in older.card.source
    old["cls.predictions.decoder.weight"] += 0.1                              # no longer the tied matrix
    save_file(old, folder / "model.safetensors")
    with pytest.raises(HFImportError, match="should be one tied matrix"):
        import_model(folder, tmp_path / "out2")
    old["cls.predictions.decoder.weight"] = state["bert.embeddings.word_embeddings.weight"].clone()
    old["bert.unknown.weight"] = torch.zeros(3)
    save_file(old, folder / "model.safetensors")
    with pytest.raises(HFImportError, match="does not understand: \\['bert.unknown.weight'\\]"):
        import_model(folder, tmp_path / "out3")


@pytest.mark.parametrize("change, match", [
    ({"position_embedding_type": "relative_key"}, "only absolute .learned. positions"),
    ({"is_decoder": True}, "used as a decoder"),
    ({"hidden_act": "swish"}, "activation 'swish': only gelu, gelu_new, relu"),
])
def test_options_not_built_are_refused_by_name_before_anything_is_downloaded(build, tmp_path, change, match):
    folder = edited_copy(build("bert")[1], tmp_path / "changed", "config.json", **change)
    with pytest.raises(HFImportError, match=match):
        refuse(json.loads((folder / "config.json").read_text()))          # what the Hub checks before a download
    with pytest.raises(HFImportError, match=match):
        import_model(folder, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_config_without_its_sizes_is_refused(build, tmp_path):
    folder = edited_copy(build("distilbert")[1], tmp_path / "changed", "config.json", dim=None)
    with pytest.raises(HFImportError, match="lacks dim: it does not describe a whole model"):
        import_model(folder, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_no_tokenizer_json_is_a_readable_error(imported, tmp_path):
    folder = tmp_path / "no-tokenizer"
    shutil.copytree(imported[1], folder)
    (folder / "tokenizer.json").unlink()
    with pytest.raises(HFImportError, match="lacks tokenizer.json"):
        import_model(folder, tmp_path / "out")


def test_opened_by_id_from_the_hub_and_then_offline(build, tmp_path, monkeypatch):
    """One family through the Hub is enough: the download code is the same for all."""
    kind, hf_dir, *_, tm = build("roberta")
    repo = "FacebookAI/roberta-tiny"
    with serving({repo: hf_dir}, monkeypatch, tmp_path) as hub:
        online = open_pretrained(repo, dtype=torch.float32)
        assert hub.fetched() <= set(WANTED) and "model.safetensors" in hub.fetched()
        hub.stop()
        monkeypatch.setenv("ATTN_EXPLORER_CACHE", str(tmp_path / "another-explorer-cache"))   # converted afresh
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
        offline = open_pretrained(repo, dtype=torch.float32)
    assert isinstance(offline, MaskedLanguageModel) and offline.card.credit.startswith("RoBERTa by Facebook AI")
    assert offline.card.source.startswith(f"{repo} (RoBERTa)")
    for other in (online, offline):
        assert (other.attend(TEXTS[2]).self_attn == tm.attend(TEXTS[2]).self_attn).all()


def test_attend_gives_queries_and_keys_and_takes_a_head_mask(build):
    tm = build("bert")[-1]
    r = tm.attend(TEXTS[1], vectors=True)
    q, k = r.vectors
    T = len(r.ids)
    assert q.shape == k.shape == (2, 4, T, 8)
    scores = torch.from_numpy(q) @ torch.from_numpy(k).transpose(-2, -1) / 8 ** 0.5
    assert abs(scores.softmax(-1).numpy() - r.self_attn).max() <= 1e-6
    off = tm.attend(TEXTS[1], head_mask=tm.model.ablate_heads([(0, 1)]))
    assert (off.self_attn[0] == r.self_attn[0]).all() and abs(off.self_attn[1] - r.self_attn[1]).max() > 1e-3


@pytest.mark.parametrize("act, ours", [("gelu_new", "gelu_tanh"), ("relu", "relu")])
@torch.no_grad()
def test_the_other_activations_read_are_theirs(build, tmp_path, act, ours):
    folder = edited_copy(build("bert")[1], tmp_path / act, "config.json", hidden_act=act)
    tm = core.load_checkpoint(import_model(folder, tmp_path / "out", dtype=torch.float32))
    assert tm.cfg.activation == tm.cfg.head_activation == ours
    batch = AutoTokenizer.from_pretrained(folder)(TEXTS, padding=True, return_tensors="pt")
    theirs = hf_model(folder, "bert")(**batch, output_attentions=True)
    diff = max_differences(tm.model(batch["input_ids"], need_weights=True, token_types=batch["token_type_ids"]),
                           theirs)
    assert diff["logits"] <= LOGITS_ATOL and diff["maps"] <= MAPS_ATOL, diff
