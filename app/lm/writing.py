"""How it writes on a decoder-only language model: a prompt, the model writing after it token by token (each
step's candidates with their probabilities, greedy or drawn at a temperature with a seed), a token forced at a
step, and "why this token and not that one?". app/screens/how_it_writes.py hands over to page() when such a model
is loaded.

The model writes once per (checkpoint version, prompt, length, sampling, forced token) through writing() (core's
lm_writing.write), and a step change only reads it; the contrast is core.lm_contrast's. The figures are
app.figures.lm_writing's bars, app.figures.decoding's strip of where the step looked, app.figures.contrast's strips.
"""
from __future__ import annotations

import streamlit as st

from app.display import show_figure
from app.figures.contrast import METHOD_LABELS, attention_of, contrast_figure
from app.figures.decoding import source_strip_figure
from app.figures.lm_writing import next_token_figure
from app.figures.style import readable
from app.lm.explorer import default_text
from app.lm.views import token_label
from app.sidebar import presenter_mode
from app.text import md_escape
from core.lm_contrast import METHODS, lm_contrast
from core.lm_writing import FORCED, Forcing, write
from core.model.trace import Sampling

MEAN = -1                       # the layer or head "mean of all"
K = 10                          # candidates shown per step
WHY_HELP = ("Leave a token out: the prompt is read again without it, and the change in log P(one token) − log "
            "P(the other) is its score: exact, the reference. Gradient × input and integrated gradients guess it "
            "from the gradient. Red: pushed towards the model's token; blue: towards the other.")


@st.cache_resource(max_entries=32, show_spinner="Writing…")
def writing(key, prompt: str, max_new: int, sampling: tuple | None, forcing: tuple | None):
    """core.lm_writing.write, shared read-only. sampling: (temperature, top_k, top_p, seed) or None (greedy);
    forcing: (step, ids) or None. ValueError, in words, for what cannot be written."""
    from app.cache import load_model
    return write(load_model(key), prompt, max_new, Sampling(*sampling) if sampling else None, K,
                 Forcing(forcing[0], tuple(forcing[1])) if forcing else None)


@st.cache_resource(max_entries=32, show_spinner="Asking why this token and not the other…")
def contrast(key, ids: tuple, chosen: tuple, other: tuple, method: str):
    """core.lm_contrast.lm_contrast after the ids a step had read, shared read-only."""
    from app.cache import load_model
    return lm_contrast(load_model(key), list(ids), list(chosen), list(other), method)


def start_values(model) -> None:
    """The explorer's text (the same session key) or the family's example; the settings' defaults."""
    if st.session_state.get("lm_text") in (None, "", st.session_state.get("lm_text_default")):
        st.session_state.lm_text = st.session_state.lm_text_default = default_text(model)
    for key, default in [("lmw_new", 12), ("lmw_temperature", 0.0), ("lmw_seed", 0), ("lmw_top_k", 0),
                         ("lmw_step", 1), ("lmw_layer", MEAN), ("lmw_head", MEAN), ("lmw_forcing", None)]:
        st.session_state.setdefault(key, default)


def settings() -> tuple[str, int, tuple | None]:
    """(prompt, how many tokens to write, sampling or None for greedy) from the boxes at the top."""
    left, right = st.columns([3, 2])
    prompt = left.text_area("Prompt for the model to continue", key="lm_text", height=80, persist_state="session",
                            help="The same text as in the Attention explorer. Press Ctrl+Enter to write.")
    max_new = right.slider("Tokens to write", 1, 40, key="lmw_new")
    c1, c2, c3 = st.columns(3)
    temperature = c1.slider("Temperature (0: greedy)", 0.0, 2.0, key="lmw_temperature", step=0.1,
                            help="0 takes the likeliest token each time (greedy). Above 0 each token is drawn at "
                                 "random from softmax(logits / T): below 1 the favourite gets more, above 1 the "
                                 "others do.")
    top_k = int(c2.number_input("top-k (0: all)", 0, 1000, key="lmw_top_k", disabled=temperature == 0,
                                help="Draw only among the k likeliest tokens."))
    seed = int(c3.number_input("Seed", 0, 10**6, key="lmw_seed", disabled=temperature == 0,
                               help="The same seed draws the same tokens."))
    return prompt, max_new, (temperature, top_k, 1.0, seed) if temperature > 0 else None


def shown(w, ids) -> list[str]:
    """Tokens as the explorer shows them (app.lm.views.token_label)."""
    return [token_label(w.tokenizer, i, p) for i, p in zip(ids, w.tokenizer.pieces(list(ids)))]


def written(ckpt, prompt: str, max_new: int, sampling, forcing):
    try:
        return writing(ckpt, prompt, max_new, sampling, forcing)
    except ValueError as e:
        st.warning(str(e))
        st.stop()
    except Exception as e:  # noqa: BLE001 the page must stay usable whatever the model does
        st.error(f"The model could not write after this prompt ({type(e).__name__}: {e}). Try a shorter one.")
        st.stop()


def step_slider(n: int) -> int:
    """The step shown (from 0), picked on a slider over 1..n."""
    st.session_state.lmw_step = min(max(1, st.session_state.lmw_step), n)
    if n > 1:
        st.slider("Step", 1, n, key="lmw_step", help="Each step writes one token.")
    return st.session_state.lmw_step - 1


def where_it_looked(w, step: int, model, presenter: bool) -> tuple[int | None, int | None]:
    """The self-attention with which the step chose, over the tokens it had read; (layer, head) from 0 or None."""
    cfg = model.cfg
    c1, c2 = st.columns(2)
    for key, n in (("lmw_layer", cfg.N), ("lmw_head", cfg.h)):         # another checkpoint may have fewer
        if st.session_state[key] >= n:
            st.session_state[key] = MEAN
    layer = c1.selectbox("Layer", [MEAN] + list(range(cfg.N)), key="lmw_layer",
                         format_func=lambda i: "mean of all layers" if i == MEAN else f"{i + 1} of {cfg.N}")
    head = c2.selectbox("Head", [MEAN] + list(range(cfg.h)), key="lmw_head",
                        format_func=lambda i: "mean of all heads" if i == MEAN else f"{i + 1} of {cfg.h}")
    layer, head = (None if x == MEAN else x for x in (layer, head))
    weights, where = attention_of(w.looked(step), layer, head)
    labels = shown(w, w.context(step))
    chose = shown(w, [w.ids[w.prompt_len + step]])[0]
    fig = source_strip_figure(labels, weights, f"Where step {step + 1} looked while it chose '{chose}' "
                                                f"({where.removeprefix('attention of this step (')[:-1]})")
    show_figure(readable(fig, presenter), f"step{step + 1}_looked", key="lmw_looked", styled=True)
    return layer, head


def force(w, step: int, model, setting: tuple) -> tuple[list, list]:
    """Pick another candidate (or type a word) and write it at this step; returns (the model's token, the other
    token picked) as ids for the contrast."""
    s = w.steps[step]
    st.subheader("What if it had written another token here?")
    c1, c2, c3 = st.columns([3, 3, 2], vertical_alignment="bottom")
    cands = s.candidates
    others = [i for i, c in enumerate(cands) if c.token != s.token] or [0]
    pick = c1.selectbox("A candidate of this step", others, key=f"lmw_pick_{step}",
                        format_func=lambda i: f"{shown(w, [cands[i].token])[0]} ({cands[i].prob:.1%})")
    typed = c2.text_input("…or type a word", key="lmw_typed", help="A word of several tokens is forced token by "
                                                                   "token, then the model goes on.")
    other = model.tokenizer.encode(typed) if typed.strip() else [cands[pick].token]
    if c3.button("Write this instead", icon=":material/edit:", width="stretch", key="lmw_force"):
        if not other:
            st.warning(f"'{md_escape(typed)}' has no tokens in this model's vocabulary.")
        else:
            st.session_state.lmw_forcing = (*setting, step, tuple(other))
            st.rerun()
    if st.session_state.lmw_forcing and st.button("Back to the model's own", key="lmw_unforce"):
        st.session_state.lmw_forcing = None
        st.rerun()
    return [s.token], other


def why(ckpt, w, step: int, chosen: list, other: list, layer, head, presenter: bool) -> None:
    """Why did the step take its token and not the other one? What each token read pushed, beside its attention."""
    if not st.toggle("Why this token and not that one?", key="lmw_why",
                     help="What in the text read so far pushed the model to its token rather than the one picked."):
        return
    if not other or other == chosen:
        st.info("Pick a candidate other than the token written here to ask why it wrote its own.")
        return
    method = st.radio("Explained by", list(METHODS), format_func=METHOD_LABELS.get, key="lmw_method",
                      horizontal=True, help=WHY_HELP)
    try:
        c = contrast(ckpt, tuple(w.context(step)), tuple(chosen), tuple(other), method)
    except ValueError as e:
        st.warning(str(e))
        return
    attention, label = attention_of(c.attention, layer, head)
    label = label.replace("attention of this step", "attention of the position that chose")
    labels = shown(w, [w.ids[p] for p in c.positions])
    fig = contrast_figure(labels, c.scores, attention, c.chosen, c.other, method, label,
                          title=f"Why '{c.chosen}' and not '{c.other}'? (log P difference {c.log_odds:+.2f})")
    show_figure(readable(fig, presenter), f"why_{c.chosen}_not_{c.other}", key="lmw_why_figure", styled=True)
    top = c.ranking()[0]
    st.caption(f"{METHOD_LABELS[method]} says **{md_escape(labels[top])}** (token {c.positions[top] + 1}) pushed "
               f"most towards '{md_escape(c.chosen)}' ({c.scores[top]:+.2f})."
               + (f" Integrated gradients' sum misses the log-odds change by {c.completeness_gap:.2f}."
                  if c.completeness_gap is not None else ""))


def page(ckpt, model) -> None:
    """The whole page on a decoder-only model."""
    start_values(model)
    presenter = presenter_mode()
    st.title("How it writes")
    prompt, max_new, sampling = settings()
    setting = (prompt, max_new, sampling)
    forced = st.session_state.lmw_forcing
    forcing = forced[3:] if forced and forced[:3] == setting else None
    w = written(ckpt, prompt, max_new, sampling, forcing)
    for notice in w.notices:
        st.info(md_escape(notice))
    how = "greedy" if sampling is None else f"drawn at T = {sampling[0]:g}, top-k {sampling[1] or 'all'}, " \
                                            f"seed {sampling[3]}"
    mark = f", your token forced at step {forcing[0] + 1}" if forcing else ""
    st.markdown(f"**What it wrote** ({how}{mark}, {len(w.steps)} tokens; stopped: {w.stopped}):")
    st.code(w.tokenizer.decode(w.ids[: w.prompt_len]) + " ⟶ " + w.text, language=None, wrap_lines=True)
    if not w.steps:
        st.info("The prompt already fills the model's context: it cannot write more.")
        return
    step = step_slider(len(w.steps))
    s = w.steps[step]
    left, right = st.columns([2, 3])
    with left:
        fig = next_token_figure(s, step, shown(w, [c.token for c in s.candidates]), drawn=sampling is not None)
        show_figure(readable(fig, presenter), f"step{step + 1}_candidates", key="lmw_candidates", styled=True)
        taken = "forced by you" if s.how == FORCED else s.how
        st.caption(f"Step {step + 1} took '{md_escape(shown(w, [s.token])[0])}' ({taken}; the "
                   f"model gave it {s.prob:.1%}).")
    with right:
        layer, head = where_it_looked(w, step, model, presenter)
    chosen, other = force(w, step, model, setting)
    why(ckpt, w, step, chosen, other, layer, head, presenter)
