"""Queries and keys: a global view of one head, its query and key vectors over ~200 sentences in one 2-D picture
(AttentionViz, Yeh et al. 2023). The math is in core.studies.qk, the figures in app.figures.qk; a click on a point opens
that sentence's map for the same head. Everything is cached per checkpoint version (app.common.checkpoint_version).
"""
import threading

import numpy as np
import streamlit as st

from app.common import UNTRAINED, checkpoint_version, get_attention, get_model, model_or_stop, plain, show_figure
from app.demo import DOMAINS, demo_sentences
from app.figures.attention import heatmap_figure
from app.figures.qk import COLOR_BY, frequent_words, mark_token, qk_scatter, small_multiples, word_label
from core.studies import qk
from core.views import DECODER_ROWS, KINDS, SHORT, attention_view

VIEWS = {"one": "One head", "layer": "Every head of the layer"}


# ---- caches, keyed on the checkpoint's name and version ----

@st.cache_data(show_spinner=False, max_entries=8)
def sentences(name: str, version: str) -> tuple[list[dict], str]:
    """The view's sentence pairs and where they come from: the checkpoint's sample, its dev data, or demo sentences."""
    model = get_model(name)
    pairs, about = qk.checkpoint_sample(model.folder, model.card)
    if pairs:
        return pairs, about
    demo = list(dict.fromkeys(demo_sentences(model.card) + [s for _, ex in DOMAINS.values() for s in ex.values()]))
    return [{"src": s, "tgt": None} for s in demo], ""


@st.cache_resource(max_entries=2, show_spinner=False)
def _store(name: str, version: str) -> dict:
    """A shared slot for one checkpoint version's vectors: filled once (with a progress bar), read by every session."""
    return {"lock": threading.Lock(), "sets": None}


def vector_sets(name: str, version: str, model, pairs: list[dict]) -> dict:
    """{kind: core.studies.qk.QKSet} of the sentences, computed by the first session that asks (the others wait)."""
    store = _store(name, version)
    with store["lock"]:
        if store["sets"] is None:
            bar = st.progress(0.0, text=f"Running the model on {len(pairs)} sentences and keeping every head's "
                                        "queries and keys (once per checkpoint)…")
            def progress(done, total):
                bar.progress(done / max(total, 1), text=f"Running the model: {done} of {total} sentences…")
            store["sets"] = qk.collect(model, pairs, progress=progress)
            bar.empty()
    return store["sets"]


# Below, an argument whose name starts with "_" is not part of a cache's key (Streamlit's rule): the key is the
# checkpoint's name and version and the choices; the object passed is what those stand for.

@st.cache_resource(max_entries=64, show_spinner=False)
def embedding(name: str, version: str, kind: str, layer: int, head: int, method: str, specials: bool,
              _qks: qk.QKSet):
    """(points, coords, variance kept) of one head, shared read-only by every session (qk.head_embedding)."""
    qks = _qks
    if method == "tsne":
        qks = qks.first_sentences(qk.TSNE_MAX_POINTS)
    return qk.head_embedding(qks, layer, head, method, specials)


@st.cache_resource(max_entries=16, show_spinner=False)
def layer_embedding(name: str, version: str, kind: str, layer: int, specials: bool, _qks: qk.QKSet) -> list:
    """PCA of every head of one layer (core.studies.qk.layer_embeddings)."""
    return qk.layer_embeddings(_qks, layer, "pca", specials)


# Figures are cached too, shared read-only: building one with thousands of points costs a second or two here.
@st.cache_resource(max_entries=32, show_spinner=False)
def scatter_figure(name: str, version: str, kind: str, layer: int, head: int, method: str, specials: bool,
                   color_by: str, words: tuple | None, mark: int | None, title: str, axes: tuple, _embedded: tuple):
    points, coords, _ = _embedded
    return qk_scatter(points, coords, color_by, None if words is None else list(words), title=title,
                      axis_titles=axes, mark=mark)


@st.cache_resource(max_entries=16, show_spinner=False)
def grid_figure(name: str, version: str, kind: str, layer: int, specials: bool, color_by: str, selected: int,
                title: str, _embedded: list):
    return small_multiples(_embedded, color_by, title, selected=selected)


# ---- clicks ----

def open_point():
    """A click on the scatter: open that point's sentence below (customdata [sentence, position, is_query])."""
    for point in ((st.session_state.get("qk_chart") or {}).get("selection") or {}).get("points", []):
        data = point.get("customdata")
        if isinstance(data, dict):                          # a typed array arrives as {"0": ..., "1": ...}
            data = [data.get(str(i)) for i in range(3)]
        if isinstance(data, (list, tuple)) and len(data) >= 3 and all(isinstance(x, (int, float)) for x in data[:3]):
            st.session_state.qk_sentence = int(data[0])
            st.session_state.qk_point = (st.session_state.qk_kind, int(data[0]), int(data[1]), bool(data[2]))
            return


def open_head():
    """A click on a small multiple: that head, large."""
    for point in ((st.session_state.get("qk_grid") or {}).get("selection") or {}).get("points", []):
        data = point.get("customdata")
        data = data.get("0") if isinstance(data, dict) else data[0] if isinstance(data, (list, tuple)) else data
        if isinstance(data, (int, float)):
            st.session_state.qk_head, st.session_state.qk_view = int(data), "one"
            return


# ---- the page ----

st.title("Queries and keys")
name, model = model_or_stop()
cfg, version = model.cfg, checkpoint_version(name)
st.caption("Every head turns each word into a **query** (what it looks for, q = x W^Q) and a **key** (what it "
           "offers, k = x W^K); a query gives its attention to the keys it scores highest, q·k. Here every query "
           "and key of one head, over a few hundred sentences, is one point of one picture, as in AttentionViz "
           "(Yeh et al., 2023): queries that sit near keys attend to them. A head that looks one word back draws "
           "its points in order of position; a head that matches words draws pairs of clusters.")
if name == UNTRAINED:
    st.warning("No trained checkpoint is loaded: this model is random, so its queries and keys show no pattern. "
               "Pick a trained one in the sidebar.")

pairs, about = sentences(name, version)
if about:
    st.caption(plain(f"Sentences: {about}. The decoder reads the human translation (teacher forcing), so decoder "
                     "points are the words of the reference."))
else:
    st.info(f"This checkpoint ships no sample of sentences (qk_sample.jsonl) and its training data is not on this "
            f"machine, so the picture uses the {len(pairs)} demo sentences and the model's own translations: "
            "too few for clear clusters.")
try:
    sets = vector_sets(name, version, model, pairs)
except Exception as e:  # noqa: BLE001 the page must stay usable whatever the model does
    st.error(f"The model could not process the sentences ({type(e).__name__}: {e}). Pick another checkpoint.")
    st.stop()

for key, default in [("qk_kind", "enc_self"), ("qk_view", "one"), ("qk_layer", 0), ("qk_head", 0),
                     ("qk_color", "role"), ("qk_method", "pca"), ("qk_specials", True), ("qk_sentence", None)]:
    st.session_state.setdefault(key, default)

c1, c2 = st.columns([2, 2])
kind = c1.segmented_control("Attention", list(KINDS), key="qk_kind", format_func=SHORT.get, required=True,
                            help="Encoder self: source words' queries and keys. Decoder self: the translation's. "
                                 "Encoder-decoder: the translation's queries and the source's keys.")
view = c2.segmented_control("View", list(VIEWS), key="qk_view", format_func=VIEWS.get, required=True)
qks = sets[kind]
st.session_state.qk_layer = min(st.session_state.qk_layer, qks.layers - 1)   # the decoder may have fewer layers
st.session_state.qk_head = min(st.session_state.qk_head, qks.heads - 1)
c1, c2, c3, c4, c5 = st.columns([1, 1, 2, 1.3, 1.2])
layer = c1.selectbox("Layer", range(qks.layers), key="qk_layer", format_func=lambda i: f"{i + 1} of {qks.layers}")
head = c2.selectbox("Head", range(qks.heads), key="qk_head", format_func=lambda i: f"{i + 1} of {qks.heads}",
                    disabled=view == "layer")
color_by = c3.segmented_control("Colour by", list(COLOR_BY), key="qk_color", format_func=COLOR_BY.get,
                                required=True, help="Every point is a query (circle) or a key (diamond).")
method = c4.segmented_control("Projection", list(qk.PROJECTIONS), key="qk_method", required=True,
                              format_func=qk.PROJECTIONS.get, disabled=view == "layer",
                              help="PCA (fast): the two directions in which the points spread most; distances "
                                   "are honest but much is hidden. t-SNE (slow: the first sentences only): near "
                                   "neighbours stay near, but distances between clusters mean little.")
specials = c5.toggle("<s> and </s>", key="qk_specials", help="Include the start and end tokens: heads with nothing "
                                                            "to do often send their queries to the keys of </s>.")
if kind != "enc_self":
    st.caption(plain(DECODER_ROWS))

with st.expander("How the picture is made, and why moving the keys changes no attention"):
    st.markdown(
        f"Each point is one {cfg.d_model // cfg.h}-number vector of this head (d_k = d_model / h). Queries and keys "
        "come from different matrices, W^Q and W^K, so they can sit in different corners of that space; drawn as "
        "they are, they would make two far-apart clouds. Following AttentionViz, before drawing we **move all keys by "
        "one vector** so that the centre of the keys is the centre of the queries, and **scale them about that "
        "centre** so that keys are as long as queries on average.\n\n"
        "Why this changes no ranking: a query q scores key k by q·k / √d_k, and the softmax over one query's row "
        "only sees the differences between its scores. Moving every key by the same vector c adds q·c to every "
        "score of the row: the same amount for all keys, so the row's weights do not change at all. Scaling every "
        "key by the same s > 0 multiplies every score of the row by s: the order of the keys is kept, so each "
        "query still prefers the same keys. To be honest about it, the weights themselves would become sharper "
        "(s > 1) or flatter (s < 1), like a temperature: the picture keeps rankings, not exact weights. The maps "
        "below are the model's own, never recomputed from these vectors.\n\n"
        "Two dimensions are a shadow of d_k: PCA keeps the two directions of largest spread (the axis titles "
        "say how much of it), t-SNE keeps near neighbours near. A query next to a key usually scores it high, "
        "but not always.")

if view == "layer":
    with st.spinner("Projecting every head of the layer…"):
        embedded = layer_embedding(name, version, kind, layer, specials, qks)
    st.caption("Every head of this layer, PCA, same colours. Heads whose points run in lines ordered by position "
               "are positional heads. Click a head to open it large.")
    fig = grid_figure(name, version, kind, layer, specials, "position" if color_by == "position" else "role", head,
                      f"{KINDS[kind]}, layer {layer + 1} of {qks.layers}: queries and keys of every head", embedded)
    show_figure(fig, f"qk_{kind}_layer{layer + 1}", key="qk_grid", on_select=open_head, selection_mode="points")
    if color_by == "word":
        st.caption("Colouring by word is in the one-head view; here the points are coloured query or key.")
    st.stop()

spinner = ("t-SNE of one head: seconds on a free CPU, minutes on a busy one…" if method == "tsne" else "Projecting…")
try:
    with st.spinner(spinner):
        embedded = embedding(name, version, kind, layer, head, method, specials, qks)
    points, coords, kept = embedded
except ValueError as e:
    st.warning(str(e))
    st.stop()
if not points.n_queries or len(points.vectors) == points.n_queries:
    st.info("This head has no queries or no keys to draw here: show <s> and </s>, or pick another kind.")
    st.stop()
words = None
if color_by == "word":
    offered = frequent_words(points, 30)
    st.session_state.qk_words = [w for w in st.session_state.get("qk_words", offered[:8]) if w in offered]
    words = st.multiselect("Words to colour", offered, key="qk_words", max_selections=10, format_func=word_label,
                           help="The 30 most frequent tokens of these points; the others are grey.")
if kept is not None:
    axes = tuple(f"PCA axis {i + 1} ({kept[i]:.0%} of the spread)" for i in range(2))
else:
    axes = ("t-SNE 1", "t-SNE 2")
n_sent = len(set(points.sentence.tolist()))
clicked = st.session_state.get("qk_point")
mark = None
if clicked and clicked[0] == kind:
    hit = np.flatnonzero((points.sentence == clicked[1]) & (points.position == clicked[2])
                         & (points.is_query == clicked[3]))
    mark = int(hit[0]) if len(hit) else None
title = (f"{KINDS[kind]}, layer {layer + 1} of {qks.layers}, head {head + 1} of {qks.heads}: "
         f"{points.n_queries:,} queries and {len(points.vectors) - points.n_queries:,} keys of {n_sent} sentences")
fig = scatter_figure(name, version, kind, layer, head, method, specials, color_by, None if words is None
                     else tuple(words), mark, title, axes, embedded)
show_figure(fig, f"qk_{kind}_layer{layer + 1}_head{head + 1}", key="qk_chart", on_select=open_point,
            selection_mode="points")
if method == "tsne" and n_sent < len(qks.pairs):
    st.caption(f"t-SNE draws the first {n_sent} sentences only, to finish in reasonable time; PCA draws all "
               f"{len(qks.pairs)}.")

# ---- the map of one sentence, for the same head ----

st.subheader("One sentence, the same head")
options = list(range(len(qks.pairs)))
if st.session_state.qk_sentence not in options:
    st.session_state.qk_sentence = None
sentence = st.selectbox("Sentence", options, key="qk_sentence", placeholder="Click a point above, or pick a sentence",
                        format_func=lambda i: f"{i + 1}: {qks.pairs[i]['src'][:90]}")
if sentence is not None:
    pair = qks.pairs[sentence]
    try:
        res = get_attention(name, pair["src"], pair["tgt"], 1)
    except Exception as e:  # noqa: BLE001 the page must stay usable whatever the model does
        st.error(f"The model could not process this sentence ({type(e).__name__}: {e}).")
        st.stop()
    v = attention_view(res, kind)
    row = col = None
    if clicked and clicked[:2] == (kind, sentence):
        _, _, at, is_query = clicked
        tokens = v.rows if is_query else v.cols
        if at < len(tokens):
            row, col = (at, None) if is_query else (None, at)
            st.caption(plain(f"The point you clicked: {'query' if is_query else 'key'} '{tokens[at]}', position "
                             f"{at + 1}, ringed in red: its {'row' if is_query else 'column'} of the map."))
    st.markdown(f"**English:** {plain(res.src)}  \n**German ({'reference' if res.teacher_forced else 'the model'}):** "
                f"{plain(res.tgt)}")
    fig = heatmap_figure(v.maps[layer, head], v.rows, v.cols,
                         title=f"Sentence {sentence + 1}: {KINDS[kind]}, layer {layer + 1}, head {head + 1}",
                         zmax=1.0)
    show_figure(mark_token(fig, row, col), f"qk_{kind}_sentence{sentence + 1}_layer{layer + 1}_head{head + 1}",
                key="qk_map")
