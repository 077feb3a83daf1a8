"""Demo sentences that suit a checkpoint: a model trained on image captions gets captions, a news model news.

A class's first screen should show a good translation, and a model translates well only text like what
it was trained on. A checkpoint's card.json can list its own demo sentences:
    "demo": {"domain": "captions", "sentences": ["A man in a blue shirt is standing on a ladder.", ...]}
Without that, the domain is guessed from the name of its training data. Pure: no Streamlit here.
"""
from __future__ import annotations

from core.checkpoint.card import Card, as_card
from core.studies.paper_figures import FIGURE3_SENTENCE, FIGURE45_SENTENCE

# The paper's sentences (Figures 3-5) are news: they stay on offer for every model, marked when off-domain.
PAPER = {"Figure 3 of the paper (long-distance 'making … more difficult')": FIGURE3_SENTENCE,
         "Figures 4 and 5 of the paper (what does 'its' refer to?)": FIGURE45_SENTENCE}
DOMAINS = {   # domain -> (what it is, in words; examples by label, the first is the default)
    "captions": ("image captions (Multi30k)", {
        "A picture caption": "A man in a blue shirt is standing on a ladder.",
        "Who is doing what?": "Two young girls are playing with a brown dog in the park.",
        "A longer caption": "A man and a woman are walking on the beach, and the man is holding a surfboard.",
        "Colours and clothes": "A little boy in a red jacket is jumping into the water.",
    }),
    "news": ("news and parliament speeches (WMT)", {
        "A sentence from the news": "We must protect the environment for our children.",
        **PAPER,
        "German word order (verb at the end)": "I could not come yesterday because the train had already left.",
        "Who is 'it'?": "The animal didn't cross the street because it was too tired.",
        "Repeated words": "The cat saw the dog, and then the dog saw the cat.",
    }),
}
GUESSES = {"multi30k": "captions", "flickr": "captions", "coco": "captions"}   # a data folder's name -> domain


def _demo(card: Card | dict | None) -> dict:
    demo = as_card(card).demo
    return demo if isinstance(demo, dict) else {}


def declared_domain(card: Card | dict | None) -> str | None:
    """The demo domain the card itself names ('captions' or 'news'), or None when it names none we know."""
    named = _demo(card).get("domain")
    return named if named in DOMAINS else None


def domain(card: Card | dict | None) -> str:
    """'captions' or 'news': the card's demo domain, else guessed from the name of its training data."""
    if named := declared_domain(card):
        return named
    card = as_card(card)
    where = f"{card.data_name or ''} {card.prep_report.get('corpus', '')} {card.name}".lower()
    return next((d for key, d in GUESSES.items() if key in where), "news")


def _listed(card: Card | dict | None) -> list[str]:
    """The demo sentences the card lists itself (maybe none)."""
    listed = _demo(card).get("sentences")
    return [s.strip() for s in listed if isinstance(s, str) and s.strip()] if isinstance(listed, list) else []


def demo_sentences(card: Card | dict | None) -> list[str]:
    """The sentences to show first: the card's own list, else its domain's examples; never empty."""
    return _listed(card) or list(DOMAINS[domain(card)][1].values())


def default_sentence(card: Card | dict | None) -> str:
    """The sentence a page starts with for this checkpoint."""
    return demo_sentences(card)[0]


def examples(card: Card | dict | None) -> dict[str, str]:
    """Label -> sentence: the card's demo sentences, its domain's examples, then the paper's news sentences
    (marked when the model was trained on something else, so that a poor translation is no surprise)."""
    kind = domain(card)
    out = {f"Demo of this model: {s}": s for s in _listed(card)}
    for label, s in DOMAINS[kind][1].items():
        if s not in out.values():
            out[label] = s
    if kind != "news":
        out.update({f"{label}: news, not {DOMAINS[kind][0]}": s for label, s in PAPER.items()})
    return out
