"""The pages on imported models (core.checkpoint.pretrained): each runs on an FSMT model (post-norm, two vocabularies,
Moses + BPE) and an NLLB one (pre-norm, language tokens), or says why it does not apply to the model's languages."""
import pytest

pytest.importorskip("transformers", reason="transformers is not installed (pip install -r requirements-dev.txt)")
from core.checkpoint.pretrained import convert_folder as import_model  # noqa: E402
from tests.core.checkpoint.pretrained.hf_models import build_fsmt, build_m2m100  # noqa: E402
from tests.helpers import run_page as run  # noqa: E402  one page on one checkpoint, by AppTest

MODEL_PAGES = ["explorer", "heads", "paper_figures", "pronouns", "alignment", "qk", "checkpoint"]


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    """checkpoints/ with an FSMT model (en -> de) and an NLLB model made for en -> fr; max 256 positions, so that
    the paper's sentences fit in their tiny vocabularies' many pieces."""
    root = tmp_path_factory.mktemp("imported")
    import_model(build_fsmt(root / "wmt19-tiny", max_positions=256), root / "checkpoints" / "fsmt-tiny")
    import_model(build_m2m100(root / "nllb-tiny", "nllb", max_positions=256), root / "checkpoints" / "nllb-en-fr",
                 src_lang="eng_Latn", tgt_lang="fra_Latn")
    return root / "checkpoints"


@pytest.mark.slow
@pytest.mark.parametrize("page", MODEL_PAGES)
def test_every_page_runs_on_an_fsmt_model(imported, monkeypatch, page):
    at = run(page, "fsmt-tiny", imported, monkeypatch)
    assert not any("This page needs a model" in i.value for i in at.info)          # English -> German: all apply


@pytest.mark.slow
@pytest.mark.parametrize("page, applies", [("explorer", True), ("paper_figures", True), ("pronouns", False),
                                           ("alignment", False)])
def test_pages_say_when_the_languages_do_not_fit(imported, monkeypatch, page, applies):
    at = run(page, "nllb-en-fr", imported, monkeypatch)
    said = [i.value for i in at.info if "This page needs a model" in i.value]
    assert bool(said) != applies
    if said:
        assert "English → German" in said[0] and "translates English → French" in said[0]


@pytest.mark.slow
@pytest.mark.parametrize("checkpoint, applies", [("nllb-en-fr", False), ("fsmt-tiny", True)])
def test_the_heads_pages_bleu_change_needs_english_to_german(imported, monkeypatch, checkpoint, applies):
    at = run("heads", checkpoint, imported, monkeypatch, heads_tab="Switch heads off")   # lazy tabs: this one open
    said = [i.value for i in at.info if i.value.startswith("The BLEU change needs a model")]
    measures = [b for b in at.button if b.key in ("heads_measure", "heads_sweep_go")]
    assert (not said, len(measures)) == ((True, 2) if applies else (False, 0))
    if said:
        assert "English → German" in said[0] and "translates English → French" in said[0]
