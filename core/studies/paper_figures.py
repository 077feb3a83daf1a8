"""Find, in our model, the encoder self-attention heads that the paper's Figures 3, 4 and 5 show.

The paper (Vaswani et al. 2017, appendix) shows heads of "layer 5 of 6", i.e. layer index 4 here
(0-based), on two newstest2013 sentences. Our heads are not numbered like Google's, so we score
every (layer, head) on the behaviour each figure illustrates and rank them. All scores are computed
on one word-level view of the map (word_view, core.views: attention *from* a word is the mean over its
pieces' rows, attention *to* a word is the sum over its pieces' columns), so they are fractions of
the attention a word hands out and lie in [0, 1].

Figure 3, long-distance dependency: mass from "making" to the words "more difficult".
Figure 4, anaphora: mass from "its" to "Law", its antecedent. The mass on "application" is reported
    beside it but not scored: "application" is the word right after "its", so a plain next-word head
    would win a score that counted it. Each head's next-word score (as Figure 5's "→ next") is shown
    too, so that a next-word head is not mistaken for an anaphora head.
Figure 5, sentence structure: the mean, over the sentence's words, of the mass a word gives to its
    two neighbouring words (previous + next, </s> excluded). Local, position-driven heads are the
    structural heads most often found in trained Transformers ("positional heads", Voita et al. 2019;
    previous/next-word heads, Clark et al. 2019); unlike a mean attention distance, this score is not
    fooled by a head that only looks at the word itself. The mean distance is reported alongside.

For a figure with several heads, the layer is the one whose best `k` heads score highest together.

When does a head *link* two words (Figures 3 and 4)? When it puts at least LINK_FACTOR = 10 times the
share an evenly spreading head would put there, or LINK_CAP = 0.40 of its attention if that is less
(short sentences, where 10x the even share can pass 1). On the Figure 4 sentence the even share of 'Law'
is 1/26 = 0.04 for a 26-piece sentence, so a link needs 0.38: the paper's heads, "very sharp for this
word", are far above it; a head that looks a little more at 'Law' than at other words is not. The cap
was 0.50 until 2026-12-04; it is 0.40 because a trained head's score drifts between saves (news-small's
Figure 3 head read 0.45-0.62 over its own late snapshots): a cap of 0.50 cut through that noise. The
pages print the score beside the verdict, so a reader sees how strong the link is.
And only if it is selective (score >= LINK_SELECTIVE = 2 times "others", the mean share the sentence's
other words give the same target words): a head where every word looks at 'more difficult.', the end
of the sentence, is not following the dependency of 'making' (news-small had one at step 450).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from core.tokenizer import bare_word, merge_words, word_ids
from core.views import SPECIALS, AttentionView, attention_view

PAPER_LAYER = 4   # "layer 5 of 6" in the paper, 0-based here
FIGURE3_SENTENCE = ("It is in this spirit that a majority of American governments have passed new laws "
                    "since 2009 making the registration or voting process more difficult.")
FIGURE45_SENTENCE = ("The Law will never be perfect, but its application should be just - "
                     "this is what we are missing, in my opinion.")
LINK_FACTOR, LINK_CAP = 10.0, 0.40  # a head links two words at >= min(10 x the even share, 0.40) (module docstring)
LINK_SELECTIVE = 2.0                # ... and >= 2 x what the other words give the same target words


def find_words(words: list[str], phrase: str) -> list[int]:
    """Indices in `words` (a word view's labels) of the first occurrence of `phrase`; ValueError if absent."""
    normed = [bare_word(w) for w in words]             # 'difficult.' matches 'difficult', 'Law' matches 'law'
    wanted = [bare_word(w) for w in phrase.split()]
    wanted = [w for w in wanted if w]
    if not wanted:
        raise ValueError(f"'{phrase}' has no word to look for.")
    for start in range(len(normed) - len(wanted) + 1):
        if normed[start: start + len(wanted)] == wanted:
            return list(range(start, start + len(wanted)))
    shown = " ".join(w for w in words if w not in SPECIALS)
    raise ValueError(f"The sentence does not contain the word '{phrase}'. Its words are: {shown}")


def find_words_in_pieces(pieces: list[str], phrase: str) -> list[int]:
    """Word indices (as merge_words counts them) of the first occurrence of `phrase` in pieces; ValueError if absent."""
    return find_words(merge_words(pieces), phrase)


def find_pieces(pieces: list[str], phrase: str) -> list[int]:
    """Piece indices of the first occurrence of `phrase` (a word may be split into several pieces)."""
    wanted = set(find_words_in_pieces(pieces, phrase))
    return [i for i, w in enumerate(word_ids(pieces)) if w in wanted]


def word_view(attn: np.ndarray, tokens: list[str]) -> AttentionView:
    """Piece-level (N, h, S, S) encoder self-attention of `tokens` -> its word view (core.views): maps
    (N, h, W, W) float32 labelled by the words; ValueError when the map and the tokens differ in size.
    Every score below takes it, so a caller merges a map once however many scores it wants."""
    return attention_view({"src_tokens": list(tokens)}, "enc_self", words=True, maps=attn)


def _table(values: dict, sort_by: str = "score") -> pd.DataFrame:
    """{column: (N, h) array} -> one row per (layer, head), best first."""
    N, h = next(iter(values.values())).shape
    layer, head = np.divmod(np.arange(N * h), h)
    df = pd.DataFrame({"layer": layer, "head": head, **{k: np.asarray(v).reshape(-1) for k, v in values.items()}})
    return df.sort_values([sort_by, "layer", "head"], ascending=[False, True, True], ignore_index=True)


def dependency_scores(view: AttentionView, source: str, targets: list[str],
                      also: tuple[str, ...] = ()) -> pd.DataFrame:
    """Every head's attention mass from the word `source` to the words `targets` (each a word or phrase).

    view: word_view of (N, h, S, S) encoder self-attention. Columns: layer, head, one "→ target" per target
    and per word of `also` (reported, not scored), "others" (the mean, over the sentence's other words, of
    their mass on the targets: high for a head where every word looks there) and score, the sum over
    `targets`. Best score first.
    """
    merged, words = view.maps, view.rows                           # (N, h, W, W), W words

    def mass(r, t):
        return merged[..., r, :][..., find_words(words, t)].sum(-1).mean(-1)   # (N, h)

    rows = find_words(words, source)
    per_target = {f"→ {t}": mass(rows, t) for t in targets}
    taken = set(rows) | {w for t in targets for w in find_words(words, t)}
    others = [w for w, text in enumerate(words) if w not in taken and text not in SPECIALS]
    other_mass = sum(mass(others, t) for t in targets) if others else np.full(merged.shape[:2], np.nan)
    return _table({**per_target, **{f"→ {t}": mass(rows, t) for t in also}, "others": other_mass,
                   "score": sum(per_target.values())})


def structure_scores(view: AttentionView) -> pd.DataFrame:
    """Every head's attention to neighbouring words (Figure 5's score; see the module docstring) in a word_view.

    Columns: layer, head, score (mean over words of the mass on the previous + next word),
    "← previous", "→ next" (its two parts) and "mean distance" (in words). Best first.
    """
    real = [i for i, w in enumerate(view.rows) if w not in SPECIALS]
    m = view.maps[..., real, :][..., real]                         # (N, h, W, W) without </s>
    W = m.shape[-1]
    if W < 2:
        raise ValueError("The sentence needs at least two words to look at sentence structure.")
    idx = np.arange(W)
    prev = np.zeros(m.shape[:-1])
    nxt = np.zeros(m.shape[:-1])
    prev[..., 1:] = m[..., idx[1:], idx[1:] - 1]
    nxt[..., :-1] = m[..., idx[:-1], idx[:-1] + 1]
    distance = (m * np.abs(idx[:, None] - idx[None, :])).sum(-1).mean(-1)
    return _table({"score": (prev + nxt).mean(-1), "← previous": prev.mean(-1), "→ next": nxt.mean(-1),
                   "mean distance": distance})


def next_word_scores(view: AttentionView) -> np.ndarray:
    """(N, h): each head's mean share of a word's attention on the next word (structure_scores' "→ next")."""
    table = structure_scores(view).sort_values(["layer", "head"])
    return table["→ next"].to_numpy().reshape(view.maps.shape[:2])


def link_threshold(chance: float) -> float:
    """The score from which a head counts as linking two words: 10x the even share, at most LINK_CAP."""
    return min(LINK_FACTOR * chance, LINK_CAP)


def best_layer(table: pd.DataFrame, k: int) -> int:
    """The layer whose k best heads have the highest summed score."""
    top = table.sort_values("score", ascending=False).groupby("layer")["score"].apply(lambda s: s.head(k).sum())
    return int(top.idxmax())


def top_heads(table: pd.DataFrame, layer: int, k: int | None = None) -> list[int]:
    """Heads of `layer`, best first (the k best, or all)."""
    heads = table[table.layer == layer].sort_values("score", ascending=False)["head"].tolist()
    return [int(h) for h in heads[:k]]


@dataclass
class FigureHeads:
    """What one paper figure needs: the chosen layer and heads, the word in focus, and every head's score."""
    figure: int
    title: str
    sentence: str
    layer: int
    heads: list
    focus: str | None
    scores: pd.DataFrame
    chance: float             # the score of a head that spreads its attention evenly over the sentence
    threshold: float | None = None   # the score from which a head links the words (Figures 3, 4)

    @property
    def best(self) -> pd.Series:
        """The best-scoring head anywhere: its row of `scores`."""
        return self.scores.iloc[0]

    @property
    def linking(self) -> pd.DataFrame:
        """The heads that link the words: score >= threshold and selective (module docstring); best first."""
        if self.threshold is None:
            return self.scores.iloc[:0]
        s = self.scores
        return s[(s.score >= self.threshold) & ~(s.score < LINK_SELECTIVE * s.others)]

    @property
    def linked(self) -> bool | None:
        """Does any head link the words? None where the figure has no threshold (Figure 5)."""
        return None if self.threshold is None else not self.linking.empty

    def to_dict(self) -> dict:
        """JSON-ready, with layers and heads counted from 0 as in the arrays."""
        return {"figure": self.figure, "title": self.title, "sentence": self.sentence, "layer": self.layer,
                "heads": self.heads, "focus": self.focus, "paper_layer": PAPER_LAYER,
                "chance": round(self.chance, 4),
                "threshold": None if self.threshold is None else round(self.threshold, 4), "linked": self.linked,
                "scores": self.scores.round(4).to_dict(orient="records")}


def _chance(score_fn, tokens: list[str]) -> float:
    """What score_fn (of a word view) gives a single head with uniform attention over the tokens."""
    S = len(tokens)
    return float(score_fn(word_view(np.full((1, 1, S, S), 1.0 / S), tokens)).score.iloc[0])


def figure3(attn: np.ndarray, tokens: list[str], sentence: str = FIGURE3_SENTENCE,
            view: AttentionView | None = None) -> FigureHeads:
    """'making' → 'more difficult': the layer where the heads do it most (mean of its heads), all its heads ranked.

    view: word_view(attn, tokens), when the caller has it already (Figures 4 and 5 likewise)."""
    def score(v):
        return dependency_scores(v, "making", ["more difficult"])
    scores = score(word_view(attn, tokens) if view is None else view)
    layer = best_layer(scores, k=attn.shape[1])
    chance = _chance(score, tokens)
    return FigureHeads(3, "Long-distance dependency: 'making … more difficult'", sentence, layer,
                       top_heads(scores, layer), "making", scores, chance, link_threshold(chance))


def figure4(attn: np.ndarray, tokens: list[str], sentence: str = FIGURE45_SENTENCE,
            view: AttentionView | None = None) -> FigureHeads:
    """'its' → 'Law' (the antecedent): the best two heads of the best layer for it.

    Columns: score (= "→ Law"), "→ application" (the next word, not scored) and "next word" (the head's
    mean share on the next word over the whole sentence: high for a next-word head, whatever it does).
    """
    view = word_view(attn, tokens) if view is None else view

    def score(v):
        return dependency_scores(v, "its", ["Law"], also=("application",))
    scores = score(view)
    nxt = pd.DataFrame({"layer": np.repeat(np.arange(attn.shape[0]), attn.shape[1]),
                        "head": np.tile(np.arange(attn.shape[1]), attn.shape[0]),
                        "next word": next_word_scores(view).reshape(-1)})
    scores = scores.merge(nxt, on=["layer", "head"], how="left")
    layer = best_layer(scores, k=2)
    chance = _chance(score, tokens)
    return FigureHeads(4, "Anaphora: 'its' refers to 'Law'", sentence, layer, top_heads(scores, layer, 2),
                       "its", scores, chance, link_threshold(chance))


def figure5(attn: np.ndarray, tokens: list[str], sentence: str = FIGURE45_SENTENCE,
            view: AttentionView | None = None) -> FigureHeads:
    """Attention to neighbouring words: the best two heads of the best layer for it."""
    scores = structure_scores(word_view(attn, tokens) if view is None else view)
    layer = best_layer(scores, k=2)
    return FigureHeads(5, "Sentence structure: attention to neighbouring words", sentence, layer,
                       top_heads(scores, layer, 2), None, scores, _chance(structure_scores, tokens))


FIGURES = {3: (figure3, FIGURE3_SENTENCE), 4: (figure4, FIGURE45_SENTENCE), 5: (figure5, FIGURE45_SENTENCE)}
