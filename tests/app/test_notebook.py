"""app.notebook: the app's own figures for a notebook, with layers and heads counted from 1, and no Streamlit."""
import subprocess
import sys

import numpy as np
import plotly.graph_objects as go
import pytest

import core
from app import notebook as nb
from app.figures.attention import heatmap_figure, model_view_figure
from core.studies import paper_figures as pf
from tests.helpers import stopping_model

SRC = "the quick brown fox jumps over the lazy dog"


@pytest.fixture(scope="module")
def tm(tokenizer):
    """A tiny model that stops after a few pieces, and takes the paper's sentences (max_len 256)."""
    return core.TranslationModel(stopping_model(len(tokenizer), eos_bias=3.0), tokenizer)


@pytest.mark.slow
def test_importing_it_starts_no_streamlit():
    code = "import sys, app.notebook; print('streamlit' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip() == "False"


@pytest.mark.slow
def test_a_head_map_is_the_apps_figure_for_that_head(tm):
    v = tm.attend(SRC).view("enc_self")
    fig = nb.head_map(tm, SRC, layer=2, head=3)
    want = heatmap_figure(v.maps[1, 2], v.rows, v.cols, "Encoder self-attention, layer 2 of 2, head 3 of 4", zmax=1.0,
                          row_title="attending source token", col_title="attended source token")  # the explorer's
    assert fig.to_plotly_json() == want.to_plotly_json()
    cross = nb.head_map(tm, SRC, kind="cross")
    assert (cross.layout.yaxis.title.text, cross.layout.xaxis.title.text) == ("decoder step (the token it writes)",
                                                                              "source token")
    grid = nb.model_view(tm, SRC, kind="cross")
    c = tm.attend(SRC).view("cross")
    assert grid.to_plotly_json() == model_view_figure(c.maps, c.rows, c.cols, "Encoder-decoder attention",
                                                      zmax=1.0).to_plotly_json()


@pytest.mark.slow
def test_layers_and_heads_count_from_one(tm):
    with pytest.raises(ValueError, match="There is no layer 3: this model has layers 1 to 2"):
        nb.head_map(tm, SRC, layer=3)
    with pytest.raises(ValueError, match="There is no head 0"):
        nb.head_view(tm, SRC, heads=[0])
    with pytest.raises(ValueError, match="does not contain the word 'cat'"):
        nb.head_view(tm, SRC, focus="cat")


def test_the_head_view_draws_the_heads_asked_for(tm):
    fig = nb.head_view(tm, SRC, layer=1, heads=[2, 4], focus="fox")
    assert {t.name for t in fig.data if t.showlegend} == {"head 2", "head 4"}


@pytest.mark.slow
def test_paper_figure_on_the_heads_found(tm):
    found = nb.paper_heads(tm, 3)
    best = pf.top_heads(found.scores, found.layer, 1)
    fig = nb.paper_figure(tm, 3)
    assert isinstance(fig, go.Figure) and f"head {best[0] + 1}" in fig.layout.title.text
    assert "heads 1 and 2" in nb.paper_figure(tm, 3, heads=[1, 2]).layout.title.text
    with pytest.raises(ValueError, match="3, 4, 5"):
        nb.paper_figure(tm, 6)


@pytest.mark.slow
def test_contributions(tm):
    fig = nb.contributions_map(tm, SRC, kind="enc_self", layer=1)      # encoder rows: all from the source
    rows = fig.data[0].z
    assert "contributions (ALTI+)" in fig.layout.title.text and np.allclose(np.nansum(rows, 1), 1.0, atol=1e-4)
    assert nb.view(tm, SRC, kind="enc_self", weights="norm").maps.shape[1] == tm.cfg.h
    assert isinstance(nb.source_share(tm, SRC), go.Figure)


def test_load_by_name_or_path(tm, tmp_path, monkeypatch):
    core.save_checkpoint(tmp_path / "tiny", tm.model, tm.tokenizer, {"name": "tiny"})
    monkeypatch.setenv("ATTN_EXPLORER_CHECKPOINTS", str(tmp_path))
    assert nb.load("tiny").card.name == "tiny" and nb.load(tmp_path / "tiny").cfg.N == 2
    with pytest.raises(core.CheckpointError, match="no checkpoint folder"):
        nb.load("nowhere")


@pytest.mark.slow
def test_load_a_hugging_face_model_by_its_id_or_folder(tmp_path, monkeypatch):
    pytest.importorskip("transformers", reason="transformers is not installed")
    from tests.core.checkpoint.pretrained.fake_hub import serving
    from tests.core.checkpoint.pretrained.hf_models import build_fsmt
    folder = build_fsmt(tmp_path / "wmt19-tiny")
    with serving({"facebook/wmt19-tiny": folder}, monkeypatch, tmp_path):
        tm = nb.load("facebook/wmt19-tiny")
    assert tm.card.extra["imported_from"]["hub"] == "facebook/wmt19-tiny"
    assert nb.load("facebook/wmt19-tiny").translate("a dog") == tm.translate("a dog")     # the cache, no network
    assert nb.load(folder).cfg == tm.cfg                                                  # the downloaded folder


def test_head_atlas_of_a_shipped_checkpoint_and_computed_for_one_without(tm, tmp_path, monkeypatch):
    from core.paths import REPO
    from tests.helpers import FIXTURES
    shipped = nb.head_atlas(nb.load(REPO / "checkpoints" / "news-small"), compute=False)   # its atlas.json
    assert [t.type for t in shipped.data].count("heatmap") == 3       # one a kind (and clickable markers)
    with pytest.raises(ValueError, match="no atlas"):
        nb.head_atlas(tm, compute=False)
    shared = tmp_path / "eval" / "ud-english-ewt"                    # the hand-made fixture, never the real data
    shared.mkdir(parents=True)
    (shared / "en_ewt-ud-dev.conllu").write_bytes((FIXTURES / "syntax" / "mini.conllu").read_bytes())
    monkeypatch.setenv("ATTN_EXPLORER_SHARED", str(tmp_path))
    fig = nb.head_atlas(tm)                      # no gold alignments there: the encoder's heads only
    assert [t.type for t in fig.data].count("heatmap") == 1


@pytest.mark.slow
def test_next_pieces_and_beam_tree_are_the_pages_figures(tm):
    from app.figures.decoding import beam_tree_figure, candidates_figure
    tr = tm.trace(SRC, beam=1)
    assert nb.next_pieces(tm, SRC, step=2).to_plotly_json() == candidates_figure(tr, 1, 0).to_plotly_json()
    tree = nb.beam_tree(tm, SRC, beam=3)
    searched = tm.trace(SRC, beam=3)
    assert tree.to_plotly_json() == beam_tree_figure(searched, None, len(searched.steps) + 1,
                                                     f"Beam search, 3 beams: {searched.translation}").to_plotly_json()
    with pytest.raises(ValueError, match="no step 99"):
        nb.next_pieces(tm, SRC, step=99)


def test_a_report_is_the_offline_html_of_every_map(tm, tmp_path):
    page = nb.report(tm, SRC, path=tmp_path / "r.html")
    assert (tmp_path / "r.html").read_text(encoding="utf-8") == page
    assert "Plotly.react" in page and SRC in page and '"enc_self"' in page


def test_why_is_the_pages_figure_of_the_contrast(tm):
    """why(): the contrast's pushes beside the step's attention of the layer and head asked for (1-based)."""
    c = tm.contrast(SRC, "der schnelle", "braune", "faulen")
    fig = nb.why(tm, SRC, "der schnelle", "braune", "faulen", layer=2, head=1)
    push, look, earlier = (t.z[0] for t in fig.data)
    np.testing.assert_allclose(push, c.src_scores, atol=1e-6)
    np.testing.assert_allclose(look, c.cross[1, 0], atol=1e-6)
    np.testing.assert_allclose(earlier, c.tgt_scores, atol=1e-6)
    assert "head 1" in fig.layout.annotations[1].text and fig.layout.title.text.startswith("Why 'braune'")
    with pytest.raises(ValueError, match="no head 9"):
        nb.why(tm, SRC, "der schnelle", "braune", "faulen", head=9)


@pytest.mark.slow
def test_learn_to_copy_trains_until_the_induction_head_forms_and_draws_it():
    result = nb.learn_to_copy(steps=450, progress=False)            # the head forms near step 300 (seed 0)
    assert result.steps == 450 and result.phase_change is not None
    change = result.phase_change
    assert 0 < change.step < 450 and change.best_induction >= 0.5 > result.snapshots[0].best_induction
    fig = nb.phase_change(result)
    scores = fig.data[1]
    assert list(scores.x) == [s.step for s in result.snapshots]
    assert list(scores.y) == pytest.approx([s.best_induction for s in result.snapshots])
    assert any(f"phase change: step {change.step}" == a.text for a in fig.layout.annotations)
    layer, head = result.snapshots[-1].best
    drawn = nb.induction_map(result)
    np.testing.assert_allclose(np.asarray(drawn.data[0].z), result.snapshots[-1].example[layer, head])
    assert drawn.layout.title.text.startswith(f"Layer {layer + 1}, head {head + 1} at step 450")
    early = nb.induction_map(result, step=0, layer=1, head=1)       # the first snapshot, layer 1 head 1
    np.testing.assert_allclose(np.asarray(early.data[0].z), result.snapshots[0].example[0, 0])
    with pytest.raises(ValueError, match="no layer 3"):
        nb.induction_map(result, layer=3)
