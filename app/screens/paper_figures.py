"""The paper's Figures 3, 4 and 5 redrawn on the loaded model, with the heads that behave most like the paper's."""
import streamlit as st

from app import cache, url_state
from app.checkpoints import UNTRAINED, page_problem
from app.demo import DOMAINS, domain
from app.display import show_figure
from app.figures.paper import (describe_figure5_head, describe_link, display_table, figure5_best, figure5_layer_note,
                               figure_set, find_heads, paper_figure, score_grid_figure)
from app.figures.training import describe_model
from app.paper_beyond import beyond_this_sentence
from app.lm.common import translation_or_stop
from core.studies import paper_figures as pf
from core.studies import conllu
from core.studies import syntax as sx
from core.views import sentence_only


def introduction(name: str, model) -> bool:
    """What the paper's figures show in a line, the rest (how ours count layers, the loaded model) one click away,
    the switch between words and pieces beside it (its value returned), and a word on an unsuitable model: the
    first screen is for the drawing."""
    st.caption("The paper's Figures 3-5 show encoder heads of layer 5 of 6 that follow long-distance dependencies, "
               "resolve an anaphora and track sentence structure. Here the same sentences go through the loaded "
               "model, and its best heads are drawn the paper's way.")
    about, switch = st.columns([5, 2], vertical_alignment="center")
    with about.expander("About these figures and our model"):
        st.write("Every head is scored on the behaviour each figure shows, and the best ones are drawn the paper's "
                 "way: the sentence twice, one line per attention weight, the bolder the stronger, one colour per "
                 "head.")
        st.caption(f"Layers and heads count from 1, as in the paper: its \"layer 5 of 6\" is layer 5 here, which is "
                   f"index {pf.PAPER_LAYER} (0-based) in the code and in exported JSON. The paper's model is the base "
                   f"Transformer, trained on 4.5 million sentence pairs for 12 hours on 8 GPUs. Ours: "
                   f"{describe_model(model.card, model.cfg)} Expect weaker, blurrier heads.")
    words = switch.toggle("Merge pieces into words", value=True, key="pf_words",
                          help="The model reads sub-word pieces; merged, each word's attention is the mean over "
                               "its pieces.")
    if name != UNTRAINED and domain(model.card) != "news":
        st.info(f"The paper's sentences are news, and {name} was trained on {DOMAINS[domain(model.card)][0]}: "
                "expect a poor translation and blurrier heads. A checkpoint trained on news (the sidebar) suits this "
                "page.")
    if name == UNTRAINED:
        st.warning("No trained checkpoint is loaded: this model's attention is random, so no head will look "
                   "like the paper's. Train one or pick another in the sidebar.")
    return words


def analyse(ckpt, number: int, words: bool):
    """Sentence box, translation, found heads and the encoder view to draw for one figure; (None, None) after an
    error message if it fails."""
    _, default = pf.FIGURES[number]
    box = st.expander("The sentence (to change it) and our model's translation")   # the paper's: rarely changed
    sentence = box.text_input("Sentence", default, key=f"pf{number}_sentence")
    try:
        result = cache.attend(ckpt, sentence)
        found, view = find_heads(number, result, sentence, words)
    except ValueError as e:
        st.error(f"{e}\n\nFigure {number} needs these words; the default sentence has them.")
        return None, None
    for notice in result.notices:
        st.info(notice)
    box.caption(f"Our model translates it: *{result.tgt}*")
    return view, found


def pick(name: str, cfg, number: int, found, k: int | None):
    """Layer and heads selectors, defaulting to the found ones; other heads can be picked."""
    c1, c2 = st.columns([1, 3])
    layer_link = url_state.number(f"layer{number}", f"pf{number}_layer_{name}", cfg.N, found.layer, "layer")
    url_state.restore("paper", [layer_link])                 # ?layer3=5&heads3=3,7: a link's layer and heads
    st.session_state.setdefault(layer_link.key, found.layer)
    layer = c1.selectbox("Layer", range(cfg.N), key=layer_link.key,
                         format_func=lambda i: f"{i + 1}" + (" (the paper's)" if i == pf.PAPER_LAYER else "")
                         + (" (best)" if i == found.layer else ""))
    best = pf.top_heads(found.scores, layer, k)
    heads_link = url_state.numbers(f"heads{number}", f"pf{number}_heads_{name}_{layer}", cfg.h, best, "head")
    url_state.restore("paper", [heads_link])
    st.session_state.setdefault(heads_link.key, best)
    heads = c2.multiselect("Heads", range(cfg.h), key=heads_link.key, format_func=lambda h: f"head {h + 1}")
    url_state.publish("paper", [layer_link, heads_link])
    return layer, heads


def scores(number: int, found, what: str, drawn: tuple[int, list[int]]) -> None:
    """The layer x head grid of scores (the drawn heads boxed), the best head in words, and the ranked table."""
    top = found.scores.iloc[0]
    st.write(f"**Best head anywhere: layer {int(top.layer) + 1}, head {int(top['head']) + 1}**, score "
             f"{top.score:.2f}: {what}. A head spreading its attention evenly would score {found.chance:.2f}.")
    show_figure(score_grid_figure(found.scores, title=f"Figure {number} score of every head",
                                  chosen=drawn), f"figure{number}_scores", key=f"pf{number}_grid")
    with st.expander("Every head's score, ranked"):
        st.dataframe(display_table(found.scores), hide_index=True)


def draw(number: int, view, layer: int, heads) -> None:
    """The figure's pictures for the chosen layer and heads of the encoder view (words or pieces)."""
    if not heads:
        st.info("Pick at least one head to draw.")
    for fig_name, fig in figure_set(number, view, layer, heads).items():
        show_figure(fig, fig_name, key=f"pf_{fig_name}")


def gold_structure(ckpt, view) -> None:
    """Figure 5 against a gold parse: every head scored by the gold arcs of the paper's sentence it follows
    (core.studies.syntax.figure5_arcs), the two best drawn the paper's way, with the relation each follows."""
    sentence = st.session_state.get("pf5_sentence", pf.FIGURE45_SENTENCE)
    try:
        result = sentence_only(cache.attend(ckpt, sentence))           # the parsed sentence: no prompt (T5)
        arcs = sx.figure5_arcs(result.enc_self, result.src_tokens)
        best = figure5_best(arcs)
    except conllu.SyntaxDataError as e:
        st.info(f"The gold parse (written by hand for this project) is of the paper's sentence, and this one "
                f"does not fit it ({e}): only the neighbour score below is measured. Put the paper's sentence "
                f"back to score heads by the arcs they follow.")
        return
    except ValueError as e:
        st.warning(f"No head to draw: {e}.")
        return
    words = conllu.read_figure5().words
    st.subheader("Heads scored by the gold syntax they follow")
    st.caption("A head follows a gold dependency arc (Universal Dependencies, parsed by hand for this project) "
               "when a word's strongest link, to another word, lands on its head (dep->head) or on one of its "
               "dependents (head->dep). Score: the share of the sentence's directed arcs it follows.")
    for _, row in best.iterrows():
        st.markdown(describe_figure5_head(row, words))
    st.markdown(figure5_layer_note(best, arcs))
    for _, row in best.iterrows():
        layer, head = int(row["layer"]), int(row["head"])
        show_figure(paper_figure(view, layer, [head], title=f"Figure 5, layer {layer + 1}, head {head + 1}: "
                                 f"{row['relation']} {row['direction']}"),
                    f"figure5_gold_layer{layer + 1}_head{head + 1}", key=f"pf5_gold_{layer}_{head}")
    show_figure(score_grid_figure(arcs, title="Share of the gold arcs each head follows"), "figure5_gold_scores",
                key="pf5_gold_grid")
    st.subheader("Baseline: the neighbour score")
    st.caption("The page's earlier score, kept as a baseline: how much of a word's attention goes to its "
               "previous and next words. A positional habit, not syntax, and it names no relation.")


TABS = [  # figure, tab title, the paper's caption and our score, heads picked by default (None: all), score label
    (3, "Figure 3: long distance",
     "*Paper: \"Many of the attention heads attend to a distant dependency of the verb 'making', "
     "completing the phrase 'making…more difficult'. Attentions here shown only for the word "
     "'making'.\"* Score: the share of the attention of 'making' that goes to 'more difficult'. The "
     "best-scoring head is drawn alone; add heads in the box below it to compare them, one colour each.",
     1, "share of the attention of 'making' on 'more difficult'"),
    (4, "Figure 4: anaphora",
     "*Paper: \"Two attention heads, also in layer 5 of 6, apparently involved in anaphora "
     "resolution. Top: Full attentions for head 5. Bottom: Isolated attentions from just the word "
     "'its' for attention heads 5 and 6. Note that the attentions are very sharp for this word.\"* "
     "Score: the share of the attention of 'its' on 'Law', the word it refers to. The share on "
     "'application' is shown beside it but not counted: it is simply the next word, which any "
     "next-word head looks at; so is each head's next-word score over the whole sentence.",
     2, "share of the attention of 'its' on 'Law'"),
    (5, "Figure 5: structure",
     "*Paper: \"Many of the attention heads exhibit behaviour that seems related to the structure "
     "of the sentence. We give two such examples above, from two different heads from the encoder "
     "self-attention at layer 5 of 6.\"* The paper gives no score. Ours: the gold dependency arcs "
     "of the sentence (parsed by hand) that a head's strongest links follow; below it, as a baseline, the "
     "mean share of a word's attention on its previous and next words, the local habit most often found "
     "in trained Transformers.",
     2, "mean share of a word's attention on its two neighbours"),
]

def figure_tab(ckpt, cfg, words: bool, figure: int, caption: str, n_heads: int | None, label: str) -> None:
    """One figure: the paper's caption, our translation and verdict, the heads drawn, and every head's score."""
    st.markdown(caption)
    view, found = analyse(ckpt, figure, words)
    if found and describe_link(found):   # Figures 3 and 4: does any head link the words at all?
        (st.success if found.linked else st.warning)(describe_link(found))
    if figure == 5 and found:
        gold_structure(ckpt, view)
    if found:
        drawing = st.container()            # the drawing first, its layer and heads below it: the first screen shows it
        layer, heads = pick(ckpt.name, cfg, figure, found, n_heads)
        with drawing:
            draw(figure, view, layer, heads)
        scores(figure, found, label, (layer, heads))
        beyond_this_sentence(figure, cache.load_model(ckpt), found)


st.title("The paper's attention figures")
ckpt, model = cache.model_or_stop()
translation_or_stop("paper_figures", model)      # a language model: one line why not
if problem := page_problem("paper_figures", model.card):       # an imported model of other languages
    st.info(problem)
    st.stop()
merge = introduction(ckpt.name, model)
figure_link = url_state.choice("figure", "pf_tab", {str(t[0]): t[1] for t in TABS}, TABS[0][1], "figure")
url_state.restore("paper", [figure_link])                  # ?figure=4
for number, *_ in TABS:       # a sentence typed in a tab stays when another tab is looked at (only the open one runs)
    if f"pf{number}_sentence" in st.session_state:
        st.session_state[f"pf{number}_sentence"] = st.session_state[f"pf{number}_sentence"]
tabs = st.tabs([t[1] for t in TABS], key="pf_tab", on_change="rerun")
url_state.publish("paper", [figure_link])
for tab, (figure, _, caption, n_heads, label) in zip(tabs, TABS):
    if tab.open:                            # the open tab alone: the others are drawn when opened
        with tab:
            figure_tab(ckpt, model.cfg, merge, figure, caption, n_heads, label)
