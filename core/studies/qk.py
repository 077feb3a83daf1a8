"""A global view of a head: its queries and keys over many sentences, embedded jointly in 2-D.

After AttentionViz (Yeh et al., IEEE VIS 2023): every query and every key of one head, over a few hundred
sentences, becomes one point of one picture. A head that looks one position back draws queries and keys as
two lines ordered by position, side by side; a head that matches words draws pairs of clusters.

The vectors are each head's q = x W^Q and k = x W^K, split into heads (TranslationModel.attend_batch with
vectors=True), from the same forward pass that gives the maps. Rows are queries, columns keys (core.views).
Pure numpy (and scikit-learn for t-SNE): no Streamlit here.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.optimize import brentq
from threadpoolctl import threadpool_limits

from core.checkpoint.card import Card, as_card
from core.checkpoint.jsonl import read_jsonl
from core.tokenizer import WORD_START, display_pieces
from core.views import SPECIALS, check_kind, side_tokens

SAMPLE_FILE = "qk_sample.jsonl"        # shipped in a checkpoint folder: the sentences of this view
SAMPLE_SIZE = 200
PROJECTIONS = {"pca": "PCA", "tsne": "t-SNE"}
# t-SNE (Barnes-Hut, scikit-learn) of 3,000 points took 7 minutes on this project's busy 2-core machine:
# the page gives it the first sentences only, up to this many queries + keys
TSNE_MAX_POINTS = 2000


# ---- the sentences ----

def read_sample(path, n: int = SAMPLE_SIZE) -> tuple[list[dict], str]:
    """A qk_sample.jsonl -> ([{"src", "tgt"}], what it is). Its first line may describe it ({"sample": ...})."""
    pairs, about = [], ""
    for row in read_jsonl(path):
        row = row if isinstance(row, dict) else {}
        if isinstance(row.get("src"), str) and row["src"].strip():
            tgt = row.get("tgt")
            pairs.append({"src": row["src"], "tgt": tgt if isinstance(tgt, str) and tgt.strip() else None})
        elif isinstance(row.get("sample"), str):
            about = row["sample"]
    return pairs[:n], about


def read_corpus(folder, split: str = "valid", n: int = SAMPLE_SIZE) -> list[dict]:
    """The first n pairs of a corpus folder's {split}.en / {split}.de (line i translates line i)."""
    folder = Path(folder)
    with open(folder / f"{split}.en", encoding="utf-8") as en, open(folder / f"{split}.de", encoding="utf-8") as de:
        pairs = [{"src": s.strip(), "tgt": t.strip() or None} for s, t in zip(en, de) if s.strip()]
    return pairs[:n]


def checkpoint_sample(folder, card: Card | dict | None, n: int = SAMPLE_SIZE) -> tuple[list[dict], str]:
    """The sentences of this view for a checkpoint: its shipped qk_sample.jsonl, else the dev split of the
    corpus its card names (when that folder is on this machine), else ([], "")."""
    if folder is not None and (Path(folder) / SAMPLE_FILE).exists():
        try:
            pairs, about = read_sample(Path(folder) / SAMPLE_FILE, n)
            if pairs:
                return pairs, about or f"{len(pairs)} sentences shipped with the checkpoint"
        except (OSError, ValueError):
            pass                                  # an unreadable sample: try the corpus
    corpus = as_card(card).corpus
    if corpus is not None and (corpus / "valid.en").exists():
        try:
            return read_corpus(corpus, "valid", n), f"the first {n} dev sentences of {corpus}"
        except (OSError, UnicodeDecodeError):
            pass
    return [], ""


# ---- the points ----

@dataclass
class HeadPoints:
    """One head's queries, then its keys, as points: vectors (P, d_k) and, per point, its sentence, position
    (0-based), token and the token in its sentence (sentence_contexts). The first n_queries points are queries."""
    vectors: np.ndarray
    n_queries: int
    sentence: np.ndarray
    position: np.ndarray
    tokens: list
    context: list

    @property
    def queries(self) -> np.ndarray:
        return self.vectors[: self.n_queries]

    @property
    def keys(self) -> np.ndarray:
        return self.vectors[self.n_queries:]

    @property
    def is_query(self) -> np.ndarray:
        return np.arange(len(self.vectors)) < self.n_queries

    @property
    def role(self) -> np.ndarray:
        return np.where(self.is_query, "query", "key")


@dataclass
class QKSet:
    """One kind of attention's queries and keys over many sentences, every layer and head.

    q (N, h, P_q, d_k) and k (N, h, P_k, d_k): the rows (queries) and columns (keys) of all sentences one after
    another; q_sentence, q_position (P_q,) and k_sentence, k_position (P_k,) say where each came from.
    rows[i], cols[i]: sentence i's row and column tokens (core.views.side_tokens) as a person reads them
    (core.tokenizer.display_pieces: byte pieces shown as characters); q_context (P_q,), k_context (P_k,):
    each point's token in its sentence (sentence_contexts); pairs[i]: sentence i's texts.
    """
    kind: str
    q: np.ndarray
    k: np.ndarray
    q_sentence: np.ndarray
    q_position: np.ndarray
    k_sentence: np.ndarray
    k_position: np.ndarray
    rows: list
    cols: list
    q_context: list
    k_context: list
    pairs: list

    @property
    def layers(self) -> int:
        return self.q.shape[0]

    @property
    def heads(self) -> int:
        return self.q.shape[1]

    def first_sentences(self, max_points: int) -> QKSet:
        """The set cut to its first sentences, as many as keep queries + keys within max_points (at least one)."""
        per_sentence = np.bincount(self.q_sentence, minlength=len(self.pairs)) \
            + np.bincount(self.k_sentence, minlength=len(self.pairs))
        n = max(1, int(np.searchsorted(np.cumsum(per_sentence), max_points, side="right")))
        if n >= len(self.pairs):
            return self
        qi, ki = np.flatnonzero(self.q_sentence < n), np.flatnonzero(self.k_sentence < n)
        return QKSet(self.kind, self.q[:, :, qi], self.k[:, :, ki], self.q_sentence[qi], self.q_position[qi],
                     self.k_sentence[ki], self.k_position[ki], self.rows[:n], self.cols[:n],
                     [self.q_context[i] for i in qi], [self.k_context[i] for i in ki], self.pairs[:n])

    def head(self, layer: int, head: int, specials: bool = True) -> HeadPoints:
        """The queries and keys of one head (counted from 0) as float32 points; specials=False leaves out
        <s>, </s> and <pad>."""
        q_tok = [self.rows[s][p] for s, p in zip(self.q_sentence, self.q_position)]
        k_tok = [self.cols[s][p] for s, p in zip(self.k_sentence, self.k_position)]
        qi, ki = np.arange(len(q_tok)), np.arange(len(k_tok))
        if not specials:
            qi = np.array([i for i in qi if q_tok[i] not in SPECIALS], dtype=int)
            ki = np.array([i for i in ki if k_tok[i] not in SPECIALS], dtype=int)
        vectors = np.concatenate([self.q[layer, head, qi], self.k[layer, head, ki]]).astype(np.float32)
        return HeadPoints(vectors, len(qi), np.concatenate([self.q_sentence[qi], self.k_sentence[ki]]),
                          np.concatenate([self.q_position[qi], self.k_position[ki]]),
                          [q_tok[i] for i in qi] + [k_tok[i] for i in ki],
                          [self.q_context[i] for i in qi] + [self.k_context[i] for i in ki])


def _labelled(tokens: list, memo: dict) -> tuple[list, list]:
    """(tokens as a person reads them, each in its sentence): worked out once per distinct token list."""
    key = tuple(tokens)
    if key not in memo:
        shown = display_pieces(list(tokens))
        memo[key] = (shown, sentence_contexts(shown))
    return memo[key]


def gather(results: list, kind: str, pairs: list | None = None, dtype=np.float16, memo: dict | None = None) -> QKSet:
    """The queries and keys of one kind over AttendResults made with vectors=True, in one QKSet.

    dtype: float16 by default: a picture needs no more, and it halves what a server keeps in memory.
    memo: a dict shared by calls over the same results, so that each sentence's labels are worked out once
    (the source labels the rows of encoder self-attention, its columns, and the columns of cross-attention).
    """
    check_kind(kind)
    memo = {} if memo is None else memo
    qs, ks, rows, cols, where_q, where_k, q_context, k_context = [], [], [], [], [], [], [], []
    for i, r in enumerate(results):
        if not r.vectors or kind not in r.vectors:
            raise ValueError(f"sentence {i + 1} has no {kind} query and key vectors: attend with vectors=True")
        q, k = r.vectors[kind]                                   # (N, h, rows, d_k), (N, h, cols, d_k)
        row_tokens, col_tokens = side_tokens(r, kind)
        if q.shape[2] != len(row_tokens) or k.shape[2] != len(col_tokens):
            raise ValueError(f"sentence {i + 1}: {q.shape[2]} queries and {k.shape[2]} keys for "
                             f"{len(row_tokens)} row and {len(col_tokens)} column tokens")
        qs.append(q.astype(dtype))
        ks.append(k.astype(dtype))
        (row_shown, row_context), (col_shown, col_context) = _labelled(row_tokens, memo), _labelled(col_tokens, memo)
        rows.append(row_shown)                           # once per sentence here, not once per point later
        cols.append(col_shown)
        q_context += row_context
        k_context += col_context
        where_q.append(np.stack([np.full(q.shape[2], i), np.arange(q.shape[2])]))
        where_k.append(np.stack([np.full(k.shape[2], i), np.arange(k.shape[2])]))
    if not qs:
        raise ValueError("no sentences to gather queries and keys from")
    wq, wk = np.concatenate(where_q, 1), np.concatenate(where_k, 1)
    pairs = pairs if pairs is not None else [{"src": r.src, "tgt": r.tgt} for r in results]
    return QKSet(kind, np.concatenate(qs, 2), np.concatenate(ks, 2), wq[0], wq[1], wk[0], wk[1], rows, cols,
                 q_context, k_context, list(pairs))


def collect(model, pairs: list[dict], progress=None, batch_size: int = 48) -> dict[str, QKSet]:
    """Run the model once over [{"src", "tgt"}] pairs (tgt None: its own greedy translation) and gather the
    queries and keys of every kind: {kind: QKSet}. progress(done, total) is called after each batch."""
    results = model.attend_batch([p["src"] for p in pairs], [p.get("tgt") for p in pairs], batch_size=batch_size,
                                 vectors=True, progress=progress)
    used = [{"src": p["src"], "tgt": p.get("tgt"), "translation": r.tgt} for p, r in zip(pairs, results)]
    memo = {}
    return {kind: gather(results, kind, used, memo=memo) for kind in ("enc_self", "dec_self", "cross")}


# ---- centring (as in AttentionViz) ----

def _key_scale(mu_q: np.ndarray, spread: np.ndarray, target: float) -> float:
    """s > 0 with mean_i |mu_q + s spread_i| = target (solved numerically; 1 when the keys do not spread).

    The left side is convex in s, at most target at s = 0 (|mean q| <= mean |q|) and grows without bound,
    so exactly one s > 0 solves it."""
    def gap(s):
        return float(np.linalg.norm(mu_q + s * spread, axis=1).mean()) - target
    if not np.any(spread) or gap(0.0) >= 0:
        return 1.0
    hi = 1.0
    while gap(hi) < 0:
        hi *= 2.0
    return float(brentq(gap, 0.0, hi, xtol=1e-12, rtol=1e-10))


def normalise(points: HeadPoints) -> tuple[HeadPoints, float]:
    """Keys moved so that their centroid is the queries' centroid, then scaled about it so that keys and queries
    have the same mean norm: k' = mu_q + s (k - mu_k). Returns the new points and s.

    Why this changes no softmax ranking. A query q scores key k by q.k / sqrt(d_k), and softmax over the keys
    of one row only sees differences between scores. k' = s k + c with c = mu_q - s mu_k the same for every
    key, so q.k' = s (q.k) + q.c: q.c is one constant for all keys of the row (it cancels in the row's
    softmax), and s > 0 multiplies every score of the row by the same positive factor. The order of the keys
    in every row, and so which key a query prefers, is unchanged. Honestly: the scale does change how sharp
    the softmax would be (like a temperature), so the picture keeps rankings, not exact weights. The model's
    maps are never recomputed from these vectors.

    Why do it. Queries and keys come from different projections and can sit in different corners of the
    space at different scales; a joint picture of them would then show two far-apart clouds and nothing
    about which query meets which key. Scaling queries by c and keys by 1/c instead would keep every score
    exactly, but would pull the two centroids apart again; this keeps both conditions exactly.
    """
    q = points.queries.astype(np.float64)
    k = points.keys.astype(np.float64)
    if not len(q) or not len(k):
        return points, 1.0
    mu_q = q.mean(0)
    spread = k - k.mean(0)                                   # (P_k, d_k) keys around their centroid
    s = _key_scale(mu_q, spread, float(np.linalg.norm(q, axis=1).mean()))
    vectors = np.concatenate([q, mu_q + s * spread]).astype(np.float32)
    return HeadPoints(vectors, points.n_queries, points.sentence, points.position, points.tokens,
                      points.context), s


# ---- projection to 2-D ----

def pca_2d(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Points (P, d) -> their coordinates on the two principal axes (P, 2) and the share of the variance
    each axis keeps (2,). Signs are fixed (each axis's largest loading positive) so that a redraw never flips."""
    x = np.asarray(x, dtype=np.float64)
    P, d = x.shape
    out, kept = np.zeros((P, 2)), np.zeros(2)
    if P < 2 or d == 0:
        return out, kept
    xc = x - x.mean(0)
    # the axes are the top eigenvectors of the (d, d) scatter matrix, a small problem whatever P is. One BLAS
    # thread: on a machine whose cores are busy, OpenBLAS's threads spin-wait for each other (measured here:
    # an SVD of 6,000 x 32 points took 3-8 s on its default threads, 0.2 s on one).
    n = min(2, d)
    with threadpool_limits(1, user_api="blas"):
        var, vecs = np.linalg.eigh(xc.T @ xc)                # ascending eigenvalues, vecs (d, d)
        axes = vecs[:, ::-1][:, :n].T                        # (n, d) the largest first
        axes = axes * np.sign(axes[np.arange(n), np.abs(axes).argmax(1)])[:, None]
        out[:, :n] = xc @ axes.T
    var = np.clip(var[::-1], 0.0, None)
    total = float(var.sum())
    kept[:n] = var[:n] / total if total > 0 else 0.0
    return out, kept


def tsne_2d(x: np.ndarray, seed: int = 0) -> np.ndarray:
    """Points (P, d) -> t-SNE coordinates (P, 2) (scikit-learn, started from PCA, fixed seed)."""
    from sklearn.manifold import TSNE                        # imported here: a second or two at first use
    x = np.asarray(x, dtype=np.float32)
    if len(x) < 6:
        raise ValueError(f"t-SNE needs at least 6 points, and this head has {len(x)}: use PCA.")
    perplexity = float(min(30.0, (len(x) - 1) / 3))
    # one thread, as in pca_2d: on busy cores OpenMP's spinning threads made 60 points take minutes, not seconds
    with threadpool_limits(1):
        return TSNE(n_components=2, perplexity=perplexity, init="pca", random_state=seed,
                    n_jobs=1).fit_transform(x)


def project(points: HeadPoints, method: str = "pca", seed: int = 0) -> tuple[np.ndarray, np.ndarray | None]:
    """Joint 2-D coordinates (P, 2) of a head's (normalised) queries and keys, and for PCA the variance kept."""
    if method == "pca":
        return pca_2d(points.vectors)
    if method == "tsne":
        return tsne_2d(points.vectors, seed), None
    raise ValueError(f"unknown projection {method!r}; choose one of {list(PROJECTIONS)}")


def head_embedding(qk: QKSet, layer: int, head: int, method: str = "pca", specials: bool = True):
    """One head's points, centred (normalise), and their 2-D coordinates: (HeadPoints, coords (P, 2), kept)."""
    points, _ = normalise(qk.head(layer, head, specials))
    coords, kept = project(points, method)
    return points, coords, kept


def layer_embeddings(qk: QKSet, layer: int, method: str = "pca", specials: bool = True) -> list[tuple]:
    """Small multiples: head_embedding of every head of one layer, in head order."""
    return [head_embedding(qk, layer, head, method, specials) for head in range(qk.heads)]


# ---- words for people ----

def sentence_contexts(tokens: list, width: int = 8) -> list[str]:
    """Every token of a sentence shown in its sentence, bracketed: for '▁the ▁cat ▁sat', '[the] cat sat',
    'the [cat] sat', 'the cat [sat]'. tokens as QKSet keeps them (display_pieces). Only `width` tokens each
    side, marked '…', so that thousands of hover texts stay small."""
    # (space before, text) of each piece: "▁" starts a word; the specials stand apart
    parts = [(" " if t.startswith(WORD_START) or t in SPECIALS else "", t[1:] if t.startswith(WORD_START) else t)
             for t in tokens]
    out, n = [], len(tokens)
    for i, (space, text) in enumerate(parts):
        lo, hi = max(0, i - width), min(n, i + width + 1)
        shown = "".join(a + b for a, b in parts[lo:i]) + f"{space}[{text or WORD_START}]" \
            + "".join(a + b for a, b in parts[i + 1:hi])
        out.append(("… " if lo > 0 else "") + shown.strip() + (" …" if hi < n else ""))
    return out
