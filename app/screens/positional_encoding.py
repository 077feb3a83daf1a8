"""Positional encoding (section 3.5): waves, the whole table, and why it encodes relative distances; for a T5
model in the sidebar, first what it has instead: each head's learned bias over relative distance."""
import streamlit as st

from app import cache
from app.display import show_figure
from app.figures.positional import (bias_figure, default_dims, dot_heatmap, offset_dots, offset_figure, pe_heatmap,
                                    pe_table, waves_figure)
from app.text import md_escape


def the_table():
    """d_model, positions and layout; the waves of some dimensions and the whole table. Returns the table."""
    c1, c2, c3 = st.columns(3)
    d_model = c1.select_slider("d_model", [16, 32, 64, 128, 256, 512, 1024], value=512, key="pe_d_model")
    n_pos = c2.slider("positions", 10, 1000, 100, step=10, key="pe_positions")
    layout = c3.radio("Layout", ["interleaved", "concat"], key="pe_layout", horizontal=True,
                      format_func={"interleaved": "sin, cos interleaved (the paper)",
                                   "concat": "all sines, then all cosines (Marian)"}.get)
    pe = pe_table(n_pos, d_model, layout)
    dims = st.multiselect("Dimensions to draw", list(range(d_model)), default=default_dims(d_model, layout),
                          key=f"pe_dims_{d_model}_{layout}", help="Low frequencies i oscillate fast, high ones slowly.")
    if dims:
        show_figure(waves_figure(pe, dims, layout), f"pe_waves_{d_model}", key="pe_waves")
    else:
        st.info("Pick at least one dimension to draw its wave.")
    grouped = layout == "concat" or st.radio(
        "Columns of the matrix", [True, False], key="pe_matrix_grouped", horizontal=True,
        format_func=lambda g: "sines, then cosines" if g else "as stored (sin, cos, sin, cos, …)",
        help="The paper interleaves sines and cosines. Drawn that way, neighbouring columns of a slow wave "
             "alternate between about 0 (sine) and about 1 (cosine), which looks like fine stripes or a glitch.")
    show_figure(pe_heatmap(pe, layout, grouped), f"pe_matrix_{d_model}_{n_pos}_{layout}", key="pe_matrix")
    st.caption("Each row is the vector added at one position. Left columns (small i) change fast from row to row, "
               "right ones slowly: together they give every position its own pattern."
               + (" Shown grouped: the model stores them interleaved, sin and cos of each frequency side by side."
                  if grouped and layout == "interleaved" else ""))
    return pe


def distances(pe) -> None:
    """Dot products of positions depend on their distance only: the matrix, the curves and their largest gap."""
    n_pos, d_model = pe.shape
    st.write("For any offset k, PE(pos + k) is a rotation of PE(pos) (a fixed linear function of it), so "
             "the dot product of two positions depends only on how far apart they are, not where they are: "
             "the matrix below is constant along every diagonal, and the curves on the right coincide. "
             "The layout only reorders dimensions, which changes no dot product.")
    max_k = st.slider("largest distance k", 5, max(5, n_pos - 1), min(50, n_pos - 1), key=f"pe_max_k_{n_pos}")
    starts = [p for p in (0, n_pos // 4, n_pos // 2) if p + 1 < n_pos]
    c1, c2 = st.columns(2)
    with c1:
        show_figure(dot_heatmap(pe), f"pe_dots_{d_model}_{n_pos}", key="pe_dots")
    with c2:
        show_figure(offset_figure(pe, starts, max_k), f"pe_offsets_{d_model}", key="pe_offsets")
    k_max = min(len(offset_dots(pe, p, max_k)) for p in starts)
    spread = max(abs(offset_dots(pe, p, max_k)[:k_max] - offset_dots(pe, 0, max_k)[:k_max]).max() for p in starts)
    st.caption(f"Largest difference between the curves: {spread:.1e} (float32 rounding); "
               f"PE(p)·PE(p) = {pe[0] @ pe[0]:.1f} = d_model / 2 for every p.")


def learned_bias() -> None:
    """A model with T5's relative positions: its encoder's and decoder's learned bias per head over distance."""
    key = cache.current_checkpoint()
    bias = cache.position_bias(key)
    if bias is None:
        return
    st.header(f"This model, {md_escape(key.name)}, has no such table")
    st.write("Like T5, it adds nothing to its embeddings. Each head adds a learned number b(j − i) to the score of "
             "query i and key j before the softmax, in every layer: the sinusoids below let attention work out "
             "distances from dot products, whereas this bias favours or avoids some distances directly, head by "
             "head (no 1/√d_k either). Distances share buckets: one each up close, wider ones farther away, one for "
             "everything beyond the last.")
    c1, c2 = st.columns(2)
    for column, stack, what in [(c1, "encoder", "Encoder: keys on both sides"),
                                (c2, "decoder", "Decoder: only the words before")]:
        with column:
            show_figure(bias_figure(*bias[stack], what), f"position_bias_{stack}", key=f"pe_bias_{stack}")
    st.header("The paper's positional encoding")


st.title("Positional encoding")
st.latex(r"PE_{(pos, 2i)} = \sin\!\left(pos / 10000^{2i/d_{model}}\right) \qquad "
         r"PE_{(pos, 2i+1)} = \cos\!\left(pos / 10000^{2i/d_{model}}\right)")
st.write("Attention by itself does not know word order, so each position gets this vector added to its "
         "word's embedding. Every pair of dimensions is a sine and a cosine of one frequency, from one "
         "turn every 2π positions down to one every 10000·2π.")
learned_bias()
pe = the_table()
st.header("It encodes distances")
distances(pe)
