"""The Attention explorer on a language model: a text (and, for an encoder-only model, an optional second sentence),
its one kind of map (self-attention: masked for a decoder-only model, both ways for an encoder-only one) as one
head, all heads or the head view, and beside the text what the model makes of it: its next-token guess, or the
words it would put in each [MASK]. app/screens/explorer.py hands over to page() when such a model is loaded.

The model runs once per (checkpoint version, text, pair) through app.lm.cache; a head switch only slices the view.
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

from app import cache, url_state
from app.checkpoints import DECODER_ONLY, model_family
from app.display import clicked_numbers, show_figure
from app.figures.attention import MAP_HEIGHT, head_view_figure, heatmap_from_frame, model_view_figure
from app.figures.style import PRESENTER
from app.lm import cache as lm_cache
from app.lm import views
from app.sidebar import presenter_mode
from app.text import md_escape
from core.masked_language_model import MASK_WORD
from core.tokenizer import display_pieces

BOX_HEIGHT = 68
MAP_ROW_PX, PRESENTER_MAP_ROW_PX = 28, 20
VIEWS = {"one": "One head", "grid": "All heads", "lines": "Head view (lines)"}
EXAMPLES = {   # family -> label -> text: a decoder-only model's repeated phrase shows its induction heads
    DECODER_ONLY: {"A repeated phrase (induction heads copy its second half)":
                   "The quick brown fox jumps over the lazy dog. The quick brown fox jumps over the lazy dog.",
                   "A sentence": "The Commission presented its report yesterday, but the Council rejected it.",
                   "A list": "Monday, Tuesday, Wednesday, Thursday, Friday"},
    "encoder-only": {"A blank to fill": f"The capital of France is {MASK_WORD}.",
                     "A pronoun": f"The Commission presented its report, but the Council rejected {MASK_WORD}.",
                     "Two blanks": f"The {MASK_WORD} sat on the {MASK_WORD}."},
}


def default_text(model) -> str:
    return next(iter(EXAMPLES[model_family(model)].values()))


def link_params(model) -> list[url_state.Param]:
    """What a link to this view holds: ?text=...&layer=2&head=3&view=one (and pair= for an encoder-only model)."""
    cfg = model.cfg
    return [url_state.text("text", "lm_text", default_text(model)), url_state.text("pair", "lm_pair"),
            url_state.number("layer", "layer", cfg.N, min(4, cfg.N - 1), "layer"),
            url_state.number("head", "head", cfg.h, 0, "head"),
            url_state.choice("view", "view", list(VIEWS), "one", "view"),
            url_state.flag("stretch", "stretch", False)]


def start_values(model) -> None:
    # the default text follows the model's family ([MASK] for BERT), until someone edits it
    if st.session_state.get("lm_text") in (None, "", st.session_state.get("lm_text_default")):
        st.session_state.lm_text = st.session_state.lm_text_default = default_text(model)
    for key, default in [("lm_pair", ""), ("view", "one"), ("layer", min(4, model.cfg.N - 1)), ("head", 0),
                         ("stretch", False), ("hv_layout", "columns")]:
        st.session_state.setdefault(key, default)


def use_example(choices: dict[str, str]) -> None:
    st.session_state.lm_text = choices[st.session_state.lm_example]


def text_inputs(model):
    """(text, second sentence or None, the place for what the model makes of it)."""
    decoder = model_family(model) == DECODER_ONLY
    left, right, more = st.columns([4, 4, 1.5])
    label = "Text for the model to read" if decoder else f"Text (write {MASK_WORD} where a word should be guessed)"
    text = left.text_area(label, key="lm_text", height=BOX_HEIGHT, persist_state="session",
                          help="Press Ctrl+Enter or click outside the box to read it.")
    place = right.container(gap="xxsmall")
    choices = EXAMPLES[model_family(model)]
    with more:
        st.space(28)
        with st.popover("More", icon=":material/tune:", width="stretch", help="Example texts"
                        + ("" if decoder else ", and a second sentence (BERT's sentence B).")):
            st.selectbox("Start from an example", list(choices), key="lm_example", index=None,
                         on_change=use_example, args=(choices,), placeholder="Pick an example text…")
            pair = None if decoder else st.text_area(
                "Second sentence (optional)", key="lm_pair", height=80, persist_state="session",
                help="Read after the first, past a [SEP], as BERT reads a pair of sentences (its sentence B).")
    return text, pair.strip() if pair and pair.strip() else None, place


def what_it_makes(model, res, place) -> None:
    """Beside the text: the next-token guess (decoder-only) or each [MASK]'s likeliest fillers (encoder-only)."""
    with place:
        if model_family(model) == DECODER_ONLY:
            st.markdown("**The model's guess for the next token:**")
            st.code(views.next_token(model, res), language=None, height=BOX_HEIGHT)
            return
        st.markdown(f"**What the model would put in each {MASK_WORD}:**")
        if not model.has_head:
            st.code("(this checkpoint has no masked-LM head: it cannot guess words)", language=None,
                    height=BOX_HEIGHT)
        elif not res.fills:
            st.code(f"(no {MASK_WORD} in the text: write one where a word should be guessed)", language=None,
                    height=BOX_HEIGHT)
        else:
            st.code("\n".join(f"position {pos}: " + ", ".join(f"{w} {p:.0%}" for w, p in fills)
                              for pos, fills in views.fillers(model, res)), language=None, height=BOX_HEIGHT)


def read(ckpt, model, text: str, pair: str | None):
    try:
        return lm_cache.attend(ckpt, text, pair)
    except ValueError as e:
        st.warning(str(e))
        st.stop()
    except Exception as e:  # noqa: BLE001 the page must stay usable whatever the model does
        st.error(f"The model could not read this text ({type(e).__name__}: {e}). Try a shorter one.")
        st.stop()


def map_controls(cfg) -> dict:
    """Layer, head, stretch and the view, in one row that wraps."""
    row = st.container(horizontal=True, vertical_alignment="bottom")
    st.session_state.layer = min(st.session_state.layer, cfg.N - 1)
    st.session_state.head = min(st.session_state.head, cfg.h - 1)
    view = row.segmented_control("View", list(VIEWS), key="view", format_func=VIEWS.get, required=True,
                                 help="One head: its map, large. All heads: every layer and head as small maps. "
                                      "Head view: the paper's lines, one per weight.")
    layer = row.selectbox("Layer", range(cfg.N), key="layer", format_func=lambda i: f"{i + 1} of {cfg.N}", width=105)
    head = row.selectbox("Head", range(cfg.h), key="head", format_func=lambda i: f"{i + 1} of {cfg.h}", width=105,
                         disabled=view == "lines", help="The head view picks its heads below.")
    stretch = row.toggle("Stretch colours", key="stretch",
                         help="Off: the colours run from 0 to 1, so that heads compare. On: from 0 to the largest "
                              "weight shown, to see detail in faint maps.")
    return dict(view=view, layer=layer, head=head, zmax=None if stretch else 1.0, n_layers=cfg.N)


def open_tile() -> None:
    picked = clicked_numbers(st.session_state.get("lm_grid_chart"), 2)
    if picked:
        st.session_state.layer, st.session_state.head = int(picked[0]), int(picked[1])


def one_head(model, v, c: dict) -> None:
    presenter = presenter_mode()
    frame = cache.heatmap_frame(tuple(v.rows), tuple(v.cols), views.ROW_TITLE, views.COL_TITLE, c["zmax"], presenter,
                                PRESENTER_MAP_ROW_PX if presenter else MAP_ROW_PX, words_on_top=True,
                                max_height=round(MAP_HEIGHT / (PRESENTER if presenter else 1)))
    title = f"{views.title(model)}, layer {c['layer'] + 1} of {c['n_layers']}, head {c['head'] + 1} of {model.cfg.h}"
    fig = heatmap_from_frame(frame, v.maps[c["layer"], c["head"]], title, c["zmax"])
    show_figure(fig, f"self_layer{c['layer'] + 1}_head{c['head'] + 1}", key="one_chart", styled=True)


def model_view(model, v, c: dict) -> None:
    st.caption("Every layer (rows) and head (columns). Click a small map to open it large below.")
    grid = model_view_figure(v.maps, v.rows, v.cols, title=views.title(model), selected=(c["layer"], c["head"]),
                             zmax=c["zmax"])
    show_figure(grid, "self_all_heads", key="lm_grid_chart", on_select=open_tile, selection_mode="points")


def head_view(model, v, c: dict) -> None:
    n_heads = model.cfg.h
    st.session_state.hv_heads = [k for k in st.session_state.get("hv_heads", [c["head"]]) if k < n_heads]
    options = [None] + list(range(len(v.rows)))
    if st.session_state.get("hv_focus") not in options:
        st.session_state.hv_focus = None
    shown = display_pieces(v.rows)
    c1, c2, c3 = st.columns([3, 2, 1])
    heads = c1.pills("Heads shown (one colour each)", list(range(n_heads)), key="hv_heads", selection_mode="multi",
                     format_func=lambda k: f"{k + 1}")
    focus = c2.selectbox("Only the lines of one token", options, key="hv_focus",
                         format_func=lambda i: "all tokens" if i is None else f"{shown[i]}  (position {i + 1})")
    layout = c3.radio("Layout", ["columns", "rows"], key="hv_layout",
                      format_func=lambda s: "side by side" if s == "columns" else "top and bottom (paper)")
    if not heads:
        st.info("Pick at least one head to draw its lines.")
        return
    fig = head_view_figure(v.rows, v.cols, v.maps[c["layer"]], heads=heads, focus=focus, layout=layout,
                           title=f"{views.title(model)}, layer {c['layer'] + 1}: the stronger the weight, the bolder")
    show_figure(fig, f"self_layer{c['layer'] + 1}_head_view", key="lines_chart", width="content")


def notes(model, res) -> None:
    """Under the map: what a row may see, the special tokens, which heads share K/V, and each position's guess."""
    st.caption(md_escape(views.what_it_sees(model)))
    for line in (views.specials_line(res), views.kv_line(model)):
        if line:
            st.caption(md_escape(line))
    if model_family(model) == DECODER_ONLY:
        with st.expander("Its guess after every token"):
            st.caption("At each position the model guesses the next token from what it has read so far: the "
                       "guesses that match what came show what it could predict.")
            st.dataframe(pd.DataFrame(views.guesses(model, res)), hide_index=True)


def page(ckpt, model) -> None:
    """The whole explorer for a decoder-only or encoder-only model."""
    link = link_params(model)
    url_state.restore("explorer", link)
    start_values(model)
    url_state.publish("explorer", link)
    st.title("Attention explorer")
    text, pair, place = text_inputs(model)
    res = read(ckpt, model, text, pair)
    for notice in res.notices:
        st.info(md_escape(notice))
    what_it_makes(model, res, place)
    controls = map_controls(model.cfg)
    url_state.publish("explorer", link)
    v = lm_cache.view(ckpt, text, pair)
    if controls["view"] == "grid":
        model_view(model, v, controls)
    if controls["view"] == "lines":
        head_view(model, v, controls)
    else:
        one_head(model, v, controls)
    notes(model, res)
