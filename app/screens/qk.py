"""Queries and keys: a global view of one head, its query and key vectors over ~200 sentences in one 2-D picture
(AttentionViz, Yeh et al. 2023); on a language model, one head of the text typed (app.lm.qk_page). The math is in
core.studies.qk, the figures in app.figures.qk; a click on a point opens that sentence's map for the same head.
Everything is cached per checkpoint version (app.cache, qk_*).
"""
import numpy as np
import streamlit as st

from app import cache, url_state
from app.checkpoints import UNTRAINED, is_language_model, languages
from app.data_notice import offer_download
from app.display import clicked_numbers, show_figure
from app.figures.attention import heatmap_figure
from app.figures.qk import COLOR_BY, frequent_words, mark_token, word_label
from app.text import md_escape
from app.lm import qk_page
from core.datasets import how_to_get
from core.studies import qk
from core.views import DECODER_ROWS, KINDS, SHORT, attention_view

VIEWS = {"one": "One head", "layer": "Every head of the layer"}
HOW = (
    "Each point is one {d_k}-number vector of this head (d_k = d_model / h). Queries and keys "
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


def open_point():
    """A click on the scatter: open that point's sentence below (customdata [sentence, position, is_query])."""
    picked = clicked_numbers(st.session_state.get("qk_chart"), 3)
    if picked:
        st.session_state.qk_sentence = int(picked[0])
        st.session_state.qk_point = (st.session_state.qk_kind, int(picked[0]), int(picked[1]), bool(picked[2]))


def open_head():
    """A click on a small multiple (customdata [head]): that head, large."""
    picked = clicked_numbers(st.session_state.get("qk_grid"), 1)
    if picked:
        st.session_state.qk_head, st.session_state.qk_view = int(picked[0]), "one"


def explanation(name: str) -> None:
    st.caption("Every head turns each word into a **query** (what it looks for, q = x W^Q) and a **key** (what it "
               "offers, k = x W^K); a query gives its attention to the keys it scores highest, q·k. Here every query "
               "and key of one head, over a few hundred sentences, is one point of one picture, as in AttentionViz "
               "(Yeh et al., 2023): queries that sit near keys attend to them. A head that looks one word back draws "
               "its points in order of position; a head that matches words draws pairs of clusters.")
    if name == UNTRAINED:
        st.warning("No trained checkpoint is loaded: this model is random, so its queries and keys show no pattern. "
                   "Pick a trained one in the sidebar.")


def vectors(ckpt) -> dict:
    """Where the sentences come from, then {kind: QKSet} of them, or a message and st.stop()."""
    pairs, about = cache.qk_sentences(ckpt)
    if about:
        st.caption(md_escape(f"Sentences: {about}. The decoder reads the human translation (teacher forcing), so "
                             "decoder points are the words of the reference."))
    else:
        en_de = languages(cache.load_model(ckpt).card) == ("en", "de")
        st.info(f"This checkpoint ships no sample of sentences (qk_sample.jsonl) and its training data is not on "
                f"this machine, so the picture uses the {len(pairs)} demo sentences and the model's own "
                "translations: too few for clear clusters."
                + (f" {how_to_get('newstest')} fetches the paper's dev set, whose first sentences an English -> "
                   "German model then shows here." if en_de else ""))
        if en_de:
            offer_download("newstest", "qk_fetch", clear=(cache.clear_qk_vectors, cache.qk_embedding.clear,
                                                          cache.qk_layer_embedding.clear, cache.qk_scatter_figure.clear,
                                                          cache.qk_grid_figure.clear))
    try:
        return cache.qk_vectors(ckpt)
    except Exception as e:  # noqa: BLE001 the page must stay usable whatever the model does
        st.error(f"The model could not process the sentences ({type(e).__name__}: {e}). Pick another checkpoint.")
        st.stop()


def link_params(sets: dict) -> list[url_state.Param]:
    """What a link to this page holds: ?kind=cross&layer=2&head=5&sentence=12 and how the points are drawn."""
    def layers():
        return sets[st.session_state.get("qk_kind", "enc_self")].layers
    any_set = next(iter(sets.values()))
    return [url_state.choice("kind", "qk_kind", list(KINDS), "enc_self", "kind of attention"),
            url_state.choice("view", "qk_view", list(VIEWS), "one", "view"),
            url_state.number("layer", "qk_layer", layers, 0, "layer"),
            url_state.number("head", "qk_head", any_set.heads, 0, "head"),
            url_state.choice("color", "qk_color", list(COLOR_BY), "role", "colouring"),
            url_state.choice("projection", "qk_method", list(qk.PROJECTIONS), "pca", "projection"),
            url_state.flag("specials", "qk_specials", True),
            url_state.number("sentence", "qk_sentence", len(any_set.pairs), None, "sentence")]


def controls(sets: dict) -> dict:
    """Kind, view, layer, head, colouring, projection and specials; their values by name (and the kind's QKSet)."""
    link = link_params(sets)
    url_state.restore("qk", link)
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
    specials = c5.toggle("<s> and </s>", key="qk_specials", help="Include the start and end tokens: heads with "
                                                                "nothing to do often send their queries to the keys "
                                                                "of </s>.")
    if kind != "enc_self":
        st.caption(md_escape(DECODER_ROWS))
    url_state.publish("qk", link)
    return dict(kind=kind, view=view, qks=qks, layer=layer, head=head, color_by=color_by, method=method,
                specials=specials)


def whole_layer(ckpt, c: dict) -> None:
    """Every head of the layer as small multiples; a click opens one."""
    kind, layer, qks = c["kind"], c["layer"], c["qks"]
    with st.spinner("Projecting every head of the layer…"):
        embedded = cache.qk_layer_embedding(ckpt, kind, layer, c["specials"], qks)
    st.caption("Every head of this layer, PCA, same colours. Heads whose points run in lines ordered by position "
               "are positional heads. Click a head to open it large.")
    color_by = "position" if c["color_by"] == "position" else "role"
    title = f"{KINDS[kind]}, layer {layer + 1} of {qks.layers}: queries and keys of every head"
    fig = cache.qk_grid_figure(ckpt, kind, layer, c["specials"], color_by, c["head"], title, embedded)
    show_figure(fig, f"qk_{kind}_layer{layer + 1}", key="qk_grid", on_select=open_head, selection_mode="points")
    if c["color_by"] == "word":
        st.caption("Colouring by word is in the one-head view; here the points are coloured query or key.")


def one_head(ckpt, c: dict):
    """One head's queries and keys as points; returns the point clicked ((kind, sentence, position, is_query))."""
    kind, layer, head, qks, method = c["kind"], c["layer"], c["head"], c["qks"], c["method"]
    spinner = ("t-SNE of one head: seconds on a free CPU, minutes on a busy one…" if method == "tsne" else
               "Projecting…")
    try:
        with st.spinner(spinner):
            embedded = cache.qk_embedding(ckpt, kind, layer, head, method, c["specials"], qks)
        points, coords, kept = embedded
    except ValueError as e:
        st.warning(str(e))
        st.stop()
    if not points.n_queries or len(points.vectors) == points.n_queries:
        st.info("This head has no queries or no keys to draw here: show <s> and </s>, or pick another kind.")
        st.stop()
    words = None
    if c["color_by"] == "word":
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
    fig = cache.qk_scatter_figure(ckpt, kind, layer, head, method, c["specials"], c["color_by"],
                                  None if words is None else tuple(words), mark, title, axes, embedded)
    show_figure(fig, f"qk_{kind}_layer{layer + 1}_head{head + 1}", key="qk_chart", on_select=open_point,
                selection_mode="points")
    if method == "tsne" and n_sent < len(qks.pairs):
        st.caption(f"t-SNE draws the first {n_sent} sentences only, to finish in reasonable time; PCA draws all "
                   f"{len(qks.pairs)}.")
    return clicked


def one_sentence(ckpt, c: dict, clicked) -> None:
    """The map of one sentence (picked, or clicked above) for the same head, the clicked token ringed."""
    kind, layer, head, qks = c["kind"], c["layer"], c["head"], c["qks"]
    st.subheader("One sentence, the same head")
    options = list(range(len(qks.pairs)))
    if st.session_state.qk_sentence not in options:
        st.session_state.qk_sentence = None
    sentence = st.selectbox("Sentence", options, key="qk_sentence",
                            placeholder="Click a point above, or pick a sentence",
                            format_func=lambda i: f"{i + 1}: {qks.pairs[i]['src'][:90]}")
    if sentence is None:
        return
    pair = qks.pairs[sentence]
    try:
        res = cache.attend(ckpt, pair["src"], pair["tgt"], 1)
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
            st.caption(md_escape(f"The point you clicked: {'query' if is_query else 'key'} '{tokens[at]}', "
                                 f"position {at + 1}, ringed in red: its {'row' if is_query else 'column'} of the "
                                 "map."))
    st.markdown(f"**English:** {md_escape(res.src)}  \n**German ({'reference' if res.teacher_forced else 'the model'}"
                f"):** {md_escape(res.tgt)}")
    fig = heatmap_figure(v.maps[layer, head], v.rows, v.cols,
                         title=f"Sentence {sentence + 1}: {KINDS[kind]}, layer {layer + 1}, head {head + 1}",
                         zmax=1.0)
    show_figure(mark_token(fig, row, col), f"qk_{kind}_sentence{sentence + 1}_layer{layer + 1}_head{head + 1}",
                key="qk_map")


st.title("Queries and keys")
ckpt, model = cache.model_or_stop()
if is_language_model(model):          # one text typed, one head: its own page
    qk_page.page(ckpt, model)
    st.stop()
explanation(ckpt.name)
choice = controls(vectors(ckpt))
with st.expander("How the picture is made, and why moving the keys changes no attention"):
    st.markdown(HOW.format(d_k=model.cfg.d_k))
    if model.cfg.positions == "relative":          # T5: the vectors tell only part of a score
        st.markdown("This model (T5) scores a key by q·k + b(j − i), without √d_k: b is a learned bias of its head "
                    "and of the distance from the query to the key (drawn on the Positional encoding page). The "
                    "points show the q·k part only, so a key far from a query may still win by its distance.")
if choice["view"] == "layer":
    whole_layer(ckpt, choice)
else:
    one_sentence(ckpt, choice, one_head(ckpt, choice))
