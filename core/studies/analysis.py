"""What does each attention head do? Per-head scores over probe sentences, entropy and attention rollout.

Conventions. In a map A (..., Tq, Tk) rows are queries (who attends), columns are keys (who is
attended), and every row sums to 1. Layers and heads are 0-based here (the app shows them from 1).
A head's score on one sentence is a mean over its query rows; over a probe set, the mean over the
sentences where the score is defined. Rows that count: every row of the encoder; in the decoder's
self-attention every row but row 0 (<s>), which can only see itself and so makes no choice.

The scores (A = one head's map of one sentence, i, j = query, key positions in pieces):
  previous     mean_i A[i, i-1]   (rows with a previous token)      a "previous-token head" scores near 1
  next         mean_i A[i, i+1]   (encoder only: the decoder cannot see ahead)
  self         mean_i A[i, i]
  punctuation  mean_i sum_{j punctuation} A[i, j]   (sentences with a punctuation piece only)
  eos          mean_i A[i, </s>]  (encoder)  ┐ "resting" on a special token, a head's way of doing
  bos          mean_i A[i, <s>]   (decoder)  ┘ nothing (Clark et al. 2019)
  distance     mean_i sum_j A[i, j] |i - j|, in pieces: high for long-distance heads
  anaphora     mass from a pronoun to its antecedent (anaphora_mass), on the annotated set only
  entropy      mean_i H(A[i]) in bits, H(p) = -sum_j p_j log2 p_j: 0 = looks at one token, log2(Tk) = uniform
  entropy_norm mean_i H(A[i]) / log2(number of keys row i may see): 0..1, comparable across lengths
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from core.checkpoint.jsonl import read_jsonl
from core.tokenizer import is_punctuation, word_ids
from core.views import attention_view, sentence_only, to_words

PROBES = Path(__file__).parent / "probes"
SCORES = {   # name -> what the app says about it
    "previous": "attention to the previous token",
    "next": "attention to the next token (encoder only)",
    "self": "attention to the token itself",
    "punctuation": "attention to punctuation",
    "eos": "attention to </s>, the end of the source (resting)",
    "bos": "attention to <s>, the decoder's start token (resting)",
    "distance": "mean attended distance, in tokens (long-distance heads)",
    "anaphora": "attention from a pronoun to the noun it refers to",
    "entropy": "entropy of the attention, in bits (low: focused, high: spread out)",
    "entropy_norm": "entropy divided by its maximum, log2(number of keys): 0 focused … 1 uniform",
}
LOW_FIRST = {"entropy", "entropy_norm"}          # for these, the interesting heads are the lowest


def load_anaphora(path=None) -> list[dict]:
    """The annotated pronoun set: dicts with text, pronoun, pronoun_index, antecedent, antecedent_index
    (word indices)."""
    return read_jsonl(Path(path) if path else PROBES / "anaphora_en.jsonl")


def load_neutral(path=None) -> list[dict]:
    """News and parliament probe sentences with our own German translations: dicts with en, de."""
    return read_jsonl(Path(path) if path else PROBES / "neutral_en_de.jsonl")


# ---- scores of one sentence: attn is (..., Tq, Tk), e.g. (N, h, S, S); each returns (...) ----

def offset_mass(attn: np.ndarray, offset: int, first_query: int = 0) -> np.ndarray:
    """Mean over rows i >= first_query of attn[..., i, i + offset], over rows where that key exists."""
    Tq, Tk = attn.shape[-2:]
    i = np.arange(first_query, Tq)
    i = i[(i + offset >= 0) & (i + offset < Tk)]
    if len(i) == 0:
        return np.full(attn.shape[:-2], np.nan)
    return attn[..., i, i + offset].mean(-1)


def key_mass(attn: np.ndarray, keys: np.ndarray, first_query: int = 0) -> np.ndarray:
    """Mean over rows i >= first_query of the mass on the keys where the bool mask `keys` (Tk,) is True."""
    return attn[..., first_query:, :][..., np.asarray(keys, dtype=bool)].sum(-1).mean(-1)


def mean_distance(attn: np.ndarray, first_query: int = 0) -> np.ndarray:
    """Mean over rows of sum_j A[i, j] |i - j|: how far, in tokens, the attention reaches."""
    Tq, Tk = attn.shape[-2:]
    dist = np.abs(np.arange(Tq)[:, None] - np.arange(Tk)[None, :])          # (Tq, Tk)
    return (attn * dist)[..., first_query:, :].sum(-1).mean(-1)


def entropy(attn: np.ndarray, first_query: int = 0, normalised: bool = False, causal: bool = False) -> np.ndarray:
    """Mean over rows of the entropy in bits; normalised: each row's entropy over log2(its number of keys).

    A row may see Tk keys, or i + 1 when `causal` (decoder self-attention); rows with one key are skipped
    when normalising (their entropy is 0 of a maximum of 0). 0 log 0 counts as 0.
    """
    Tq, Tk = attn.shape[-2:]
    p = attn[..., first_query:, :].astype(np.float64)
    h = -(p * np.log2(np.where(p > 0, p, 1.0))).sum(-1)                      # (..., rows)
    if not normalised:
        return h.mean(-1)
    n_keys = np.arange(first_query, Tq) + 1 if causal else np.full(Tq - first_query, Tk)
    ok = n_keys > 1
    if not ok.any():
        return np.full(attn.shape[:-2], np.nan)
    return (h[..., ok] / np.log2(n_keys[ok])).mean(-1)


def word_pieces(pieces: list[str], w: int) -> list[int]:
    """Piece indices of word `w` (as word_ids counts words), without punctuation glued to it ("them.")."""
    words = word_ids(pieces)
    idx = [i for i, x in enumerate(words) if x == w]
    if not idx:
        raise ValueError(f"word {w} is not in a sentence of {max(words) + 1} words")
    return [i for i in idx if not is_punctuation(pieces[i])] or idx


def anaphora_mass(attn: np.ndarray, pieces: list[str], pronoun_index: int, antecedent_index: int) -> np.ndarray:
    """Word-level mass from a pronoun to its antecedent: sum over the antecedent's pieces, mean over the pronoun's.

    attn (..., S, S) is encoder self-attention over `pieces`; the indices count words as
    core.tokenizer.word_ids does (whitespace-separated words, </s> last). Punctuation glued to a
    word ("them.") is left out of it. A head spreading evenly would score (antecedent pieces) / S.
    """
    rows, cols = word_pieces(pieces, pronoun_index), word_pieces(pieces, antecedent_index)
    return attn[..., rows, :][..., cols].sum(-1).mean(-1)


def sentence_scores(attn: np.ndarray, pieces: list[str], decoder: bool = False) -> dict:
    """All positional scores of one sentence: attn (L, h, T, T) -> {score: (L, h)} (NaN where undefined)."""
    fq = 1 if decoder else 0
    punct = np.array([is_punctuation(p) for p in pieces])
    # resting keys: the decoder's start token is its first input ("<s>" ours, "<pad>" in Marian models)
    special = np.arange(len(pieces)) == 0 if decoder else np.array([p == "</s>" for p in pieces])
    nan = np.full(attn.shape[:-2], np.nan)
    return {
        "previous": offset_mass(attn, -1, fq),
        "next": nan if decoder else offset_mass(attn, 1, fq),
        "self": offset_mass(attn, 0, fq),
        "punctuation": key_mass(attn, punct, fq) if punct.any() else nan,
        "eos": nan if decoder else key_mass(attn, special, fq),
        "bos": key_mass(attn, special, fq) if decoder else nan,
        "distance": mean_distance(attn, fq),
        "entropy": entropy(attn, fq),
        "entropy_norm": entropy(attn, fq, normalised=True, causal=decoder),
    }


def rollout(attn: np.ndarray) -> np.ndarray:
    """Attention rollout (Abnar & Zuidema 2020): (N, h, S, S) encoder self-attention -> (N, S, S).

    Each layer's map, averaged over heads, gets the residual connection as an identity:
    A_hat = 0.5 mean_heads(A) + 0.5 I, rows renormalised; then R_l = A_hat_l @ R_{l-1}, R_0 = A_hat_0.
    R_l[i, j] estimates how much input token j flows into position i after layer l. Rows sum to 1.
    """
    S = attn.shape[-1]
    a_hat = 0.5 * attn.astype(np.float64).mean(1) + 0.5 * np.eye(S)      # (N, S, S)
    a_hat /= a_hat.sum(-1, keepdims=True)
    out, r = np.empty_like(a_hat), np.eye(S)
    for layer in range(a_hat.shape[0]):
        r = a_hat[layer] @ r
        out[layer] = r
    return out


# ---- the head finder: every head of a model over the probe sets ----

def _mean_over_sentences(per_sentence: list[dict]) -> dict:
    """[{score: (L, h)}] -> {score: (L, h)}, ignoring NaN (a score undefined for a sentence)."""
    out = {}
    for name in per_sentence[0]:
        stack = np.stack([d[name] for d in per_sentence])                       # (n, L, h)
        count = np.isfinite(stack).sum(0)
        total = np.where(np.isfinite(stack), stack, 0.0).sum(0)
        out[name] = np.where(count > 0, total / np.maximum(count, 1), np.nan)
    return out


def _table(kind: str, scores: dict) -> pd.DataFrame:
    L, h = next(iter(scores.values())).shape
    layer, head = np.divmod(np.arange(L * h), h)
    cols = {name: np.asarray(scores[name], dtype=float).reshape(-1) for name in SCORES}
    return pd.DataFrame({"attention": kind, "layer": layer, "head": head, **cols})


def head_scores(tm, neutral: list[dict] | None = None, anaphora: list[dict] | None = None,
                batch_size: int = 48) -> pd.DataFrame:
    """Every head's scores (see the module docstring): one row per (attention, layer, head).

    Encoder self-attention: all probe sentences (neutral + anaphora), anaphora on the annotated set.
    Decoder self-attention: teacher-forced on the neutral sentences' German translations.
    df.attrs["sentences"] says how many sentences each part used.
    """
    neutral = load_neutral() if neutral is None else neutral
    anaphora = load_anaphora() if anaphora is None else anaphora
    sources = [p["en"] for p in neutral] + [a["text"] for a in anaphora]
    targets = [p.get("de") for p in neutral] + [None] * len(anaphora)
    forced = [k for k, t in enumerate(targets) if t is not None]       # teacher-forced: decoder maps too
    rest = [k for k, t in enumerate(targets) if t is None]             # encoder maps only (half the work)
    results = dict(zip(forced, tm.attend_batch([sources[k] for k in forced], [targets[k] for k in forced],
                                               batch_size)))
    results.update(zip(rest, tm.attend_batch([sources[k] for k in rest], batch_size=batch_size, encoder_only=True)))
    enc, dec, ana = [], [], []
    L, h = tm.cfg.N, tm.cfg.h
    for k in range(len(sources)):
        r = sentence_only(results[k])                                  # the sentence's words: no prompt (T5)
        src_pieces, enc_attn = r.src_tokens, r.enc_self
        scores = sentence_scores(enc_attn, src_pieces)
        scores["anaphora"] = np.full((L, h), np.nan)
        if k >= len(neutral):
            a = anaphora[k - len(neutral)]
            if max(word_ids(src_pieces)) == len(a["text"].split()):   # words + </s>: indices line up
                scores["anaphora"] = anaphora_mass(enc_attn, src_pieces, a["pronoun_index"], a["antecedent_index"])
                ana.append(k)
        enc.append(scores)
        if r.dec_self is not None:
            d = sentence_scores(r.dec_self, r.tgt_tokens, decoder=True)
            d["anaphora"] = np.full(r.dec_self.shape[:2], np.nan)
            dec.append(d)
    parts = [_table("enc_self", _mean_over_sentences(enc))]
    if dec:
        parts.append(_table("dec_self", _mean_over_sentences(dec)))
    df = pd.concat(parts, ignore_index=True)
    df.attrs["sentences"] = {"enc_self": len(enc), "dec_self": len(dec), "anaphora": len(ana)}
    return df


def score_grid(table: pd.DataFrame, score: str, attention: str = "enc_self") -> np.ndarray:
    """One score of one attention kind as a (layers, heads) array, for a heatmap."""
    part = table[table.attention == attention]
    grid = np.full((part.layer.max() + 1, part["head"].max() + 1), np.nan)
    grid[part.layer.to_numpy(), part["head"].to_numpy()] = part[score].to_numpy()
    return grid


def rank_heads(table: pd.DataFrame, score: str, attention: str = "enc_self", top: int | None = None) -> pd.DataFrame:
    """The heads of one attention kind, most characteristic first: highest score first, lowest for entropy."""
    part = table[(table.attention == attention) & table[score].notna()]
    ranked = part.sort_values([score, "layer", "head"], ascending=[score in LOW_FIRST, True, True],
                              ignore_index=True)
    return ranked if top is None else ranked.head(top)


# ---- maps as the "What heads do" page shows them ----

def head_or_mean(maps: np.ndarray, layer: int, head: int | None = None) -> np.ndarray:
    """(N, h, R, C) -> (R, C): one head of one layer, or the mean of that layer's heads when head is None."""
    return maps[layer].mean(0) if head is None else maps[layer, head]


def _in_words(maps: np.ndarray, rows: list, cols: list, words: bool):
    """(maps, rows, cols), merged into words when `words` (core.views.to_words)."""
    return to_words(maps, rows, cols) if words else (maps, list(rows), list(cols))


def rollout_maps(result, layer: int, head: int | None = None, words: bool = False):
    """Encoder rollout through layers 0..layer beside that layer's raw attention (one head, or the mean of its
    heads when head is None): ((2, S, S) maps, source tokens), merged into words when `words`."""
    view = attention_view(result, "enc_self")                               # maps (N, h, S, S)
    maps = np.stack([rollout(view.maps)[layer], head_or_mean(view.maps, layer, head)])     # (2, S, S)
    maps, rows, _ = _in_words(maps, view.rows, view.cols, words)
    return maps, rows


def compared_maps(cmp, kind: str, layer: int, head: int | None = None, words: bool = False):
    """Model A's and model B's map of one kind, layer and head (None: the mean of the heads) of a
    core.studies.compare.Comparison: ((2, R, C) maps, row labels, column labels); words: merged into words
    (when the comparison is not word by word already)."""
    maps = np.stack([head_or_mean(m, layer, head) for m in cmp.maps[kind]])                # (2, R, C)
    return _in_words(maps, *cmp.labels[kind], words and cmp.level[kind] == "pieces")
