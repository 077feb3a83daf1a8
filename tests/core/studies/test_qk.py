"""Queries and keys: core.studies.qk's gathering, centring and projections on hand-made vectors whose answer
is known, the figures, the shipped samples, and the page in AppTest."""
import json
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

import core
from app.figures.qk import qk_scatter, small_multiples
from core.studies import qk
from tests.helpers import tiny_model
from core.paths import REPO, shared_data

PAGE = REPO / "app" / "screens" / "qk.py"


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def points(q, k, tokens=None) -> qk.HeadPoints:
    """HeadPoints of one sentence: queries q (T, d) at positions 0..T-1, then keys k likewise."""
    Tq, Tk = len(q), len(k)
    tokens = tokens or [f"q{i}" for i in range(Tq)] + [f"k{j}" for j in range(Tk)]
    return qk.HeadPoints(np.concatenate([q, k]).astype(np.float32), Tq, np.zeros(Tq + Tk, int),
                         np.concatenate([np.arange(Tq), np.arange(Tk)]), tokens, [""] * (Tq + Tk))


def shifted_pair(T=40, d=16, offset=5.0, scale=3.0, seed=0):
    """Queries of a 'look one step back' head: key j is query j + 1's vector, scaled and moved far away."""
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(T + 1, d))
    k = scale * q[1:] + offset                                     # k_j = 3 q_{j+1} + 5: another corner, 3x longer
    return q[:-1], k


# ---- centring ----

def test_normalise_moves_the_key_centroid_onto_the_queries_and_equalises_mean_norms():
    q, k = shifted_pair()
    out, s = qk.normalise(points(q, k))
    nq, nk = out.queries.astype(np.float64), out.keys.astype(np.float64)
    np.testing.assert_allclose(nq, q, atol=1e-5)                                 # queries stay where they are
    np.testing.assert_allclose(nk.mean(0), q.mean(0), atol=1e-5)                # one centroid
    np.testing.assert_allclose(np.linalg.norm(nk, axis=1).mean(), np.linalg.norm(q, axis=1).mean(), rtol=1e-5)
    # before: far apart and of different lengths, so the test is not trivially true
    assert np.linalg.norm(k.mean(0) - q.mean(0)) > 10
    # the keys moved by one common shift after one positive scale: nk = s k + c
    c = (nk - s * k).mean(0)
    assert s > 0
    np.testing.assert_allclose(nk, s * k + c, atol=1e-4)


def test_normalise_keeps_every_querys_ranking_of_the_keys():
    q, k = shifted_pair(seed=1)
    out, s = qk.normalise(points(q, k))
    before, after = q @ k.T, out.queries.astype(np.float64) @ out.keys.astype(np.float64).T
    np.testing.assert_array_equal(np.argsort(-before, 1), np.argsort(-after, 1))
    # the scale is a temperature (honestly: weights change); the shift alone changes no weight at all
    d_k = q.shape[1]
    moved = k - k.mean(0) + q.mean(0)
    np.testing.assert_allclose(softmax(q @ moved.T / np.sqrt(d_k)), softmax(before / np.sqrt(d_k)), atol=1e-9)
    # logits after = s * logits before + a constant per row
    row_const = (after - s * before).std(1)
    assert row_const.max() < 1e-3


# ---- projection ----

def test_pca_of_points_on_a_line_is_a_line_ordered_by_position():
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=8), rng.normal(size=8)
    t = np.arange(30, dtype=float)
    x = a + t[:, None] * b + 1e-6 * rng.normal(size=(30, 8))
    coords, kept = qk.pca_2d(x)
    diffs = np.diff(coords[:, 0])
    assert (diffs > 0).all() or (diffs < 0).all()                  # ordered by position along axis 1
    np.testing.assert_allclose(np.abs(diffs), np.linalg.norm(b), rtol=1e-4)   # at the line's true spacing
    assert np.abs(coords[:, 1]).max() < 1e-4 and kept[0] > 0.999999


@pytest.mark.slow
def test_pca_agrees_with_scikit_learn_up_to_sign():
    from sklearn.decomposition import PCA
    x = np.random.default_rng(3).normal(size=(200, 12)) * np.arange(1, 13)
    coords, kept = qk.pca_2d(x)
    ref = PCA(2).fit(x)
    want = ref.transform(x)
    for i in range(2):
        sign = np.sign(coords[:, i] @ want[:, i])
        np.testing.assert_allclose(coords[:, i], sign * want[:, i], atol=1e-8)
    np.testing.assert_allclose(kept, ref.explained_variance_ratio_, rtol=1e-8)


def test_a_shifted_head_draws_queries_and_keys_in_order_of_position():
    """Queries at position p and keys at p - 1 share a position code: both lie on one curve ordered by position."""
    T, d = 60, 8
    code = np.stack([np.cos(np.arange(T + 1) * 0.05), np.sin(np.arange(T + 1) * 0.05)], 1) @ np.eye(2, d)
    q, k = code[:-1], 2.0 * code[1:] + 4.0
    out, _ = qk.normalise(points(q, k))
    coords, _ = qk.project(out, "pca")
    for part in (coords[:T, 0], coords[T:, 0]):
        diffs = np.diff(part)
        assert (diffs > 0).all() or (diffs < 0).all()
    # key j sits where query j + 1 sits: the centring brought them together
    np.testing.assert_allclose(coords[T:-1], coords[1:T], atol=0.05 * np.ptp(coords[:, 0]))


@pytest.mark.slow
def test_tsne_gives_two_coordinates_per_point_and_refuses_tiny_sets():
    q, k = shifted_pair(T=20, d=6)
    coords, kept = qk.project(points(q, k), "tsne")
    assert coords.shape == (40, 2) and np.isfinite(coords).all() and kept is None
    with pytest.raises(ValueError, match="at least 6"):
        qk.project(points(q[:2], k[:2]), "tsne")
    with pytest.raises(ValueError, match="unknown projection"):
        qk.project(points(q, k), "umap")


# ---- gathering over sentences ----

def fake_result(S, T, N=2, h=3, d=4, seed=0):
    """An AttendResult-like object with vectors of the documented shapes (core.views labels)."""
    rng = np.random.default_rng(seed)
    src = [f"▁s{i}" for i in range(S - 1)] + ["</s>"]
    out = [f"▁o{i}" for i in range(T - 1)] + ["</s>"]
    tgt = ["<s>"] + out[:-1]
    def v(n):
        return rng.normal(size=(N, h, n, d)).astype(np.float32)
    return SimpleNamespace(src="x", tgt="y", src_tokens=src, tgt_tokens=tgt, out_tokens=out,
                           vectors={"enc_self": (v(S), v(S)), "dec_self": (v(T), v(T)), "cross": (v(T), v(S))})


def test_gather_keeps_each_point_with_its_sentence_position_and_token():
    results = [fake_result(4, 3, seed=0), fake_result(2, 5, seed=1)]
    cross = qk.gather(results, "cross", dtype=np.float32)
    assert cross.q.shape == (2, 3, 8, 4) and cross.k.shape == (2, 3, 6, 4)      # 3 + 5 queries, 4 + 2 keys
    pts = cross.head(1, 2)
    assert pts.n_queries == 8 and len(pts.vectors) == 14
    # query 4 of the second sentence is its decoder row 4 (labelled by what it writes), layer 2, head 3
    i = next(n for n in range(8) if pts.sentence[n] == 1 and pts.position[n] == 4)
    np.testing.assert_array_equal(pts.vectors[i], results[1].vectors["cross"][0][1, 2, 4])
    assert pts.tokens[i] == "</s>" and pts.context[i].endswith("[</s>]")
    j = 8 + next(n for n in range(6) if pts.sentence[8 + n] == 0 and pts.position[8 + n] == 2)
    np.testing.assert_array_equal(pts.vectors[j], results[0].vectors["cross"][1][1, 2, 2])
    assert pts.tokens[j] == "▁s2"
    plain = cross.head(0, 0, specials=False)
    assert "</s>" not in plain.tokens and "<s>" not in plain.tokens and len(plain.vectors) == 14 - 4
    with pytest.raises(ValueError, match="vectors=True"):
        qk.gather([SimpleNamespace(vectors=None)], "enc_self")


def test_gathered_vectors_of_a_real_model_give_back_its_maps(translation_model):
    """softmax(q k^T / sqrt(d_k)) of one sentence's gathered points is the map the model returned."""
    pairs = [{"src": "the quick brown fox", "tgt": "der schnelle Fuchs"}, {"src": "two girls", "tgt": "zwei Mädchen"}]
    sets = qk.collect(translation_model, pairs)
    results = translation_model.attend_batch([p["src"] for p in pairs], [p["tgt"] for p in pairs])
    for kind, qks in sets.items():
        layer, head = qks.layers - 1, qks.heads - 1
        pts = qks.head(layer, head)
        for s, r in enumerate(results):
            q = pts.queries[pts.sentence[: pts.n_queries] == s]
            k = pts.keys[pts.sentence[pts.n_queries:] == s]
            logits = q @ k.T / np.sqrt(q.shape[1])
            if kind == "dec_self":
                logits = np.where(np.tril(np.ones_like(logits, dtype=bool)), logits, -np.inf)
            np.testing.assert_allclose(softmax(logits), getattr(r, kind)[layer, head], atol=5e-3)  # float16 kept


def test_first_sentences_cuts_whole_sentences():
    qks = qk.gather([fake_result(4, 3, seed=i) for i in range(5)], "enc_self")
    cut = qks.first_sentences(17)                 # 8 points a sentence: two fit
    assert len(cut.pairs) == 2 and set(cut.q_sentence.tolist()) == {0, 1} and cut.q.shape[2] == 8
    assert qks.first_sentences(10_000) is qks


def test_sentence_contexts_bracket_the_token_and_stay_short():
    tokens = ["▁the", "▁c", "at", "▁sat", "</s>"]
    assert qk.sentence_contexts(tokens) == ["[the] cat sat </s>", "the [c]at sat </s>", "the c[at] sat </s>",
                                            "the cat [sat] </s>", "the cat sat [</s>]"]
    long = qk.sentence_contexts([f"▁w{i}" for i in range(40)], width=3)
    assert long[20] == "… w17 w18 w19 [w20] w21 w22 w23 …" and long[0] == "[w0] w1 w2 w3 …"


# ---- figures ----

def test_small_multiples_has_one_panel_per_head_and_clicks_name_the_head():
    qks = qk.gather([fake_result(6, 5, N=2, h=3, seed=i) for i in range(3)], "enc_self")
    embeddings = qk.layer_embeddings(qks, 1)
    assert len(embeddings) == 3 and all(c.shape == (len(p.vectors), 2) for p, c, _ in embeddings)
    fig = small_multiples(embeddings, "role", "layer 2", selected=1)
    assert [a.text for a in fig.layout.annotations] == ["head 1", "<b>head 2 ◀</b>", "head 3"]
    assert len(fig.data) == 6                                        # queries and keys of each head
    assert [int(t.customdata[0][0]) for t in fig.data] == [0, 0, 1, 1, 2, 2]
    assert sum(len(t.x) for t in fig.data[:2]) == len(embeddings[0][0].vectors)


def test_scatter_colours_and_hover():
    qks = qk.gather([fake_result(6, 5, seed=i) for i in range(3)], "cross")
    pts, coords, _ = qk.head_embedding(qks, 0, 0)
    fig = qk_scatter(pts, coords, "role", mark=0)
    names = [t.name for t in fig.data]
    assert names == ["queries", "keys", "clicked"]
    hover = fig.data[0].hovertext[0]
    assert hover.startswith("query 1 of sentence 1<br>") and "[o0]" in hover
    assert list(fig.data[0].customdata[0]) == [0, 0, 1]              # sentence, position, is_query
    by_word = qk_scatter(pts, coords, "word", words=["</s>", "▁s1"])
    assert sum(len(t.x) for t in by_word.data) == len(pts.vectors)
    by_pos = qk_scatter(pts, coords, "position")
    assert by_pos.layout.coloraxis.cmin == 1 and by_pos.layout.coloraxis.cmax == 6


# ---- the sentences ----

def test_checkpoint_sample_reads_the_shipped_file_then_the_corpus(tmp_path):
    folder = tmp_path / "ckpt"
    folder.mkdir()
    assert qk.checkpoint_sample(folder, {}) == ([], "")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "valid.en").write_text("One.\nTwo.\n\nFour.\n", encoding="utf-8")
    (corpus / "valid.de").write_text("Eins.\nZwei.\n\nVier.\n", encoding="utf-8")
    card = {"data": {"prep_report": {"corpus": str(corpus)}}}
    pairs, about = qk.checkpoint_sample(folder, card, n=2)
    assert pairs == [{"src": "One.", "tgt": "Eins."}, {"src": "Two.", "tgt": "Zwei."}] and str(corpus) in about
    lines = [{"sample": "three test pairs"}, {"line": 1, "src": "A.", "tgt": "B."}, {"line": 2, "src": "C."}]
    (folder / qk.SAMPLE_FILE).write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    assert qk.checkpoint_sample(folder, card) == ([{"src": "A.", "tgt": "B."}, {"src": "C.", "tgt": None}],
                                                  "three test pairs")


@pytest.mark.parametrize("name,corpus", [("news-small", "wmt-en-de"), ("multi30k-small", "multi30k")])
def test_shipped_samples_are_small_and_are_the_first_dev_sentences(name, corpus):
    path = REPO / "checkpoints" / name / qk.SAMPLE_FILE
    if not path.exists():
        pytest.skip(f"{name} is not shipped here")
    assert path.stat().st_size < 100_000
    pairs, about = qk.read_sample(path)
    assert len(pairs) == qk.SAMPLE_SIZE and "first 200" in about and all(p["tgt"] for p in pairs)
    data = shared_data(corpus)                          # the corpus, where this machine keeps it (core/paths.py)
    if (data / "valid.en").exists():
        assert pairs == qk.read_corpus(data, "valid", qk.SAMPLE_SIZE)


# ---- the page ----

NAME = "tiny-qk"
SAMPLE = [("the quick brown fox", "der schnelle braune Fuchs"), ("a man in a blue shirt", "ein Mann in einem Hemd"),
          ("two young girls are playing", "zwei junge Mädchen spielen"),
          ("the weather is nice", "das Wetter ist schön"), ("the lazy dog", "der faule Hund"),
          ("the children are happy", "die Kinder sind fröhlich")]


@pytest.fixture(scope="module")
def tiny_checkpoints(tmp_path_factory, tokenizer):
    """A folder with one tiny random checkpoint that ships a qk_sample.jsonl of six pairs."""
    root = tmp_path_factory.mktemp("checkpoints")
    folder = root / NAME
    torch.manual_seed(0)
    core.save_checkpoint(folder, tiny_model(len(tokenizer)), tokenizer, {"name": NAME, "trained_here": True})
    rows = [{"sample": "six test sentences"}] + [{"line": i + 1, "src": s, "tgt": t} for i, (s, t) in enumerate(SAMPLE)]
    (folder / qk.SAMPLE_FILE).write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return root


def run_page(at: AppTest) -> AppTest:
    at.run(timeout=120)                      # generous: the machine's cores are shared with training runs
    assert not at.exception, [e.value for e in at.exception]
    return at


def spec(chart) -> dict:
    return json.loads(chart.proto.spec)


def xs(trace) -> list:
    """A trace's x values from a chart's JSON (plain list, or Plotly's typed-array dict {"dtype", "bdata"})."""
    x = trace["x"]
    if isinstance(x, dict):
        import base64
        return np.frombuffer(base64.b64decode(x["bdata"]), dtype=x["dtype"]).tolist()
    return x


def test_page_draws_a_head_opens_a_sentence_and_the_whole_layer(tiny_checkpoints, monkeypatch, tokenizer):
    monkeypatch.setenv("ATTN_EXPLORER_CHECKPOINTS", str(tiny_checkpoints))
    at = AppTest.from_file(str(PAGE), default_timeout=120)
    at.session_state["checkpoint"] = NAME
    run_page(at)
    assert any("six test sentences" in c.value for c in at.caption)
    [chart] = at.get("plotly_chart")
    fig = spec(chart)
    assert "layer 1 of 2, head 1 of 4" in fig["layout"]["title"]["text"]
    # every source piece and </s> of the six sentences, once as a query and once as a key
    pieces = sum(len(tokenizer.encode(core.clean_text(s), "src")) + 1 for s, _ in SAMPLE)
    assert [t["name"] for t in fig["data"]] == ["queries", "keys"]
    assert [len(xs(t)) for t in fig["data"]] == [pieces, pieces]
    # a click stores [kind, sentence, position, is_query]; here as the click callback would
    at.session_state["qk_point"] = ("enc_self", 2, 1, False)
    at.session_state["qk_sentence"] = 2
    run_page(at)
    charts = at.get("plotly_chart")
    assert len(charts) == 2
    heat = spec(charts[1])
    assert heat["layout"]["title"]["text"].startswith("Sentence 3: Encoder self-attention, layer 1, head 1")
    assert heat["layout"]["shapes"][0]["x0"] == 0.5                  # key 2 (position 1): its column is ringed
    assert any(c.value.startswith("The point you clicked") and " key " in c.value for c in at.caption)
    # another head keeps the sentence; the decoder has one layer fewer here
    at.selectbox(key="qk_head").set_value(3)
    run_page(at)
    assert spec(at.get("plotly_chart")[1])["layout"]["title"]["text"].endswith("layer 1, head 4")
    at.segmented_control(key="qk_view").set_value("layer")
    run_page(at)
    grid = spec(at.get("plotly_chart")[0])
    assert [a["text"] for a in grid["layout"]["annotations"]] == ["head 1", "head 2", "head 3", "<b>head 4 ◀</b>"]


@pytest.mark.slow
def test_page_colours_by_word_projects_with_tsne_and_leaves_out_specials(tiny_checkpoints, monkeypatch):
    monkeypatch.setenv("ATTN_EXPLORER_CHECKPOINTS", str(tiny_checkpoints))
    at = AppTest.from_file(str(PAGE), default_timeout=120)
    at.session_state["checkpoint"] = NAME
    at.session_state["qk_kind"] = "cross"
    at.session_state["qk_color"] = "word"
    run_page(at)
    assert at.multiselect(key="qk_words").value                       # the most frequent words, picked for a start
    at.segmented_control(key="qk_method").set_value("tsne")
    at.toggle(key="qk_specials").set_value(False)
    run_page(at)
    fig = spec(at.get("plotly_chart")[0])
    assert fig["layout"]["xaxis"]["title"]["text"] == "t-SNE 1"
    names = " ".join(t["name"] for t in fig["data"])
    assert "&lt;/s&gt;" not in names and "</s>" not in names


@pytest.mark.slow
def test_page_without_checkpoints_uses_the_demo_sentences(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTN_EXPLORER_CHECKPOINTS", str(tmp_path))
    at = run_page(AppTest.from_file(str(PAGE), default_timeout=120))
    assert any("demo sentences" in i.value for i in at.info)
    assert len(at.get("plotly_chart")) == 1
