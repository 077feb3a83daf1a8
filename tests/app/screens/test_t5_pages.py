"""The pages on an imported T5 model (core/checkpoint/pretrained/t5.py): each runs; its task prompt is marked as the
prompt in the maps, never taken for the sentence; the Positional encoding page draws its learned bias and Attention,
step by step, says which formula it uses instead of the paper's."""
import json

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import core
from core.paths import REPO
from core.views import PROMPT
from tests.helpers import FIXTURES

pytest.importorskip("transformers", reason="transformers is not installed (pip install -r requirements-dev.txt)")
from core.checkpoint.pretrained import convert_folder as import_model  # noqa: E402
from tests.core.checkpoint.pretrained.hf_models import build_t5  # noqa: E402

PAGES = REPO / "app" / "screens"
SENTENCE = "the quick brown fox jumps over the lazy dog"


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """checkpoints/ with a tiny T5 (English -> German by its prompt), and ../shared moved to the hand-made fixtures
    (gold alignments), never the real evaluation data."""
    root = tmp_path_factory.mktemp("t5-pages")
    import_model(build_t5(root / "t5-tiny"), root / "checkpoints" / "t5-tiny")
    shared = root / "shared" / "eval" / "rwth-deen-alignment"
    shared.mkdir(parents=True)
    for name in ("src.en", "tgt.de", "gold.talp"):
        (shared / name).write_bytes((FIXTURES / "alignment_gold" / name).read_bytes())
    ud = root / "shared" / "eval" / "ud-english-ewt"
    ud.mkdir()
    (ud / "en_ewt-ud-dev.conllu").write_bytes((FIXTURES / "syntax" / "mini.conllu").read_bytes())
    return root


def run(page: str, root, monkeypatch, **state) -> AppTest:
    monkeypatch.setenv("ATTN_EXPLORER_CHECKPOINTS", str(root / "checkpoints"))
    monkeypatch.setenv("ATTN_EXPLORER_SHARED", str(root / "shared"))
    at = AppTest.from_file(str(PAGES / f"{page}.py"), default_timeout=120)
    for key, value in {"checkpoint": "t5-tiny", **state}.items():
        at.session_state[key] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    return at


@pytest.mark.slow
@pytest.mark.parametrize("page", ["heads", "paper_figures", "pronouns", "alignment", "qk", "checkpoint",
                                  "how_it_writes"])
def test_every_page_runs_on_a_t5_model(checkpoints, monkeypatch, page):
    at = run(page, checkpoints, monkeypatch)
    assert not any("This page needs a model" in i.value for i in at.info)          # English -> German: all apply


@pytest.mark.slow
def test_the_explorer_says_the_prompt_was_added_and_marks_it(checkpoints, monkeypatch):
    at = run("explorer", checkpoints, monkeypatch, src=SENTENCE)
    said = [c.value.replace("\\", "") for c in at.caption if "task prompt" in c.value]     # markdown-escaped
    assert len(said) == 1 and "translate English to German:" in said[0]


def test_the_maps_mark_the_prompt_and_the_studies_skip_it(checkpoints):
    tm = core.load_checkpoint(checkpoints / "checkpoints" / "t5-tiny")
    r = tm.attend(SENTENCE)
    marked = PROMPT[0]
    for words in (False, True):
        enc, cross = r.view("enc_self", words=words), r.view("cross", words=words)
        n = sum(marked in label for label in enc.cols)
        assert n > 0 and all(marked in label for label in enc.rows[:n] + cross.cols[:n])
        assert not any(marked in label for label in enc.rows[n:] + cross.rows + cross.cols[n:])
        hidden = r.view("enc_self", words=words, specials=False)           # the sentence's words only
        assert not any(marked in label for label in hidden.rows + hidden.cols)
    assert r.view("enc_self", words=True).cols[:4] == [PROMPT.format(w) for w in ("translate", "English", "to",
                                                                                  "German:")]
    pieces = r.view("enc_self").cols                                       # merged later, they make the same words
    assert sum(marked in w for w in core.merge_words(pieces)) == 4
    alone = r.sentence_only()
    assert alone.src_tokens == r.src_tokens[r.src_prompt:] and alone.src_prompt == 0
    assert np.array_equal(alone.cross, r.cross[..., r.src_prompt:])
    assert alone.view("enc_self", words=True).cols[:-1] == SENTENCE.split()
    from core.studies.emergence import lines_up              # how the studies check words against the sentence
    assert not lines_up(SENTENCE, r.src_tokens) and lines_up(SENTENCE, alone.src_tokens)


@pytest.mark.slow
def test_the_positional_page_draws_each_heads_learned_bias(checkpoints, monkeypatch):
    at = run("positional_encoding", checkpoints, monkeypatch)
    assert any("has no such table" in h.value for h in at.header)
    charts = {c.key: json.loads(c.proto.spec) for c in at.get("plotly_chart")}
    h = core.load_checkpoint(checkpoints / "checkpoints" / "t5-tiny").cfg.h
    assert len(charts["pe_bias_encoder"]["data"]) == len(charts["pe_bias_decoder"]["data"]) == h   # a line a head


@pytest.mark.slow
def test_the_paper_models_positional_page_draws_no_bias(tmp_path, monkeypatch, tokenizer):
    from tests.helpers import stopping_model
    core.save_checkpoint(tmp_path / "checkpoints" / "paper", stopping_model(len(tokenizer)), tokenizer)
    at = run("positional_encoding", tmp_path, monkeypatch, checkpoint="paper")
    assert not any("has no such table" in h.value for h in at.header)
    assert not [c for c in at.get("plotly_chart") if c.key.startswith("pe_bias")]


@pytest.mark.slow
def test_attention_step_by_step_walks_t5s_own_formula(checkpoints, monkeypatch):
    at = run("scaled_attention", checkpoints, monkeypatch)
    assert any("does not use the paper's formula" in i.value for i in at.info)
    assert any("Add the position bias (no ÷ √d_k)" in s.value for s in at.subheader)
    gap = next(c.value for c in at.caption if "differs from the model's own map by at most" in c.value)
    assert float(gap.replace("\\", "").split("at most ")[1].rstrip(".")) < 1e-5     # the walk: the model's weights


@pytest.mark.slow
def test_the_report_export_and_the_contrast_work_on_t5(checkpoints):
    from app.figures.report import sentence_report
    tm = core.load_checkpoint(checkpoints / "checkpoints" / "t5-tiny")
    page = sentence_report(tm.attend(SENTENCE), "t5-tiny", "a tiny T5")
    assert json.dumps(PROMPT.format("translate"))[1:-1] in page                     # its labels, as JSON writes them
    if not hasattr(tm, "contrast"):
        pytest.skip("TranslationModel.contrast is not there yet")
    words = tm.translate(SENTENCE, beam=1).split()
    for method in ("erasure", "gradient", "integrated", "alti_logit"):
        c = tm.contrast(SENTENCE, "", words[0], "Hund", method=method)
        assert c.src_words == SENTENCE.split() and np.isfinite(c.src_scores).all()   # the sentence's words only


@pytest.mark.slow
def test_the_atlas_is_computed_on_demand_for_a_t5_model(checkpoints, monkeypatch):
    """Every role of the atlas reads the sentence's words, never the prompt's (core.views.sentence_only)."""
    at = run("heads", checkpoints, monkeypatch, heads_tab="Atlas")              # lazy tabs: this one open
    at.button(key="heads_atlas_go").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert [c.key for c in at.get("plotly_chart")] == ["heads_atlas_chart"]


def test_alignment_scores_every_gold_pair_on_the_sentence_alone(checkpoints):
    from core.studies import alignment as al
    from core.studies import alignment_gold as ag
    tm = core.load_checkpoint(checkpoints / "checkpoints" / "t5-tiny")
    pairs = ag.read_gold(FIXTURES / "alignment_gold")
    with pytest.raises(ag.AlignmentError, match="spell a different text"):     # the prompt is not the sentence
        al.gold_slots(tm.attend(*ag.model_text(pairs[0])), pairs[0])
    ev = al.evaluate(tm, pairs)
    assert not ev.skipped and len(ev.index) == len(pairs)
