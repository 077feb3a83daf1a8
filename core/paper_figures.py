"""Find, in our model, the encoder self-attention heads that the paper's Figures 3, 4 and 5 show.

The paper (Vaswani et al. 2017, appendix) shows heads of "layer 5 of 6", i.e. layer index 4 here
(0-based), on two newstest2013 sentences. Our heads are not numbered like Google's, so we score
every (layer, head) on the behaviour each figure illustrates and rank them. All scores are computed
on word-level maps (core.tokenizer.merge_attention: attention *from* a word is the mean over its
pieces' rows, attention *to* a word is the sum over its pieces' columns), so they are fractions of
the attention a word hands out and lie in [0, 1].

Figure 3, long-distance dependency: mass from "making" to the words "more difficult".
Figure 4, anaphora: mass from "its" to "Law" plus mass from "its" to "application" (the paper's two
    heads attend sharply to these; one head may take one, the other head the other).
Figure 5, sentence structure: the mean, over the sentence's words, of the mass a word gives to its
    two neighbouring words (previous + next, </s> excluded). Local, position-driven heads are the
    structural heads most often found in trained Transformers ("positional heads", Voita et al. 2019;
    previous/next-word heads, Clark et al. 2019); unlike a mean attention distance, this score is not
    fooled by a head that only looks at the word itself. The mean distance is reported alongside.

For a figure with several heads, the layer is the one whose best `k` heads score highest together.
"""
from __future__ import annotations

import unicodedata
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .tokenizer import merge_attention, merge_words, word_ids

PAPER_LAYER = 4   # "layer 5 of 6" in the paper, 0-based here
FIGURE3_SENTENCE = ("It is in this spirit that a majority of American governments have passed new laws "
                    "since 2009 making the registration or voting process more difficult.")
FIGURE45_SENTENCE = ("The Law will never be perfect, but its application should be just - "
                     "this is what we are missing, in my opinion.")
SPECIALS = ("<s>", "</s>", "<pad>")


def _norm(word: str) -> str:
    """Lower case without the punctuation around it, so that 'difficult.' matches 'difficult'."""
    is_punct = lambda c: unicodedata.category(c)[0] in "PS"
    word = word.lower()
    start, end = 0, len(word)
    while start < end and is_punct(word[start]):
        start += 1
    while end > start and is_punct(word[end - 1]):
        end -= 1
    return word[start:end]


def locate_words(tokens: list[str], phrase: str) -> list[int]:
    """Word indices (as merge_words counts them) of the first occurrence of `phrase`; ValueError if absent."""
    words = [_norm(w) for w in merge_words(tokens)]
    wanted = [_norm(w) for w in phrase.split()]
    wanted = [w for w in wanted if w]
    if not wanted:
        raise ValueError(f"'{phrase}' has no word to look for.")
    for start in range(len(words) - len(wanted) + 1):
        if words[start: start + len(wanted)] == wanted:
            return list(range(start, start + len(wanted)))
    shown = " ".join(w for w in merge_words(tokens) if w not in SPECIALS)
    raise ValueError(f"The sentence does not contain the word '{phrase}'. Its words are: {shown}")


def locate(tokens: list[str], phrase: str) -> list[int]:
    """Piece indices of the first occurrence of `phrase` (a word may be split into several pieces)."""
    wanted = set(locate_words(tokens, phrase))
    return [i for i, w in enumerate(word_ids(tokens)) if w in wanted]


def _word_maps(attn: np.ndarray, tokens: list[str]) -> np.ndarray:
    """Piece-level (..., S, S) self-attention -> word-level (..., W, W)."""
    if attn.shape[-1] != len(tokens) or attn.shape[-2] != len(tokens):
        raise ValueError(f"attention is {attn.shape[-2]}x{attn.shape[-1]} but there are {len(tokens)} tokens")
    ids = word_ids(tokens)
    return merge_attention(np.asarray(attn, dtype=np.float64), ids, ids)


def _table(values: dict, sort_by: str = "score") -> pd.DataFrame:
    """{column: (N, h) array} -> one row per (layer, head), best first."""
    N, h = next(iter(values.values())).shape
    layer, head = np.divmod(np.arange(N * h), h)
    df = pd.DataFrame({"layer": layer, "head": head, **{k: np.asarray(v).reshape(-1) for k, v in values.items()}})
    return df.sort_values([sort_by, "layer", "head"], ascending=[False, True, True], ignore_index=True)


def dependency_scores(attn: np.ndarray, tokens: list[str], source: str, targets: list[str]) -> pd.DataFrame:
    """Every head's attention mass from the word `source` to the words `targets` (each a word or phrase).

    attn: (N, h, S, S) encoder self-attention. Columns: layer, head, one "→ target" per target, and
    score, their sum. Rows are sorted by score, best first.
    """
    merged = _word_maps(attn, tokens)                              # (N, h, W, W)
    rows = locate_words(tokens, source)
    per_target = {f"→ {t}": merged[..., rows, :][..., locate_words(tokens, t)].sum(-1).mean(-1) for t in targets}
    return _table({**per_target, "score": sum(per_target.values())})


def structure_scores(attn: np.ndarray, tokens: list[str]) -> pd.DataFrame:
    """Every head's attention to neighbouring words (Figure 5's score; see the module docstring).

    Columns: layer, head, score (mean over words of the mass on the previous + next word),
    "← previous", "→ next" (its two parts) and "mean distance" (in words). Best first.
    """
    merged = _word_maps(attn, tokens)
    real = [i for i, w in enumerate(merge_words(tokens)) if w not in SPECIALS]
    m = merged[..., real, :][..., real]                            # (N, h, W, W) without </s>
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

    def to_dict(self) -> dict:
        """JSON-ready, with layers and heads counted from 0 as in the arrays."""
        return {"figure": self.figure, "title": self.title, "sentence": self.sentence, "layer": self.layer,
                "heads": self.heads, "focus": self.focus, "paper_layer": PAPER_LAYER,
                "chance": round(self.chance, 4), "scores": self.scores.round(4).to_dict(orient="records")}


def _chance(score_fn, tokens: list[str]) -> float:
    """What score_fn gives a single head with uniform attention over the tokens."""
    S = len(tokens)
    return float(score_fn(np.full((1, 1, S, S), 1.0 / S), tokens).score.iloc[0])


def figure3(attn: np.ndarray, tokens: list[str], sentence: str = FIGURE3_SENTENCE) -> FigureHeads:
    """'making' → 'more difficult': the layer where the heads do it most (mean of its heads), all its heads ranked."""
    score = lambda a, t: dependency_scores(a, t, "making", ["more difficult"])
    scores = score(attn, tokens)
    layer = best_layer(scores, k=attn.shape[1])
    return FigureHeads(3, "Long-distance dependency: 'making … more difficult'", sentence, layer,
                       top_heads(scores, layer), "making", scores, _chance(score, tokens))


def figure4(attn: np.ndarray, tokens: list[str], sentence: str = FIGURE45_SENTENCE) -> FigureHeads:
    """'its' → 'Law' + 'application': the best two heads of the best layer for it."""
    score = lambda a, t: dependency_scores(a, t, "its", ["Law", "application"])
    scores = score(attn, tokens)
    layer = best_layer(scores, k=2)
    return FigureHeads(4, "Anaphora: 'its' refers to 'Law'", sentence, layer, top_heads(scores, layer, 2),
                       "its", scores, _chance(score, tokens))


def figure5(attn: np.ndarray, tokens: list[str], sentence: str = FIGURE45_SENTENCE) -> FigureHeads:
    """Attention to neighbouring words: the best two heads of the best layer for it."""
    scores = structure_scores(attn, tokens)
    layer = best_layer(scores, k=2)
    return FigureHeads(5, "Sentence structure: attention to neighbouring words", sentence, layer,
                       top_heads(scores, layer, 2), None, scores, _chance(structure_scores, tokens))


FIGURES = {3: (figure3, FIGURE3_SENTENCE), 4: (figure4, FIGURE45_SENTENCE), 5: (figure5, FIGURE45_SENTENCE)}
