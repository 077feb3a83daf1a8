"""Positional encoding (section 3.5): waves, the whole table, and why it encodes relative distances; for a T5
model in the sidebar, first what it has instead: each head's learned bias over relative distance; last, rotary
positions (RoPE), with the loaded model's own base and sizes when it is a rotary model."""
import json

import numpy as np
import streamlit as st

from app import cache
from app.checkpoints import checkpoint_folder
from app.display import show_figure
from app.figures.positional import (bias_figure, default_dims, dot_heatmap, offset_dots, offset_figure, pe_heatmap,
                                    pe_table, waves_figure)
from app.figures.rotary import angle_heatmap, distance_figure, pair_circles, score_heatmap
from app.text import md_escape
from core.studies.rotary import RopeSettings, example_vectors, pair_angles, position_scores, settings_of

BASES = [100.0, 1000.0, 10000.0, 500000.0, 1000000.0]      # the paper's 10000; Llama 3's 500000; Qwen's 10^6
D_KS = [8, 16, 32, 64, 128, 256]


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


def model_rope() -> tuple[str, RopeSettings] | None:
    """(name, settings) of the checkpoint in the sidebar when it turns its queries and keys (rotary), else None:
    its config.json says which, so no other model is loaded."""
    key = cache.current_checkpoint()
    try:
        positions = json.loads((checkpoint_folder(key.name) / "config.json").read_text(encoding="utf-8"))["positions"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if positions != "rotary":
        return None
    _, model = cache.model_or_stop()
    return key.name, settings_of(model.cfg)


def rope_settings(found) -> RopeSettings:
    """The loaded rotary model's base, d_k and rotary_dim (said in a line), else sliders from the paper's defaults."""
    if found is not None:
        name, rope = found
        turned = "all" if rope.rotary_dim in (None, rope.d_k) else f"the first {rope.rotary_dim}"
        st.info(md_escape(f"This model, {name}, uses rotary positions: base {rope.base:g}, d_k = {rope.d_k}, "
                          f"{turned} of each head's {rope.d_k} dimensions turn"
                          + (", with Llama 3.1's rescaled low frequencies" if rope.scaling else "")
                          + ". The pictures use its numbers."))
        return rope
    c1, c2 = st.columns(2)
    base = c1.select_slider("base", BASES, value=10000.0, key="rope_base", format_func=lambda b: f"{b:g}")
    d_k = c2.select_slider("d_k (each head's size)", D_KS, value=64, key="rope_d_k")
    return RopeSettings(float(base), int(d_k))


def rotary() -> None:
    """RoPE: the angle of every pair over positions, then a score as a function of the distance only."""
    st.header("Rotary positions (RoPE, used by Llama, Qwen, Pythia)")
    st.write("A rotary model adds nothing to its embeddings. Inside every head it turns each query and each key "
             "by angles proportional to its position: dimensions i and i + d/2 form a pair, turned at position "
             "m by the angle m·θᵢ, with θᵢ = base^(−2i/d) (d: the dimensions that turn, d_k or a part of it). "
             "The first pair turns one radian a position, the last one barely at all: the same range of speeds "
             "as the sinusoids above.")
    rope = rope_settings(model_rope())
    n_pos = st.slider("positions", 10, 500, 64, step=2, key="rope_positions")
    angles = pair_angles(n_pos, rope)
    pairs = sorted({0, angles.shape[1] // 4, angles.shape[1] // 2, angles.shape[1] - 1})
    c1, c2 = st.columns(2)
    with c1:
        show_figure(angle_heatmap(angles), f"rope_angles_{rope.turned}", key="rope_angles")
    with c2:
        show_figure(pair_circles(angles, pairs, min(12, n_pos)), "rope_pairs", key="rope_pairs")
    st.subheader("A score depends on the distance only")
    st.write("Turning q by m·θ and k by n·θ leaves their dot product turned by (m − n)·θ: the score of a query at "
             "position m and a key at position n depends on m − n, not on where the two are. The matrix is "
             "constant along every diagonal and the curves coincide.")
    c1, c2 = st.columns(2)
    kind = c1.radio("q and k", ["ones", "random"], horizontal=True, key="rope_vectors",
                    format_func={"ones": "all ones", "random": "random numbers"}.get,
                    help="All ones: the score falls off, with ripples, as the distance grows (RoPE's long-range "
                         "decay). Random q and k: any pattern, but still one number per distance.")
    seed = c2.number_input("random draw", 0, 10_000, 0, key="rope_seed", disabled=kind == "ones")
    q, k = example_vectors(rope.d_k, kind, int(seed))
    scores = position_scores(q, k, n_pos, rope)
    starts = [m for m in (n_pos - 1, (3 * n_pos) // 4, n_pos // 2) if m > 0]
    c1, c2 = st.columns(2)
    with c1:
        show_figure(score_heatmap(scores), "rope_scores", key="rope_scores")
    with c2:
        show_figure(distance_figure(scores, starts), "rope_distances", key="rope_distances")
    gap = max(np.ptp(np.diagonal(scores, offset=-d)) for d in range(n_pos))
    st.caption(f"Largest spread along one diagonal: {gap:.1e} of scores up to {np.abs(scores).max():.1f} "
               "(float32 rounding).")


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
rotary()
