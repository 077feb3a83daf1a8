"""app.checkpoints for imported models: which pages apply (by the languages a card records), and a model too big for
the memory left refused with a message before loading, which reports its progress."""
import pytest

import core
from app import checkpoints as ck
from core.checkpoint import Card
from tests.helpers import tiny_model


def card(source=None, target=None) -> Card:
    return Card(name="m", trained_here=source is None,
                extra={} if source is None else {"languages": {"source": source, "target": target}})


def test_languages_of_a_card():
    assert ck.languages(card()) == ("en", "de")                      # trained here: English -> German
    assert ck.languages(card("eng_Latn", "deu_Latn")) == ("en", "de")  # NLLB's codes
    assert ck.languages(card("fra_Latn", "eng_Latn")) == ("fr", "en")
    assert ck.describe_languages(card("en", "de")) == "English → German"
    assert ck.describe_languages(card("fra_Latn", "xx_Yyyy")) == "French → xx"   # a code without a name stays
    assert ck.languages(card("ger", "deu")) == ("de", "de")                        # ISO 639-2 codes too


@pytest.mark.parametrize("source, target, page, applies", [
    (None, None, "pronouns", True), ("en", "de", "alignment", True), ("eng_Latn", "fra_Latn", "paper_figures", True),
    ("eng_Latn", "fra_Latn", "syntax", True), ("eng_Latn", "fra_Latn", "pronouns", False),
    ("de", "en", "paper_figures", False), ("de", "en", "alignment", False), ("de", "en", "explorer", True),
    ("fra_Latn", "deu_Latn", "heads", True),
])
def test_page_problem(source, target, page, applies):
    problem = ck.page_problem(page, card(source, target))
    assert (problem is None) == applies
    if problem:
        assert problem.startswith("This page needs a model that translates English") and "sidebar" in problem


def test_a_model_too_big_for_the_memory_left(tokenizer, tmp_path, monkeypatch):
    folder = core.save_checkpoint(tmp_path / "tiny", tiny_model(len(tokenizer)), tokenizer, {"name": "tiny"})
    need = ck.memory_needed(folder)
    n = sum(p.numel() for p in core.load_checkpoint(folder).model.parameters() if p.requires_grad)
    assert n * 4 <= need <= n * 4 * 1.5
    monkeypatch.setattr(ck, "memory_available", lambda: need - 1)
    with pytest.raises(core.CheckpointError, match=r"needs about .* GB of memory .* it does not fit"):
        ck.load_with_progress(folder)
    monkeypatch.setattr(ck, "memory_available", lambda: need)
    seen = []
    assert ck.load_with_progress(folder, lambda f, text: seen.append((f, text))).card.name == "tiny"
    assert seen[0][1].startswith("Reading the weights") and seen[-1] == (1.0, "Loaded.")
    size = float(seen[0][1].split(" of ")[1].split(" MB")[0])
    assert size > 0, seen[0][1]                          # a tiny model's size is not rounded away to "0 MB"
    assert [f for f, _ in seen] == sorted(f for f, _ in seen)


def test_memory_is_not_judged_without_weights(tmp_path):
    assert ck.memory_problem(tmp_path) is None



# ---- models converted from Hugging Face, and what the server lets visitors download ----

def test_converted_models_are_listed_after_the_shipped_ones(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTN_EXPLORER_CHECKPOINTS", str(tmp_path / "checkpoints"))
    monkeypatch.setenv("ATTN_EXPLORER_CACHE", str(tmp_path / "cache"))
    for folder in (tmp_path / "checkpoints" / "ours", tmp_path / "cache" / "models" / "owner--model",
                   tmp_path / "cache" / "models" / ".owner--half.123.tmp"):
        core.save_checkpoint(folder, tiny_model(50))
    assert ck.checkpoint_names() == ["ours", "owner--model", ck.UNTRAINED]
    assert ck.checkpoint_folder("owner--model") == tmp_path / "cache" / "models" / "owner--model"
    assert ck.checkpoint_folder("ours") == tmp_path / "checkpoints" / "ours"
    assert ck.checkpoint_key("owner--model").version.startswith(str(tmp_path / "cache"))
    assert [ck.checkpoint_label(n) for n in ck.checkpoint_names()] == ["ours", "owner/model", ck.UNTRAINED]


@pytest.mark.parametrize("setting, allowed", [(None, True), ("on", True), ("OFF", False), ("0", False),
                                              ("a/b, c/d,", {"a/b", "c/d"})])
def test_the_hub_setting(monkeypatch, setting, allowed):
    if setting is None:
        monkeypatch.delenv(ck.HUB_SETTING, raising=False)
    else:
        monkeypatch.setenv(ck.HUB_SETTING, setting)
    assert ck.hub_allowed() == allowed
    refusal = ck.hub_refusal("a/b")
    assert (refusal is None) == (allowed is not False)
    assert (ck.hub_refusal("x/y") is None) == (allowed is True)


def test_the_download_cap(monkeypatch):
    monkeypatch.delenv(ck.HUB_MAX_GB_SETTING, raising=False)
    assert ck.hub_limits().max_bytes == int(ck.HUB_MAX_GB * 1e9)
    monkeypatch.setenv(ck.HUB_MAX_GB_SETTING, "0.5")
    assert ck.hub_limits().max_bytes == 500_000_000
    monkeypatch.setenv(ck.HUB_MAX_GB_SETTING, "lots")                 # unreadable: the default, not a crash
    assert ck.hub_limits().max_bytes == int(ck.HUB_MAX_GB * 1e9)
