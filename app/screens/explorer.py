"""Attention explorer: type a sentence, let the model translate it, and look at every attention map.

The page is thin: the model runs once per (checkpoint version, sentence, target, decoding) and each kind of map is
labelled once per (words or pieces, specials) through app.cache; a head switch only slices the cached view. The
figures come from app.figures.attention.

Its first screen is a class's (1280x720, a projector): the sentence beside its translation, the map's controls in two
rows that wrap (a control added to one takes a place in it, no label is ever cut off), then the whole map, colour bar
included; what explains the map comes below it (tests/browser/test_browser.py measures this).
"""
import streamlit as st

from app import cache, url_state
from app import weights as show_weights
from app.checkpoints import is_language_model
from app.lm import explorer as lm_explorer
from app.demo import default_sentence, examples
from app.display import clicked_numbers, show_figure
from app.file_button import file_button
from app.figures.report import sentence_report
from app.figures.style import PRESENTER
from app.figures.training import describe_model
from app.figures.attention import (COL_TITLES, MAP_HEIGHT, ROW_TITLES, head_view_figure, heatmap_from_frame,
                                   model_view_figure)
from app.sidebar import presenter_mode
from app.text import md_escape
from app.words import words_note, words_toggle
from core.tokenizer import display_pieces, merge_words
from core.studies.contributions import WEIGHTS
from core.views import DECODER_ROWS, KINDS, PROMPT, SHORT

BOX_HEIGHT = 68        # px: the sentence box and the translation, two lines of text each on the first screen
# px a row of the map gets at most (the figures' own is 28; presenter mode draws rows 1.5 times as large): a short
# sentence's map grows to them, a longer one's rows shrink until the whole map fits the first screen (MAP_HEIGHT)
MAP_ROW_PX, PRESENTER_MAP_ROW_PX = 28, 20
VIEWS = {"one": "One head", "grid": "All heads", "lines": "Head view (lines)"}
DECODING = {"greedy": 1, "beam": 4}       # in a link: ?decoding=beam


def use_example(key: str, choices: dict[str, str]):
    st.session_state.src = choices[st.session_state[key]]
    st.session_state.tgt = ""


def open_tile():
    """A click on the model view (customdata [layer, head]): make its layer and head the selected ones."""
    picked = clicked_numbers(st.session_state.get("grid_chart"), 2)
    if picked:
        st.session_state.layer, st.session_state.head = int(picked[0]), int(picked[1])


def link_params(model) -> list[url_state.Param]:
    """What a link to this page holds: /?text=The+cat+sat.&kind=cross&layer=5&head=3&view=one and the rest."""
    cfg = model.cfg

    def n_layers() -> int:         # of the kind the same link names (read before the layer)
        return cfg.N if st.session_state.get("kind", "enc_self") == "enc_self" else cfg.N_dec
    return [url_state.text("text", "src", default_sentence(model.card)), url_state.text("tgt", "tgt"),
            url_state.choice("decoding", "beam", DECODING, 1, "decoding"),
            url_state.choice("kind", "kind", list(KINDS), "enc_self", "kind of attention"),
            url_state.number("layer", "layer", n_layers, min(4, cfg.N - 1), "layer"),
            url_state.number("head", "head", cfg.h, 0, "head"),
            url_state.choice("view", "view", list(VIEWS), "one", "view"),
            url_state.choice("show", "show", list(WEIGHTS), "attention", "kind of weight"),
            url_state.flag("words", "words", True), url_state.flag("specials", "specials", True),
            url_state.flag("stretch", "stretch", False)]


def start_values(model) -> None:
    """The checkpoint's own default sentence, and every widget's default (after a link's values: app.url_state)."""
    # The default sentence follows the checkpoint (captions for a caption model), until someone edits it.
    if st.session_state.get("src") in (None, st.session_state.get("src_default")):
        st.session_state.src = st.session_state.src_default = default_sentence(model.card)
    for key, default in [("tgt", ""), ("beam", 1), ("kind", "enc_self"),
                         ("view", "one"), ("layer", min(4, model.cfg.N - 1)), ("head", 0),
                         ("specials", True), ("stretch", False), ("hv_layout", "columns")]:
        st.session_state.setdefault(key, default)


def sentence_inputs(name: str, choices: dict[str, str]):
    """(sentence, own translation or "", beams, the place for the translation): the sentence box beside its
    translation, and under the translation a popover with the examples, the decoding and a translation of one's own
    (they are used less often than the sentence, and the first screen is for the map)."""
    left, right, more = st.columns([4, 4, 1.5])
    # persist_state="session": Streamlit forgets a widget's value when a rerun does not draw it (another page's),
    # and the student's sentence must still be there when they come back
    src = left.text_area("Sentence to translate", key="src", height=BOX_HEIGHT, persist_state="session",
                         help="Press Ctrl+Enter or click outside the box to translate.")
    place = right.container(gap="xxsmall")     # the translation's box level with the sentence box
    with more:
        st.space(28)                         # px: a label's height, to stand level with the sentence box
        with st.popover("More", icon=":material/tune:", width="stretch",
                        help="Example sentences, beam search, and a translation of your own (teacher forcing)."):
            st.selectbox("Start from an example", list(choices), key=f"example_{name}", index=None,
                         on_change=use_example, args=(f"example_{name}", choices),
                         placeholder="Pick an example sentence…")
            beam = st.radio("Decoding", [1, 4], key="beam", horizontal=True,
                            format_func=lambda b: "greedy" if b == 1 else "beam search (4 beams)",
                            help="Greedy takes the most likely word at each step; beam search keeps the 4 best "
                                 "partial translations, as in the paper.")
            tgt = st.text_area("Your own translation (optional)", key="tgt", height=100, persist_state="session",
                               help="Teacher forcing: the decoder reads your words instead of its own, so you can see "
                                    "where it looks while reading a translation you choose.")
    return src, tgt, beam, place


def translation(ckpt, src: str, tgt: str | None, beam: int, place):
    """The AttendResult, its translation written into `place` (notices above the map), or a message and st.stop()."""
    try:
        res = cache.attend(ckpt, src, tgt, beam)
    except ValueError as e:                 # empty input and the like: core words it for a student
        st.warning(str(e))
        st.stop()
    except Exception as e:  # noqa: BLE001 the page must stay usable whatever the model does
        st.error(f"The model could not process this sentence ({type(e).__name__}: {e}). Try a shorter or simpler one.")
        st.stop()
    for notice in res.notices:
        st.info(md_escape(notice))
    if res.src_prompt:                       # a T5 model: its task prompt is read too, and marked in the maps
        prompt = " ".join(merge_words(res.src_tokens[: res.src_prompt]))
        st.caption(md_escape(f"This model (T5) needs a task prompt before every sentence: “{prompt}” was added for "
                             "you. It reads and attends to it as to your words; the maps label its rows and columns "
                             f"{PROMPT.format('so')}, and “Show <s> and </s>” off hides them too."))
    with place:
        if res.teacher_forced:
            st.markdown("**Teacher forcing** on your translation: the maps show where the model looks while "
                        "reading it.")
        else:
            st.markdown(f"**The model's translation** ({'greedy' if beam == 1 else 'beam search, 4 beams'}):")
        # as tall as the sentence box, scrolling when longer: an untrained model's endless output must not push the
        # map off the first screen
        st.code(res.tgt or "(empty: the model ended the sentence at once)", language=None, wrap_lines=True,
                height=BOX_HEIGHT)
    return res


def map_controls(cfg) -> dict:
    """The map's controls in two rows that wrap, their values by name: which map (the kind of attention, layer and
    head) beside the three switches stacked, then how to draw it (the view, and attention weights or what replaces
    them). Each control keeps the width of its label (none is cut off), the layer and head fixed ones; two rows
    rather than three leave the first screen to the map."""
    controls = st.container(gap="xsmall")              # the two rows close together: one block above the map
    which = controls.container(horizontal=True, vertical_alignment="bottom")
    kind = which.segmented_control("Attention", list(KINDS), key="kind", format_func=SHORT.get, required=True,
                                   help="Encoder self: the source sentence looks at itself. Decoder self: the "
                                        "translation looks at the words already written. Encoder-decoder: the "
                                        "translation looks at the source.")
    n_layers = cfg.N if kind == "enc_self" else cfg.N_dec
    st.session_state.layer = min(st.session_state.layer, n_layers - 1)    # the decoder may have fewer layers
    st.session_state.head = min(st.session_state.head, cfg.h - 1)
    view = st.session_state.view                       # the head selector is off in the head view, drawn below it
    layer = which.selectbox("Layer", range(n_layers), key="layer", format_func=lambda i: f"{i + 1} of {n_layers}",
                            width=105)
    head = which.selectbox("Head", range(cfg.h), key="head", format_func=lambda i: f"{i + 1} of {cfg.h}", width=105,
                           disabled=view == "lines", help="The head view picks its heads below.")
    switches = which.container(width="content", gap=None)      # stacked: about as tall as a labelled control
    words = words_toggle(switches, "words")
    specials = switches.toggle("Show <s> and </s>", key="specials", help="The start and end tokens.")
    stretch = switches.toggle("Stretch colours", key="stretch",
                              help="Off: the colours run from 0 to 1, so that heads compare (evenly spread attention "
                                   "looks pale). On: from 0 to the largest weight shown, to see detail in faint maps.")
    how = controls.container(horizontal=True, vertical_alignment="bottom")
    view = how.segmented_control("View", list(VIEWS), key="view", format_func=VIEWS.get, required=True,
                                 help="One head: its map, large. All heads: every layer and head as small maps "
                                      "(the model view). Head view: the paper's lines, one per weight.")
    with how:
        show = show_weights.show_control("show")   # attention weights | weighted by value size | contributions
    return dict(kind=kind, view=view, n_layers=n_layers, layer=layer, head=head, words=words, specials=specials,
                zmax=None if stretch else 1.0, show=show)


def conventions(v, c: dict) -> None:
    """One caption: words or pieces, what hiding <s> and </s> does to the rows, what a decoder row is."""
    notes = [words_note(c["words"])]
    if not c["specials"]:
        notes.append("<s> and </s> are hidden without renormalising: a row now adds up to less than 1, and what is "
                     "missing is the weight that went to them." if not v.row_sums_to_one else
                     "</s> is hidden (nothing attends to it here, so rows still add up to 1).")
    if c["kind"] != "enc_self":
        notes.append(DECODER_ROWS)
    st.caption(md_escape(" ".join(notes)))


def where(c: dict) -> str:
    return f"{KINDS[c['kind']]}, layer {c['layer'] + 1} of {c['n_layers']}"


def one_head(v, c: dict, n_heads: int) -> None:
    """The selected head, large: its map swapped into the cached figure frame of these labels."""
    kind, layer, head = c["kind"], c["layer"], c["head"]
    presenter = presenter_mode()
    frame = cache.heatmap_frame(tuple(v.rows), tuple(v.cols), ROW_TITLES[kind], COL_TITLES[kind], c["zmax"],
                                presenter, PRESENTER_MAP_ROW_PX if presenter else MAP_ROW_PX, words_on_top=True,
                                max_height=round(MAP_HEIGHT / (PRESENTER if presenter else 1)))
    fig = heatmap_from_frame(frame, v.maps[layer, head], f"{where(c)}, head {head + 1} of {n_heads}", c["zmax"])
    show_figure(fig, f"{kind}_layer{layer + 1}_head{head + 1}", key="one_chart", styled=True)


def model_view(v, c: dict) -> None:
    """Every layer and head as small maps; a click opens one."""
    st.caption("Every layer (rows) and head (columns). Click a small map to open it large below.")
    grid = model_view_figure(v.maps, v.rows, v.cols, title=KINDS[c["kind"]], selected=(c["layer"], c["head"]),
                             zmax=c["zmax"])
    show_figure(grid, f"{c['kind']}_all_heads", key="grid_chart", on_select=open_tile, selection_mode="points")


def head_view(v, c: dict, n_heads: int) -> None:
    """The paper's lines for the heads picked (one to start with: eight heads' lines at once are a tangle)."""
    st.session_state.hv_heads = [k for k in st.session_state.get("hv_heads", [c["head"]]) if k < n_heads]
    focus_options = [None] + list(range(len(v.rows)))
    shown_rows = display_pieces(v.rows)
    if st.session_state.get("hv_focus") not in focus_options:
        st.session_state.hv_focus = None
    c1, c2, c3 = st.columns([3, 2, 1])
    heads = c1.pills("Heads shown (one colour each)", list(range(n_heads)), key="hv_heads", selection_mode="multi",
                     format_func=lambda k: f"{k + 1}", help="Click a head to show or hide its lines.")
    focus = c2.selectbox("Only the lines of one token", focus_options, key="hv_focus",
                         format_func=lambda i: "all tokens" if i is None else f"{shown_rows[i]}  (position {i + 1})",
                         help="As in the paper's Figure 4 (bottom), which isolates the word 'its'.")
    hv_layout = c3.radio("Layout", ["columns", "rows"], key="hv_layout",
                         format_func=lambda s: "side by side" if s == "columns" else "top and bottom (paper)")
    if not heads:
        st.info("Pick at least one head to draw its lines.")
        return
    fig = head_view_figure(v.rows, v.cols, v.maps[c["layer"]], heads=heads, focus=focus, layout=hv_layout,
                           title=f"{where(c)}: the stronger the weight, the bolder its line")
    show_figure(fig, f"{c['kind']}_layer{c['layer'] + 1}_head_view", key="lines_chart", width="content")
    st.caption("Each colour is one head; add heads above to compare them, or click a head in the legend to "
               "hide its lines for a moment.")
    if fig.layout.meta["hidden_lines"]:
        st.caption(f"Only the strongest lines are drawn: {fig.layout.meta['hidden_lines']:,} fainter ones are "
                   "left out so that the browser stays quick. Pick fewer heads or one token to see them all.")


def report_button(res, name: str, model, words: bool) -> None:
    """Every map of this sentence in one HTML file that opens offline (app.figures.report): a click
    makes it, a second saves it."""
    file_button("Every map of this sentence (HTML)", icon=":material/description:", key="report_html",
                make=lambda: sentence_report(res, name, describe_model(model.card, model.cfg), words=words),
                file_name=f"attention_{url_state.slug(' '.join(res.src.split()[:6]))[:50]}.html",
                mime="text/html", making="Writing every map of this sentence…",
                help="One file (about 5 MB) with each kind of attention, layer and head, switchable, the "
                     "translation and the checkpoint: it opens in a browser with no network and no Python, "
                     "to keep or to send. A click makes it; a second click saves it.")


ckpt, model = cache.model_or_stop()
if is_language_model(model):            # GPT-2, Llama, BERT: one text, one kind of map (app/lm/explorer.py)
    lm_explorer.page(ckpt, model)
    st.stop()
link = link_params(model)
url_state.restore("explorer", link)
start_values(model)
url_state.publish("explorer", link)       # before the model runs: a sentence it refuses keeps its link too
st.title("Attention explorer")
src, tgt, beam, translation_place = sentence_inputs(ckpt.name, examples(model.card))   # sentences it learnt from
tgt = tgt if tgt.strip() else None
res = translation(ckpt, src, tgt, beam, translation_place)
controls = map_controls(model.cfg)
url_state.publish("explorer", link)       # again: the layer and head as kept within this kind's sizes
show = controls["show"]
view = cache.contribution_view(ckpt, src, tgt, beam, controls["kind"], show, controls["words"], controls["specials"])
if controls["view"] == "grid":
    model_view(view, controls)
if controls["view"] == "lines":
    head_view(view, controls, model.cfg.h)
else:
    one_head(view, controls, model.cfg.h)
st.caption("The model translates the sentence, and every attention weight it used along the way is shown above. "
           "Rows attend, columns are attended; each row's weights add up to 1.")
conventions(view, controls)
show_weights.explain(show, cache.contributions(ckpt, src, tgt, beam) if show == "alti" else None)
report_button(res, ckpt.name, model, controls["words"])
