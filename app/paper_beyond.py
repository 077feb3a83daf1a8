"""'Beyond this sentence' on The paper's figures: what each figure's head does over a corpus, read from the card
(figure_links.py --corpus, evaluate_pronouns.py, evaluate_syntax.py) and the atlas, so that one sentence's head is
not taken for a law of the model. The sentences are built in app.figures.paper."""
import streamlit as st

from app.data_notice import offer_download
from app.display import show_figure
from app.figures import paper as figs
from app.heads_tabs.atlas import stored_atlas
from core.datasets import how_to_get
from core.paths import portable
from core.studies import conllu

NEEDS = {3: "python scripts/figure_links.py {folder} --card --corpus",
         4: "python scripts/evaluate_pronouns.py {folder}",
         5: "python scripts/evaluate_syntax.py {folder}"}


def beyond_this_sentence(number: int, model, found) -> None:
    """The figure's corpus line (and for Figure 3 its table by layer and length), or the command that measures it."""
    card = model.card
    st.subheader("Beyond this sentence")
    if number == 3:
        corpus = (card.figures or {}).get("3", {}).get("corpus")
        line = figs.beyond_figure3(corpus, found)
    elif number == 4:
        line = figs.beyond_figure4(card.pronouns, found, stored_atlas(model.folder))
    else:
        line = figs.beyond_figure5(card.syntax, found)
    if line is None:
        folder = portable(model.folder) if model.folder else "CHECKPOINT"
        first = ("" if number == 4 or conllu.ud_english_dev().is_file() else
                 f" It needs the gold parses of UD English EWT, not on this machine yet: {how_to_get('eval')} "
                 "fetches them; then")
        st.info(f"This checkpoint has not been measured over a corpus for Figure {number}.{first} "
                f"`{NEEDS[number].format(folder=folder)}` measures it and writes it into its card.")
        if first:
            offer_download("eval", f"pf{number}_fetch")
        return
    st.markdown(line)
    if number == 3:
        show_figure(figs.long_arcs_figure(corpus, figs.picked_head(found)), "figure3_corpus",
                    key="pf3_corpus")
        st.caption("A head follows a dependency when a word's strongest link to another word is its partner in the "
                   "gold parse (UD English EWT dev, both directions). Each layer's head and each length's fixed "
                   "offset are chosen on the first half of the sentences and scored on the second.")
