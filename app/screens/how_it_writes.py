"""How it writes: the model choosing its translation piece by piece. Step through the decoding: the candidates of each
step with their probabilities, the beam as a tree, where the step looked in the source, and "what if it had written
this word instead?".

The page is thin: the model decodes once per (checkpoint version, sentence, beam, alpha, forced words) through
app.cache.decoding_trace (core's TranslationModel.trace), and a step change only reads that trace; the figures come
from app.figures.decoding. A link opens a sentence at a step with its search: ?text=...&step=N&beam=2&alpha=0.6
&layer=mean&head=3 (app.url_state).
"""
import dataclasses

import streamlit as st

from app import cache, url_state
from app.demo import default_sentence
from app.display import show_figure
from app.figures.decoding import beam_tree_figure, candidates_figure, piece_label, source_strip_figure
from app.figures.style import readable
from app.sidebar import presenter_mode
from app.text import md_escape
from app.why import why_section
from app.words import words_toggle
from app.checkpoints import DECODER_ONLY, model_family
from app.lm import writing as lm_writing
from app.lm.common import translation_or_stop
from core.decoding_trace import spell
from core.tokenizer import display_pieces
from core.views import mark_prompt, prompt_count

BEAMS = [1, 2, 4, 8]
MEAN = -1                       # the layer or head "mean of all"


def link_params(cfg) -> list[url_state.Param]:
    """What a link holds besides its sentence and step (which the page writes itself): the search, and the layer and
    head of where it looked, so that a shared or a class's pushed view is the same search."""
    def mean_or_one(n: int) -> dict:
        return {"mean": MEAN, **{str(i + 1): i for i in range(n)}}
    alpha = url_state.choice("alpha", "hw_alpha", {f"{a / 10:g}": a / 10 for a in range(16)}, 0.6, "length penalty")
    return [url_state.choice("beam", "hw_beam", BEAMS, 4, "beam size"),
            dataclasses.replace(alpha, write=lambda a: f"{round(float(a), 1):g}"),    # the slider's 0.30000000000000004
            url_state.choice("layer", "hw_layer", mean_or_one(cfg.N_dec), MEAN, "layer"),
            url_state.choice("head", "hw_head", mean_or_one(cfg.h), MEAN, "head")]


def start_values(model) -> None:
    """The sentence of a link (?text=), else the explorer's (the same session key), else the checkpoint's default;
    the step of a link (?step=N, from 1)."""
    if "src" not in st.session_state and st.query_params.get("text"):
        st.session_state.src = st.query_params["text"][:5000]
    if st.session_state.get("src") in (None, st.session_state.get("src_default")):
        st.session_state.src = st.session_state.src_default = default_sentence(model.card)
    if "hw_step" not in st.session_state:
        try:
            st.session_state.hw_step = max(1, int(st.query_params.get("step", 1)))
        except ValueError:
            st.session_state.hw_step = 1
    for key, default in [("hw_beam", 4), ("hw_alpha", 0.6), ("hw_temperature", 1.0), ("hw_layer", MEAN),
                         ("hw_head", MEAN), ("hw_prefix", None)]:
        st.session_state.setdefault(key, default)


def sentence_and_search():
    """(sentence, beam, alpha): the sentence box (shared with the explorer) beside the search's settings."""
    left, mid, right = st.columns([6, 2, 2])
    src = left.text_area("Sentence to translate", key="src", height=80, persist_state="session",
                         help="The same sentence as in the Attention explorer. Press Ctrl+Enter to translate.")
    beam = mid.selectbox("Beam", BEAMS, key="hw_beam", format_func=lambda b: "1 (greedy)" if b == 1 else str(b),
                         help="How many partial translations the search keeps at each step. The paper uses 4; "
                              "1 is greedy: always the single most probable piece.")
    alpha = right.slider("Length penalty α", 0.0, 1.5, key="hw_alpha", step=0.1,
                         help="Beam search ranks finished translations by log P / ((5 + length) / 6)^α. "
                              "α = 0 prefers short ones; the paper uses 0.6.")
    return src, beam, alpha


def traced(ckpt, src: str, beam: int, alpha: float, prefix=None, sampling=None):
    """The cached trace, or a message and st.stop() (empty text and the like: core words it for a student)."""
    try:
        return cache.decoding_trace(ckpt, src, beam, alpha, prefix, sampling)
    except ValueError as e:
        st.warning(str(e))
        st.stop()
    except Exception as e:  # noqa: BLE001 the page must stay usable whatever the model does
        st.error(f"The model could not translate this sentence ({type(e).__name__}: {e}). Try a shorter one.")
        st.stop()


def step_controls(n: int, row) -> int:
    """Previous / Next and a slider over the steps (1..n) in `row`; the step as an index from 0, kept in ?step=."""
    st.session_state.hw_step = min(max(1, st.session_state.hw_step), n)

    def move(by: int):
        st.session_state.hw_step = min(max(1, st.session_state.hw_step + by), n)
    prev, nxt, slider = row.columns([1.6, 1.1, 5], vertical_alignment="bottom")
    prev.button("Previous", on_click=move, args=(-1,), width="stretch",
                disabled=st.session_state.hw_step <= 1, key="hw_previous")
    nxt.button("Next", on_click=move, args=(1,), width="stretch",
               disabled=st.session_state.hw_step >= n, key="hw_next")
    if n > 1:
        slider.slider("Step", 1, n, key="hw_step", help="Each step writes one piece of the translation.")
    st.query_params["step"] = str(st.session_state.hw_step)
    return st.session_state.hw_step - 1


def followed(tr, step: int) -> int:
    """The hypothesis shown at a step: the one on the winner's way, else the best-ranked."""
    return dict(tr.search.path()).get(step, 0) if tr.search.winner else 0


def hypothesis_picker(tr, step: int, where) -> int:
    """The hypothesis whose choice is shown, picked in `where` (the winner's way unless changed)."""
    hyps = tr.steps[step].hyps
    if len(hyps) == 1:
        return 0
    on_way = followed(tr, step)

    def label(i):
        mark = " (on the winner's way)" if i == on_way and tr.search.winner else ""
        return f"{i + 1}. …{tr.text(hyps[i].tokens)[-45:]}  score {hyps[i].score:.2f}{mark}"
    return where.selectbox("Hypothesis in the beam", range(len(hyps)), index=on_way, format_func=label,
                        help="Beam search grows several partial translations at once; pick one to see its choice.")


def candidates(tr, step: int, hyp: int, presenter: bool) -> None:
    """The bar chart of the next piece, at the temperature picked (the slider under it)."""
    place = st.container()
    temperature = st.slider("Temperature", 0.1, 3.0, key="hw_temperature", step=0.1,
                            help="Redraws the probabilities as softmax(log P / T). The paper's decoding (and this "
                                 "page's search) uses T = 1: below 1 the favourite gets more, above 1 the others do.")
    fig = candidates_figure(tr, step, hyp, temperature)
    with place:
        show_figure(readable(fig, presenter), f"step{step + 1}_candidates", key="hw_candidates", styled=True)
    st.caption("The search uses the model's own probabilities (T = 1). Blue: kept in the beam; green: ends the "
               "sentence; grey: not kept; outlined: what the search took. " if temperature == 1.0 else
               f"Shown at T = {temperature:g}; the search itself used T = 1, as the paper's decoding does.")


def where_it_looked(tr, step: int, hyp: int, cfg, presenter: bool) -> None:
    """The cross-attention with which the hypothesis chose, over the source words, for one layer and head or means."""
    c1, c2, c3 = st.columns([2, 2, 2], vertical_alignment="bottom")
    for key, n in (("hw_layer", cfg.N_dec), ("hw_head", cfg.h)):         # another checkpoint may have fewer
        if st.session_state[key] >= n:
            st.session_state[key] = MEAN
    layer = c1.selectbox("Layer", [MEAN] + list(range(cfg.N_dec)), key="hw_layer",
                         format_func=lambda i: "mean of all layers" if i == MEAN else f"{i + 1} of {cfg.N_dec}")
    head = c2.selectbox("Head", [MEAN] + list(range(cfg.h)), key="hw_head",
                        format_func=lambda i: "mean of all heads" if i == MEAN else f"{i + 1} of {cfg.h}")
    words = words_toggle(c3, "hw_words")
    cross = tr.steps[step].hyps[hyp].cross                                    # (N_dec, h, S)
    cross = cross.mean(0) if layer == MEAN else cross[layer]
    weights = cross.mean(0) if head == MEAN else cross[head]                   # (S,)
    labels = tr.source_words()[0] if words else display_pieces(tr.src_tokens)
    labels = mark_prompt(labels, prompt_count(tr.src_tokens, tr.src_prompt, words))    # T5: ⟨its prompt⟩
    if words:
        weights = tr.cross_over_words(weights)
    h = tr.steps[step].hyps[hyp]
    chosen = [c for c in h.candidates if c.fate != "pruned"]
    written = piece_label(tr.pieces([chosen[0].token])[0]) if chosen else "?"
    where = ("every layer" if layer == MEAN else f"layer {layer + 1}") + (", mean of the heads" if head == MEAN
                                                                          else f", head {head + 1}")
    fig = source_strip_figure(labels, weights, f"Where step {step + 1} looked while it chose '{written}' ({where})")
    show_figure(readable(fig, presenter), f"step{step + 1}_source", key="hw_source", styled=True)


def what_if(ckpt, tr, step: int, hyp: int, src: str, beam: int, alpha: float, model) -> None:
    """Force another piece at this step (a candidate or a typed word): the model continues from it."""
    h = tr.steps[step].hyps[hyp]
    st.subheader("What if it had written another word here?")
    c1, c2, c3 = st.columns([3, 3, 2], vertical_alignment="bottom")
    pieces = tr.pieces([c.token for c in h.candidates])
    pick = c1.selectbox("A candidate of this step", range(len(h.candidates)), index=min(1, len(h.candidates) - 1),
                        format_func=lambda i: f"{piece_label(pieces[i])} ({h.candidates[i].prob:.1%})",
                        key=f"hw_pick_{step}")
    typed = c2.text_input("…or type a word", key="hw_typed", placeholder="e.g. ihre",
                          help="A word the vocabulary splits into pieces is forced piece by piece.")
    if c3.button("Write this instead", icon=":material/edit:", width="stretch", key="hw_force"):
        try:
            extra = spell(model, typed) if typed.strip() else [h.candidates[pick].token]
        except ValueError as e:
            st.warning(str(e))
        else:
            if extra == [model.cfg.eos_id]:
                st.info("That candidate ends the sentence here: the translation would stop after "
                        f"“{tr.text(h.tokens)}”.")
            else:
                st.session_state.hw_prefix = (tuple(h.tokens + extra), src, beam, alpha)
    why_not(ckpt, model, h, src, typed, h.candidates[pick].token)
    forced = st.session_state.hw_prefix
    if not forced or forced[1:] != (src, beam, alpha):
        st.caption("Pick a candidate (or type a word) and the model continues from it, teacher-forced up to there.")
        return
    alt = traced(ckpt, src, beam, alpha, forced[0])
    for notice in alt.notices:
        st.info(md_escape(notice))
    left, right = st.columns(2)
    left.markdown(f"**The model's own** · log P {tr.logprob:.2f} · score {tr.score:.3f}")
    left.code(tr.translation or "(empty)", language=None, wrap_lines=True)
    right.markdown(f"**With your word** · log P {alt.logprob:.2f} · score {alt.score:.3f}")
    right.code(alt.translation or "(empty)", language=None, wrap_lines=True)
    better = "the model's own" if tr.score >= alt.score else "yours"
    st.caption(f"The score is log P divided by the length penalty (α = {alpha:g}); the higher, the more the model "
               f"likes it: here {better}. Beam search could only have found yours if it had kept that word.")
    if st.button("Back to the model's own", key="hw_unforce"):
        st.session_state.hw_prefix = None
        st.rerun()


def why_not(ckpt, model, h, src: str, typed: str, picked: int) -> None:
    """Why did the step write its piece and not the candidate picked (or the word typed)? app.why's section."""
    if not st.toggle("Why this and not that?", key="hw_why",
                     help="What in the sentence pushed the model to its piece rather than the one picked above."):
        return
    kept = [c.token for c in h.candidates if c.fate != "pruned"]
    try:
        other = spell(model, typed) if typed.strip() else [picked]
    except ValueError as e:
        st.warning(str(e))
        return
    if not kept or other == kept[:1] or model.cfg.eos_id in other + kept[:1]:
        st.info("Pick a candidate other than the piece the model wrote (and not the end of the sentence) to ask "
                "why it wrote its own.")
        return
    layer, head = (None if st.session_state[k] == MEAN else st.session_state[k] for k in ("hw_layer", "hw_head"))
    why_section(ckpt, model, src, tuple(h.tokens), tuple(kept[:1]), tuple(other), "hw_why", layer, head,
                presenter_mode())


def greedy_and_beam(ckpt, src: str, beam: int, alpha: float) -> None:
    """Greedy and beam search side by side, and what α changes."""
    st.subheader("Greedy or beam search?")
    rows = [("greedy (beam 1)", traced(ckpt, src, 1, alpha))]
    rows += [(f"beam search, {b} beams", traced(ckpt, src, b, alpha)) for b in sorted({4, beam}) if b > 1]
    if st.toggle("Also: what α changes (beam 4, α = 0, 0.6 and 1.0)", key="hw_alphas"):
        rows += [(f"beam 4, α = {a:g}", traced(ckpt, src, 4, a)) for a in (0.0, 0.6, 1.0) if a != alpha]
    if st.toggle("Also: draw at random (sampling)", key="hw_sampling",
                 help="Instead of searching, draw each piece at random from the model's probabilities, as chat "
                      "models often do; the same seed draws the same words."):
        c1, c2, c3, c4 = st.columns(4)
        sampling = (c1.number_input("temperature", 0.1, 5.0, 1.0, 0.1, key="hw_s_temperature"),
                    int(c2.number_input("top-k (0: all)", 0, 1000, 0, key="hw_s_top_k")),
                    c3.number_input("top-p", 0.05, 1.0, 1.0, 0.05, key="hw_s_top_p"),
                    int(c4.number_input("seed", 0, 10**6, 0, key="hw_s_seed")))
        rows.append((f"sampled (T = {sampling[0]:g}, top-k {sampling[1] or 'all'}, top-p {sampling[2]:g}, seed "
                     f"{sampling[3]})", traced(ckpt, src, 1, alpha, None, sampling)))
    st.markdown("\n".join(f"- **{name}** · log P {t.logprob:.2f} · score {t.score:.3f} (α = {t.search.alpha:g}): "
                           f"{md_escape(t.translation) or '(empty)'}" for name, t in rows))
    greedy, best = rows[0][1], rows[1][1]
    if best.translation == greedy.translation:
        st.caption("Here beam search found the same translation as greedy decoding.")
    else:
        gain = best.logprob - greedy.logprob
        st.caption(f"Beam search kept other beginnings alive and found a translation "
                   f"{'more' if gain > 0 else 'less'} probable than greedy's (log P {gain:+.2f}): greedy took the "
                   "best piece at each step, which is not always the best sentence.")


ckpt, model = cache.model_or_stop()
if model_family(model) == DECODER_ONLY:          # a language model writes too: after a prompt
    lm_writing.page(ckpt, model)
    st.stop()
translation_or_stop("how_it_writes", model)      # an encoder-only model: one line why not
link = link_params(model.cfg)
url_state.restore("how_it_writes", link)
start_values(model)
presenter = presenter_mode()
st.title("How it writes")
src, beam, alpha = sentence_and_search()
st.query_params["text"] = src[:500]
url_state.publish("how_it_writes", link)        # before the model runs: a sentence it refuses keeps its link too
tr = traced(ckpt, src, beam, alpha)
for notice in tr.notices:
    st.info(md_escape(notice))
st.markdown(f"**Translation** ({'greedy' if beam == 1 else f'beam search, {beam} beams'}, {len(tr.steps)} steps): "
            f"{md_escape(tr.translation) or '(empty)'}")
steps_row, hyp_row = st.columns([3, 2], vertical_alignment="bottom")
step = step_controls(len(tr.steps), steps_row)
hyp = hypothesis_picker(tr, step, hyp_row)
cand_col, tree_col = st.columns([2, 3])
with cand_col:
    candidates(tr, step, hyp, presenter)
with tree_col:
    tree = beam_tree_figure(tr, step, window=6 if presenter else 9,
                            title=f"The beam: {beam} hypotheses at most" if beam > 1 else "Greedy: one line")
    show_figure(readable(tree, presenter), "beam_tree", key="hw_tree", styled=True)
    st.caption("Each node is a piece written (the shaded column: this step's). Red: the winner's way; blue: kept; "
               "grey: pruned, its line never finished (words on hover); stars: finished, the winner's large, their "
               "scores on hover. Drag the tree sideways to see other steps.")
where_it_looked(tr, step, hyp, model.cfg, presenter)
url_state.publish("how_it_writes", link)        # again: the layer and head just chosen
what_if(ckpt, tr, step, hyp, src, beam, alpha, model)
greedy_and_beam(ckpt, src, beam, alpha)
