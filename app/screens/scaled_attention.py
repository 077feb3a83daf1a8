"""Scaled dot-product attention step by step on small matrices you can edit, and why it scales by sqrt(d_k)."""
import numpy as np
import streamlit as st

from app import cache
from app.demo import default_sentence
from app.display import show_figure
from app.figures.sdpa import (SCALED, UNSCALED, attention_steps, collapse_chart, example_qkv, keys_table,
                              matrix_figure, random_query_keys, scaled_and_unscaled, token_labels, values_table,
                              vector_summary, walk_figure, weights_chart)
from app.text import md_escape
from app.checkpoints import is_language_model
from app.lm.explorer import default_text
from core.studies.lm_steps import capture_lm
from core.studies.step_by_step import walk
from core.views import KINDS, SHORT

D_KS = tuple(2 ** i for i in range(11))
N_SHOWN = 4                      # dimensions of q, k and v written out on the real model; the rest summarised


def editable_matrices() -> dict:
    """The sizes, then Q, K and V as editable tables (fresh examples for new sizes)."""
    c = st.columns(4)
    n_q = c[0].number_input("queries", 1, 6, 2, key="sdpa_nq")
    n_k = c[1].number_input("keys (and values)", 1, 6, 3, key="sdpa_nk")
    d_k = c[2].number_input("d_k (query and key size)", 1, 6, 2, key="sdpa_dk")
    d_v = c[3].number_input("d_v (value size)", 1, 6, 2, key="sdpa_dv")
    shape = f"{n_q}_{n_k}_{d_k}_{d_v}"                  # new shapes start from fresh example matrices
    example = example_qkv(n_q, n_k, d_k, d_v)
    edited = {}
    for col, name in zip(st.columns(3), "QKV"):
        with col:
            st.markdown(f"**{name}**")
            edited[name] = st.data_editor(example[name], key=f"sdpa_{name}_{shape}", width="stretch")
    return edited


def steps_row(edited: dict) -> None:
    """The four steps (scores, scaled, weights, output) side by side, and query 1 in words."""
    mats = {name: df.to_numpy(dtype=float) for name, df in edited.items()}
    if any(np.isnan(m).any() for m in mats.values()):
        st.warning("Every cell of Q, K and V needs a number: fill in the empty ones.")
        st.stop()
    steps = attention_steps(mats["Q"], mats["K"], mats["V"])
    d_k = mats["Q"].shape[1]
    queries, keys = list(edited["Q"].index), list(edited["K"].index)
    shown = [("scores", "1. Scores Q Kᵀ", keys, "RdBu", True),          # short titles: four figures share a row
             ("scaled", f"2. ÷ √d_k = {np.sqrt(d_k):.2f}", keys, "RdBu", True),
             ("weights", "3. Softmax: weights", keys, "Blues", False),
             ("output", "4. Output: weights × V", list(edited["V"].columns), "RdBu", True)]
    for col, (key, title, cols, scale, centered) in zip(st.columns(4), shown):
        with col:
            show_figure(matrix_figure(steps[key], title, queries, cols, scale, centered), f"sdpa_{key}",
                        key=f"sdpa_fig_{key}")
    first = steps["weights"][0]
    st.caption(f"Query 1 gives its weights {', '.join(f'{w:.2f}' for w in first)} to the keys; "
               f"its output is {', '.join(f'{x:.2f}' for x in steps['output'][0])}.")


def why_scale() -> None:
    """Random unit-variance queries and keys: the largest weight with and without the scaling, for one d_k."""
    st.header("Why divide by √d_k?")
    st.write("If the entries of q and k are independent with variance 1, q·k has variance d_k: the scores "
             "grow with the size of the vectors, the softmax then puts almost all its weight on one key, "
             "and its gradients vanish (the paper's footnote 4). Dividing by √d_k brings the variance "
             "back to 1. Below: random unit-variance q and k (seeded), 10 keys.")
    c1, c2 = st.columns([3, 1])
    dk = c1.select_slider("d_k", list(D_KS), value=64, key="sdpa_collapse_dk")
    seed = c2.number_input("random draw", 0, 10_000, 0, key="sdpa_seed", help="Another seed, another random query.")
    table = cache.collapse_table(D_KS)
    at_dk = table[table.d_k == dk].set_index("softmax")["max weight"]
    m1, m2 = st.columns(2)
    m1.metric("largest weight, scaled (mean of 200 queries)", f"{at_dk[SCALED]:.2f}")
    m2.metric("largest weight, unscaled (mean of 200 queries)", f"{at_dk[UNSCALED]:.2f}")
    q, k = random_query_keys(dk, 10, seed=int(seed))
    scaled, unscaled = scaled_and_unscaled(q, k)
    scaled, unscaled = scaled[0, 0].numpy(), unscaled[0, 0].numpy()
    measure = st.radio("Measure", ["max weight", "entropy (bits)"], horizontal=True, key="sdpa_measure",
                       help="Entropy: log2(10) = 3.32 bits for even weights over 10 keys, 0 for one-hot.")
    c1, c2 = st.columns(2)
    with c1:
        show_figure(weights_chart(scaled, unscaled, dk), f"sdpa_weights_dk{dk}", key="sdpa_weights")
    with c2:
        show_figure(collapse_chart(table, measure, dk).properties(title=f"Averaged over 200 random queries: {measure}"),
                    "sdpa_collapse", key="sdpa_collapse")


@st.cache_resource(max_entries=8, show_spinner="Reading the text…")
def lm_steps(key, text: str, layer: int, _model):
    """One text's queries, keys and values of one layer of a language model (core.studies.lm_steps)."""
    return capture_lm(_model, text, layer)


def lm_controls(model) -> dict:
    """A language model: the text, and which layer and head to follow (one kind of attention)."""
    cfg = model.cfg
    if not st.session_state.get("sdpa_lm_text"):
        st.session_state.sdpa_lm_text = st.session_state.get("lm_text") or default_text(model)
    text = st.text_input("Text (the model reads it, then we follow one head)", key="sdpa_lm_text")
    c1, c2 = st.columns(2)
    layer = c1.selectbox("Layer", range(cfg.N), key="sdpa_lm_layer", format_func=lambda i: f"{i + 1} of {cfg.N}")
    head = c2.selectbox("Head", range(cfg.h), key="sdpa_lm_head", format_func=lambda i: f"{i + 1} of {cfg.h}")
    return dict(src=text, kind="self", layer=layer, head=head)


def real_controls(model) -> dict:
    """The sentence, and which attention, layer, head and query word to follow."""
    cfg = model.cfg
    if st.session_state.get("sdpa_real_src") in (None, st.session_state.get("sdpa_real_default")):
        st.session_state.sdpa_real_src = st.session_state.sdpa_real_default = default_sentence(model.card)
    src = st.text_input("Sentence (the model translates it, then we follow one head)", key="sdpa_real_src")
    c1, c2, c3 = st.columns([3, 1, 1])
    kind = c1.segmented_control("Attention", list(KINDS), key="sdpa_real_kind", default="enc_self",
                                format_func=SHORT.get, required=True)
    n_layers = cfg.N if kind == "enc_self" else cfg.N_dec
    st.session_state.sdpa_real_layer = min(st.session_state.get("sdpa_real_layer", 4), n_layers - 1)
    layer = c2.selectbox("Layer", range(n_layers), key="sdpa_real_layer",
                         format_func=lambda i: f"{i + 1} of {n_layers}")
    head = c3.selectbox("Head", range(cfg.h), key="sdpa_real_head", format_func=lambda i: f"{i + 1} of {cfg.h}")
    return dict(src=src, kind=kind, layer=layer, head=head)


def numbers_table(df) -> None:
    """A table of the walk with three decimals, weights as bars."""
    config = {c: st.column_config.NumberColumn(format="%.3f") for c in df.columns if c != "key"}
    if "softmax weight" in df:
        config["softmax weight"] = st.column_config.ProgressColumn(format="%.3f", min_value=0, max_value=1)
    st.dataframe(df, hide_index=True, width="stretch", column_config=config,
                 height=min(36 * (len(df) + 1) + 3, 760))        # every row in view, up to about 20


def real_head() -> None:
    """The same four steps on one query of a real head of the loaded checkpoint, with its own numbers."""
    st.header("The same steps inside the real model")
    key, model = cache.model_or_stop()
    lm = is_language_model(model)
    cfg = model.cfg
    split = f" (d_model / h = {cfg.d_model} / {cfg.h})" if cfg.d_k * cfg.h == cfg.d_model else ""
    st.write(f"Now the model picked in the sidebar ({md_escape(key.name)}). In every head, each word's vector x "
             "is turned into a query q = x W^Q, a key k = x W^K and a value v = x W^V, each "
             f"d_k = {cfg.d_k} numbers long{split}. "
             f"Pick a word: we follow its query through the four steps, with the first {N_SHOWN} of the "
             f"{cfg.d_k} numbers written out and the rest summed up.")
    # a T5 model: its own formula, not the paper's (core.model.position_bias)
    score = None if lm or cfg.scale_scores else "q·k + position bias" if cfg.positions == "relative" else "q·k"
    if score:
        st.info("This model does not use the paper's formula: like T5, it does not divide by √d_k"
                + (", and adds to each score a learned bias b(j − i) of its head and of the distance from the query "
                   "to the key (the Positional encoding page draws it): softmax(q·k + b) v. The steps below are "
                   "its own." if cfg.positions == "relative" else ": softmax(q·k) v. The steps below are its own."))
    c = lm_controls(model) if lm else real_controls(model)
    try:
        steps = (lm_steps(key, c["src"], c["layer"], model) if lm
                 else cache.head_steps(key, c["src"], c["kind"], c["layer"]))
    except ValueError as e:                                 # an empty sentence and the like, in core's words
        st.warning(str(e))
        return
    rows, cols = token_labels(steps.rows), token_labels(steps.cols)
    if not lm:
        st.markdown(f"The model's translation: **{md_escape(steps.result.tgt) or '(empty)'}**")
    elif getattr(cfg, "positions", None) == "rotary":
        st.caption("This model turns each query and key by its position (rotary, drawn on the Positional encoding "
                   "page): the q and k below are the turned ones, the ones the scores are made of.")
    row = st.selectbox("Follow the query of", range(len(rows)), key=f"sdpa_real_row_{c['kind']}",
                       index=min(1, len(rows) - 1), format_func=rows.__getitem__,
                       help="Decoder rows are decoding steps, each labelled by the word it writes.")
    w = walk(steps, c["head"], row, N_SHOWN)
    groups = model.kv_groups() if lm and hasattr(model, "kv_groups") else []
    shared = next((g for g in groups if c["head"] in g and len(g) > 1), None)
    if shared:
        st.caption(f"Grouped-query attention: heads {', '.join(str(h + 1) for h in shared)} share these keys and "
                   "values; each has its own query.")
    where = f"{'self-attention' if lm else KINDS[c['kind']].lower()}, layer {c['layer'] + 1}, head {c['head'] + 1}"
    d_k = steps.d_k
    st.subheader("1. The query")
    st.markdown(md_escape(f"The query of {rows[row]} in {where}: {vector_summary('q', w.q, w.shown)}."))
    st.subheader("2. The keys, and a dot product with each")
    masked = int((~w.allowed).sum())
    st.markdown(md_escape(f"q·k multiplies the numbers of q and k pairwise and adds up all {d_k} products: the "
                          f"first {len(w.shown)} are written out, the other {d_k - len(w.shown)} added in one column.")
                + (f" The {masked} keys after this {'token' if lm else 'step'} are masked (the decoder may not look "
                   "ahead): weight 0." if masked else ""))
    numbers_table(keys_table(w, cols, score))
    st.subheader(f"3. Divide by √d_k = √{d_k} = {d_k ** 0.5:.2f}, and 4. softmax" if score is None else
                 f"3. {'Add the position bias (no ÷ √d_k)' if 'bias' in score else 'No ÷ √d_k'}, and 4. softmax")
    show_figure(walk_figure(w, cols, f"The query of {rows[row]} over the keys: {where}", score), "sdpa_real_weights",
                key="sdpa_real_weights")
    gap = float(abs(w.weights - steps.reported[c["head"], row]).max())
    st.caption(md_escape(f"This row of weights is the row of {rows[row]} in the attention explorer's map of this "
                         f"head: computed here from the weights, it differs from the model's own map by at most "
                         f"{gap:.0e}."))
    st.subheader("5. The output: the values, weighted")
    st.markdown(md_escape(f"Each key brings a value v ({d_k} numbers too). The output is the weights times the "
                          f"values, added up: {vector_summary('output', w.output, w.shown)}. The {steps.h} heads' "
                          f"outputs, side by side, go through W^O to make the layer's output for {rows[row]}."))
    numbers_table(values_table(w, cols))


st.title("Attention, step by step")
st.latex(r"\mathrm{Attention}(Q, K, V) = \mathrm{softmax}\!\left(\frac{QK^T}{\sqrt{d_k}}\right) V")
st.write("Each query (a row of Q) is compared with every key (a row of K) by a dot product; the scores "
         "are divided by √d_k and turned into weights that sum to 1 by a softmax; the output is the "
         "weighted average of the values (rows of V). Edit any number below.")
steps_row(editable_matrices())
real_head()
why_scale()
