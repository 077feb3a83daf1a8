"""core.views, the one labelling convention: hand-made maps with known answers, and every page, score and export
labelling decoder row i by out_tokens[i] (the piece that step writes), never by tgt_tokens[i] (what it read)."""
import json

import numpy as np
import pytest
from tests.helpers import stopping_model
from streamlit.testing.v1 import AppTest

import core
from app.figures.tokens import tick_labels
from app.text import md_escape
from core import views
from core.studies import compare
from core.studies.paper_figures import FIGURE45_SENTENCE
from scripts import export_figures
from core.paths import REPO

# ---- (a) attention_view on a hand-made AttendResult ----

SRC = ["▁the", "▁do", "g", "</s>"]                   # words: the, dog, </s>
TGT = ["<s>", "▁der", "▁Hu", "nd"]                   # what each decoder step reads
OUT = ["▁der", "▁Hu", "nd", "</s>"]                  # what each decoder step writes
CROSS = np.array([[0.7, 0.1, 0.1, 0.1],              # step 1 writes "der"
                  [0.1, 0.2, 0.3, 0.4],              # step 2 writes "▁Hu"
                  [0.5, 0.25, 0.25, 0.0],            # step 3 writes "nd"
                  [0.0, 0.0, 0.0, 1.0]])             # step 4 writes "</s>"
DEC = np.array([[1.0, 0.0, 0.0, 0.0],                 # causal: step t reads <s> and the t-1 pieces before it
                [0.4, 0.6, 0.0, 0.0],
                [0.2, 0.2, 0.6, 0.0],
                [0.1, 0.2, 0.3, 0.4]])
ENC = np.full((4, 4), 0.25)


def hand_result(src=SRC, tgt=TGT, out=OUT, enc=ENC, dec=DEC, cross=CROSS) -> core.AttendResult:
    """One layer and one head of hand-written maps, shaped (1, 1, rows, cols) as the model returns them."""
    def m(a):
        return np.asarray(a, dtype=np.float32)[None, None]
    return core.AttendResult(src="the dog", tgt="der Hund", src_tokens=src, tgt_tokens=tgt, out_tokens=out,
                             enc_self=m(enc), dec_self=m(dec), cross=m(cross), teacher_forced=True)


def test_labels_per_kind_rows_are_queries_decoder_rows_what_is_written():
    r = hand_result()
    expected = {"enc_self": (SRC, SRC), "dec_self": (OUT, TGT), "cross": (OUT, SRC)}
    probe = {"src_tokens": SRC, "tgt_tokens": TGT, "out_tokens": OUT}          # a training snapshot's probe
    for kind, (rows, cols) in expected.items():
        v = r.view(kind)
        assert (v.kind, v.rows, v.cols, v.level, v.row_sums_to_one) == (kind, rows, cols, "pieces", True)
        np.testing.assert_array_equal(v.maps, getattr(r, kind))
        assert views.side_tokens(r, kind) == views.side_tokens(probe, kind) == (rows, cols)
        snap = views.attention_view(probe, kind, maps=getattr(r, kind))
        assert (snap.rows, snap.cols) == (rows, cols)
    assert views.position(0) == 1 and views.position(np.int64(3)) == 4
    assert "writes" in views.DECODER_ROWS and set(views.KINDS) == set(views.SHORT) == set(expected)


def test_whole_words_sum_columns_and_average_rows_by_hand():
    r = hand_result()
    v = r.view("cross", words=True)
    assert (v.rows, v.cols, v.level) == (["der", "Hund", "</s>"], ["the", "dog", "</s>"], "words")
    # "Hund" (rows ▁Hu, nd) = mean of [0.1, 0.2, 0.3, 0.4] and [0.5, 0.25, 0.25, 0]; "dog" (cols ▁do, g) = their sum
    np.testing.assert_allclose(v.maps[0, 0], [[0.7, 0.2, 0.1],
                                              [0.3, 0.5, 0.2],
                                              [0.0, 0.0, 1.0]], atol=1e-6)
    assert v.maps.dtype == np.float32
    v = r.view("dec_self", words=True)
    assert (v.rows, v.cols) == (["der", "Hund", "</s>"], ["<s>", "der", "Hund"])
    np.testing.assert_allclose(v.maps[0, 0], [[1.0, 0.0, 0.0],
                                              [0.3, 0.4, 0.3],
                                              [0.1, 0.2, 0.7]], atol=1e-6)
    maps, rows, cols = views.to_words(r.enc_self, SRC, SRC)
    assert rows == cols == ["the", "dog", "</s>"]
    np.testing.assert_allclose(maps[0, 0], [[0.25, 0.5, 0.25]] * 3, atol=1e-6)


def test_hiding_specials_drops_them_without_renormalising():
    r = hand_result()
    v = r.view("cross", specials=False)
    assert (v.rows, v.cols, v.row_sums_to_one) == (OUT[:3], SRC[:3], False)
    np.testing.assert_array_equal(v.maps[0, 0], CROSS[:3, :3].astype(np.float32))    # row 2 keeps its 0.6, not 1
    v = r.view("dec_self", specials=False)                   # the </s> row and the <s> column go
    assert (v.rows, v.cols) == (OUT[:3], TGT[1:])
    np.testing.assert_array_equal(v.maps[0, 0], DEC[:3, 1:].astype(np.float32))
    v = r.view("cross", words=True, specials=False)
    assert (v.rows, v.cols) == (["der", "Hund"], ["the", "dog"])
    np.testing.assert_allclose(v.maps[0, 0], [[0.7, 0.2], [0.3, 0.5]], atol=1e-6)
    # a translation of nothing but </s> keeps its specials: there would be nothing left to show
    empty = hand_result(tgt=["<s>"], out=["</s>"], dec=[[1.0]], cross=[[0.1, 0.2, 0.3, 0.4]])
    v = empty.view("dec_self", specials=False)
    assert (v.rows, v.cols, v.row_sums_to_one) == (["</s>"], ["<s>"], True)


def test_a_map_that_does_not_fit_its_labels_or_an_unknown_kind_is_an_error():
    r = hand_result()
    with pytest.raises(ValueError, match=r"cross maps are 3x4 but there are 4 row and 4 column tokens"):
        views.attention_view(r, "cross", maps=np.zeros((1, 1, 3, 4)))
    with pytest.raises(ValueError, match="row and"):
        hand_result(out=OUT[:3]).view("cross")
    with pytest.raises(ValueError, match="choose one of"):
        r.view("self")
    assert views.check_kind("cross") == "cross"


# ---- (b) every page, score and export labels a decoder row by the piece it writes ----

NAME = "tiny-views"
SENTENCE, TARGET = "the quick brown fox", "der schnelle Fuchs"


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory, tokenizer):
    """checkpoints/tiny-views: a tiny model (it stops translating at once, so that exporting the paper's figures
    costs nothing) and one attention snapshot of SENTENCE -> TARGET with its probe, as training writes them."""
    root = tmp_path_factory.mktemp("checkpoints")
    folder = core.save_checkpoint(root / NAME, stopping_model(len(tokenizer)), tokenizer,
                                  {"name": NAME, "trained_here": True})
    r = core.load_checkpoint(folder).attend(SENTENCE, tgt=TARGET)
    (folder / "snapshots").mkdir()
    np.savez_compressed(folder / "snapshots" / "step_0000100.npz",
                        **{f"0_{k}": getattr(r, k).astype(np.float16) for k in views.KINDS})
    probe = {"line": 1, "src": r.src, "tgt": r.tgt, "src_tokens": r.src_tokens, "tgt_tokens": r.tgt_tokens,
             "out_tokens": r.out_tokens}
    (folder / "snapshots" / "probes.json").write_text(json.dumps({"split": "valid", "sentences": [probe]}))
    return root


@pytest.fixture(scope="module")
def result(checkpoints):
    r = core.load_checkpoint(checkpoints / NAME).attend(SENTENCE, tgt=TARGET)
    # the test can only fail if the two candidate labellings differ
    assert r.out_tokens != r.tgt_tokens and len(r.out_tokens) == len(r.tgt_tokens) > 2
    return r


def run_page(page: str, checkpoints, monkeypatch, **state) -> AppTest:
    monkeypatch.setenv("ATTN_EXPLORER_CHECKPOINTS", str(checkpoints))
    at = AppTest.from_file(str(REPO / "app" / "screens" / f"{page}.py"),
                           default_timeout=300)
    at.session_state["checkpoint"] = NAME
    for key, value in state.items():
        at.session_state[key] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    return at


def axis_labels(chart) -> tuple[list, list]:
    """(row labels, column labels) of a heatmap chart on a page, as the reader sees them."""
    layout = json.loads(chart.proto.spec)["layout"]
    return layout["yaxis"]["ticktext"], layout["xaxis"]["ticktext"]


@pytest.mark.parametrize("kind", ["cross", "dec_self"])
def test_explorer_labels_decoder_rows_by_the_piece_written(checkpoints, result, monkeypatch, kind):
    # on pieces (words=False, the switch away from the explorer's words): the labels compare with the tokens as is
    at = run_page("explorer", checkpoints, monkeypatch, src=SENTENCE, tgt=TARGET, kind=kind, words=False)
    (chart,) = at.get("plotly_chart")
    rows, cols = axis_labels(chart)
    assert rows == tick_labels(result.out_tokens) != tick_labels(result.tgt_tokens)
    assert cols == tick_labels(result.src_tokens if kind == "cross" else result.tgt_tokens)
    assert sum(md_escape(views.DECODER_ROWS) in c.value for c in at.caption) == 1       # the convention, said once


def test_checkpoint_snapshot_labels_decoder_rows_by_the_piece_written(checkpoints, result, monkeypatch):
    at = run_page("checkpoint", checkpoints, monkeypatch, snap_kind="cross", snap_words=False)   # pieces, not words
    chart = at.get("plotly_chart")[-1]
    assert json.loads(chart.proto.spec)["layout"]["title"]["text"].startswith("Step 100: encoder-decoder")
    assert axis_labels(chart) == (tick_labels(result.out_tokens), tick_labels(result.src_tokens))
    assert sum(md_escape(views.DECODER_ROWS) in c.value for c in at.caption) == 1


def test_compare_labels_decoder_rows_by_the_piece_written(checkpoints, result):
    model = core.load_checkpoint(checkpoints / NAME)
    cmp = compare.compare_results(*compare.attend_both(model, model, SENTENCE, tgt=TARGET))
    assert cmp.labels["cross"] == (result.out_tokens, result.src_tokens)
    assert cmp.labels["dec_self"] == (result.out_tokens, result.tgt_tokens)
    assert cmp.labels["enc_self"] == (result.src_tokens, result.src_tokens)
    # other pieces, same words (another tokenizer): compared word by word, rows still the words written
    split = hand_result(tgt=["<s>", "▁der", "▁Hund"], out=["▁der", "▁Hund", "</s>"], dec=np.tril(np.ones((3, 3))) / 3,
                        cross=CROSS[[0, 1, 3]])
    cmp = compare.compare_results(hand_result(), split)
    assert cmp.level["cross"] == "words" and cmp.labels["cross"] == (["der", "Hund", "</s>"], ["the", "dog", "</s>"])
    assert cmp.labels["dec_self"] == (["der", "Hund", "</s>"], ["<s>", "der", "Hund"])


def test_the_paper_figures_export_labels_the_sentence_as_the_pages_do(checkpoints):
    """scripts/export_figures draws encoder self-attention only (Figures 3-5): its lines join the words of the
    source, which core.views gives for that kind, on both sides."""
    model = core.load_checkpoint(checkpoints / NAME)
    figures, summary = export_figures.build(model, NAME, words=True, numbers=(4,))
    r = model.attend(FIGURE45_SENTENCE)
    words = r.view("enc_self", words=True)
    for side in (0, 1):
        (trace,) = [t for t in figures["figure4_full"].data if t.meta and t.meta.get("tokens") == side]
        assert [t.replace("<b>", "").replace("</b>", "") for t in trace.text] == tick_labels(words.rows)
    assert summary["figures"]["4"]["src_tokens"] == r.src_tokens
