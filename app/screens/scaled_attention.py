"""Scaled dot-product attention step by step on small matrices you can edit, and why it scales by sqrt(d_k)."""
import numpy as np
import streamlit as st

from app import cache
from app.display import show_figure
from app.figures.sdpa import (SCALED, UNSCALED, attention_steps, collapse_chart, example_qkv, matrix_figure,
                              random_query_keys, scaled_and_unscaled, weights_chart)

D_KS = tuple(2 ** i for i in range(11))


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


st.title("Attention, step by step")
st.latex(r"\mathrm{Attention}(Q, K, V) = \mathrm{softmax}\!\left(\frac{QK^T}{\sqrt{d_k}}\right) V")
st.write("Each query (a row of Q) is compared with every key (a row of K) by a dot product; the scores "
         "are divided by √d_k and turned into weights that sum to 1 by a softmax; the output is the "
         "weighted average of the values (rows of V). Edit any number below.")
steps_row(editable_matrices())
why_scale()
