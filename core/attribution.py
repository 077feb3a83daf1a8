"""Why this word and not that one? Contrastive attribution at one step of a translation.

TranslationModel.contrast(text, prefix, chosen, other, method) asks, at the step after `prefix` (the target words
already written), how much each source word and each target word already written pushes the log-odds
log P(chosen) - log P(other) (contrastive explanations, Yin & Neubig 2022). A word of several pieces is scored as
score() scores it: its pieces' log-probabilities summed, teacher-forced. Scores are per word, merged as the maps
merge pieces (core.tokenizer.word_ids): a word's score is the sum of its pieces'. A positive score pushes towards
`chosen`, a negative one towards `other`. Start, end and language tokens get no word of their own: what a method
gives them (and the word's own earlier pieces) is Contrast.unassigned.

Methods (METHODS):
- "erasure": log-odds with the whole input minus log-odds with the word left out. A word is left out by deleting
  its pieces from the source (or from the words already written); the words after it close up, as if it had
  never been typed. Exact, the reference; one batched pass with each word left out once.
- "gradient": gradient x input on the token embeddings (Shrikumar et al. 2016): d(log-odds)/d(e_i) . e_i, the
  first-order guess at what setting a piece's embedding to zero would change. One forward and backward pass.
- "integrated": integrated gradients (Sundararajan et al. 2017) from a baseline whose word pieces have zero token
  embeddings (positions, start, end and language tokens kept), by Gauss-Legendre quadrature with `steps` points
  (Captum's default rule). Completeness: the scores add up to log-odds(input) - log-odds(baseline), up to the
  quadrature's error (Contrast.completeness_gap). A model that adds no positions to its embeddings and normalises
  them first (T5: relative positions, RMSNorm) reads every scaled embedding alike until it is zero: its baseline
  is a jump the integral cannot see, and completeness_gap shows how much of the change the scores miss.
- "alti_logit": ALTI-Logit (Ferrando et al. 2023, "Explaining How Transformers Use Context to Build Predictions"):
  each attention block's update at the step is split into what each position it reads sends (core.studies.
  contributions' vectors); each part's effect on the logit difference is read through the LayerNorms that follow
  (their scale fixed, as ALTI does) and the output projection, and handed to the input words through the ALTI+
  rollout of the position that sent it. Feed-forward outputs and biases are left out, as in the paper. For a
  word's later pieces the log-softmax is linearised (direction W[piece] - E_p[W]); for the first pieces the
  logit difference is the log-odds exactly.

The gradients are taken through forward hooks on the token embeddings that scale each piece's embedding by a
factor (1 for the input): d(log-odds)/d(factor) is gradient x input, and the factor's path from 0 to 1 is the
integrated gradients' path. The hooks act for the calling thread only, so a shared model serving other sessions
is never changed.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from .decoding_trace import forced_ids, spell
from .embedding_gradients import DEFAULT_STEPS, EmbeddingScale, check_method, path_points, word_logprobs
from .studies.alti_logit import logit_contributions
from .tokenizer import merge_words, word_ids
from .views import SPECIALS

METHODS = {"erasure": "leave one word out (its pieces deleted): the exact change, the reference",
           "gradient": "gradient x input on the token embeddings",
           "integrated": "integrated gradients from zero token embeddings",
           "alti_logit": "ALTI-Logit: attention blocks' logit contributions, rolled out to the input words"}
BATCH_ROWS = 32                 # sequences in one padded pass (the erasure's variants, the integrated steps)


@dataclass
class Question:
    """One contrast, validated: ids and which word each position belongs to.

    src_ids: [language token] + pieces + </s> (S); prefix_ids: [language token] + target pieces already written;
    chosen_ids, other_ids: the two words' pieces. src_word[p] / tgt_word[p]: the word of source position p / of
    prefix position p, or -1 for a start, end or language token.
    """
    src: str
    prefix: str
    chosen: str
    other: str
    src_ids: list
    prefix_ids: list
    chosen_ids: list
    other_ids: list
    src_words: list
    src_word: list
    tgt_words: list
    tgt_word: list

    @property
    def step(self) -> int:
        """The decoder row that writes the word's first piece (it reads <s> and the prefix)."""
        return len(self.prefix_ids)


@dataclass
class Contrast:
    """What pushed the model to `chosen` rather than `other` at one step, per word (positive: towards chosen).

    src_scores (W_src,), tgt_scores (W_tgt,): each source word's and each earlier target word's score, in nats of
    log-odds (alti_logit: logit units). log_odds: log P(chosen) - log P(other) with the whole input (natural log;
    logp_chosen, logp_other its parts). cross (N_dec, h, W_src): the step's cross-attention over the source words
    (a word gets the sum of its pieces), the attention the model had when it chose. unassigned: what the method
    gave to start, end and language tokens and to the word's own earlier pieces. baseline_log_odds (integrated
    only): the log-odds at the baseline, so that completeness reads sum(scores) + unassigned = log_odds -
    baseline_log_odds.
    """
    src: str
    prefix: str
    chosen: str
    other: str
    method: str
    src_words: list
    src_scores: np.ndarray
    tgt_words: list
    tgt_scores: np.ndarray
    log_odds: float
    logp_chosen: float
    logp_other: float
    cross: np.ndarray
    unassigned: float = 0.0
    baseline_log_odds: float | None = None
    steps: int | None = None
    notes: list = field(default_factory=list)

    @property
    def completeness_gap(self) -> float | None:
        """|sum of all scores - (log-odds - baseline log-odds)| for integrated gradients, else None."""
        if self.baseline_log_odds is None:
            return None
        total = float(self.src_scores.sum() + self.tgt_scores.sum()) + self.unassigned
        return abs(total - (self.log_odds - self.baseline_log_odds))

    def ranking(self) -> list[int]:
        """Source words from the one that pushes most towards `chosen` to the one that pushes most towards other."""
        return [int(i) for i in np.argsort(-self.src_scores, kind="stable")]


# --------------------------------------------------------------------------- the question

def question(tm, text: str, prefix, chosen, other) -> Question:
    """Validate a contrast (prefix: text, target ids or None; chosen, other: text or target ids); ValueError,
    worded for a student, for anything that cannot be asked."""
    src_ids, src_text, _, truncated = tm._source_ids(text)
    if truncated:
        raise ValueError(f"This sentence is too long to explain word by word: a contrast reads at most "
                         f"{tm.max_source_tokens - 1} pieces of source (about {len(src_text)} characters). "
                         "Try a shorter sentence.")
    if prefix is not None and not isinstance(prefix, (str, list, tuple)):
        raise ValueError(f"Give the words already written as text, not {type(prefix).__name__}.")
    prefix_ids = forced_ids(tm, prefix)
    (chosen_ids, chosen), (other_ids, other) = _word(tm, chosen, "chosen"), _word(tm, other, "other")
    longest = len(prefix_ids) + max(len(chosen_ids), len(other_ids))
    if longest > tm.cfg.max_len:
        raise ValueError(f"The words already written are {len(prefix_ids)} pieces long: with the word after them "
                         f"that is {longest} pieces, and this model reads at most {tm.cfg.max_len}. "
                         "Shorten the words already written.")
    tok = tm.tokenizer
    src_pieces = tok.pieces(src_ids, "src")
    src_word, src_words = _words(src_pieces, len(tm.src_prefix))
    tgt_pieces = tok.pieces([tm.cfg.bos_id] + prefix_ids, "tgt")              # as decoder maps label columns
    tgt_word, tgt_words = _words(tgt_pieces, 1 + len(tm.tgt_prefix))
    shown = tm.text(prefix_ids) if prefix_ids else ""
    return Question(src_text, shown, chosen, other, src_ids,
                    prefix_ids, chosen_ids, other_ids, src_words, src_word, tgt_words, tgt_word[1:])


def _word(tm, word, name: str) -> tuple[list, str]:
    """A word to contrast, as text or as target ids -> (its ids, its text); ValueError in words."""
    if isinstance(word, str):
        if not word.strip():
            raise ValueError(f"Give the {name} word as text: '{word}' is empty.")
        return spell(tm, word), word.strip()
    if isinstance(word, (list, tuple)) and word and all(isinstance(i, (int, np.integer)) for i in word):
        ids = [int(i) for i in word]
        if any(i in (tm.cfg.bos_id, tm.cfg.eos_id, tm.cfg.pad_id) or not 0 <= i < tm.cfg.vocab_size for i in ids):
            raise ValueError(f"The {name} word must be pieces of the model's vocabulary, not start, end or padding "
                             "tokens.")
        return ids, tm.tokenizer.decode(ids, "tgt").strip() or "".join(tm.tokenizer.pieces(ids, "tgt"))
    raise ValueError(f"Give the {name} word as text, not {type(word).__name__}.")


def _words(pieces: list, skip: int) -> tuple[list, list]:
    """(word index of each piece, -1 for specials and the first `skip` pieces; the words' labels)."""
    ids = word_ids(pieces)
    labels = merge_words(pieces, ids)
    real = sorted({w for p, w in enumerate(ids) if p >= skip and pieces[p] not in SPECIALS})
    index = {w: k for k, w in enumerate(real)}
    return [index.get(w, -1) if p >= skip else -1 for p, w in enumerate(ids)], [labels[w] for w in real]


def _to_words(piece_scores: np.ndarray, owner: list, n: int) -> tuple[np.ndarray, float]:
    """Piece scores -> (per-word sums (n,), what fell on no word)."""
    out = np.zeros(n, dtype=np.float64)
    rest = 0.0
    for s, w in zip(piece_scores, owner):
        if w >= 0:
            out[w] += s
        else:
            rest += float(s)
    return out, rest


# --------------------------------------------------------------------------- batched log-odds

def _sequences(q: Question, src_ids: list, prefix_ids: list):
    """The two sequences of one input: (source ids, decoder input after the start token, the word's pieces, the row
    that writes its first piece), for chosen, then for other."""
    return [(src_ids, prefix_ids + word[:-1], word, len(prefix_ids)) for word in (q.chosen_ids, q.other_ids)]


def _padded(tm, rows: list) -> tuple[torch.Tensor, torch.Tensor]:
    """(src (B, S), decoder inputs (B, T)) padded, the start token put in."""
    src = tm._batch([r[0] for r in rows])
    dec = tm._batch([[tm.cfg.bos_id] + r[1] for r in rows])
    return src, dec


def _word_logprobs(logits: torch.Tensor, rows: list) -> torch.Tensor:
    """(B, T, V) logits -> (B,) log P of each row's word: its pieces' log-probabilities summed."""
    return word_logprobs(logits, [(word, first) for _, _, word, first in rows])


@torch.no_grad()
def log_odds_of(tm, q: Question, variants: list[tuple[list, list]]) -> np.ndarray:
    """log P(chosen) - log P(other) for each (source ids, prefix ids) variant, in padded batches: (len(variants),)."""
    rows = [r for src, prefix in variants for r in _sequences(q, src, prefix)]
    lps = []
    for start in range(0, len(rows), BATCH_ROWS):
        chunk = rows[start: start + BATCH_ROWS]
        lps.append(_word_logprobs(tm.model(*_padded(tm, chunk)), chunk))
    lp = torch.cat(lps).double().cpu().numpy()
    return lp[0::2] - lp[1::2]


def without(q: Question, src_words=(), tgt_words=()) -> tuple[list, list]:
    """(source ids, prefix ids) with the pieces of the given source and target words deleted."""
    src = [i for i, w in zip(q.src_ids, q.src_word) if w < 0 or w not in src_words]
    prefix = [i for i, w in zip(q.prefix_ids, q.tgt_word) if w < 0 or w not in tgt_words]
    return src, prefix


@torch.no_grad()
def _whole(tm, q: Question) -> tuple[float, float, np.ndarray]:
    """(log P(chosen), log P(other), the step's cross-attention over source words (N_dec, h, W_src))."""
    rows = _sequences(q, q.src_ids, q.prefix_ids)
    logits, attns = tm.model(*_padded(tm, rows), need_weights=True)
    lp = _word_logprobs(logits, rows).double().cpu().numpy()
    S = len(q.src_ids)
    cross = torch.stack([c[0, :, q.step, :S] for c in attns.cross]).float().cpu().numpy()     # (N_dec, h, S)
    onehot = np.zeros((S, len(q.src_words)), dtype=np.float32)
    for p, w in enumerate(q.src_word):
        if w >= 0:
            onehot[p, w] = 1.0
    return float(lp[0]), float(lp[1]), cross @ onehot


# --------------------------------------------------------------------------- erasure

def erasure(tm, q: Question) -> tuple[np.ndarray, np.ndarray]:
    """Each word's erasure score, (source words, target words): log-odds minus log-odds without it (pieces
    deleted)."""
    variants = [(q.src_ids, q.prefix_ids)]
    variants += [without(q, src_words={w}) for w in range(len(q.src_words))]
    variants += [without(q, tgt_words={w}) for w in range(len(q.tgt_words))]
    lo = log_odds_of(tm, q, variants)
    n = len(q.src_words)
    return lo[0] - lo[1: 1 + n], lo[0] - lo[1 + n:]


# --------------------------------------------------------------------------- gradients

class EmbeddingFactors(EmbeddingScale):
    """EmbeddingScale on a translation's two sides: each source embedding times src_factor (B, S), each decoder
    input's times tgt_factor (B, T); `reached` says which sides the hooks saw."""

    def __init__(self, model, src, tgt, src_factor, tgt_factor):
        super().__init__(model, [(src, src_factor, "src"), (tgt, tgt_factor, "tgt")])


def _factor_grads(tm, q: Question, alphas: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray, list]:
    """sum_k weights[k] * d(log-odds)/d(factor) at factors alphas[k] on every word piece (1 on the others):
    (source positions (S,), prefix positions (P,), the log-odds at each alpha)."""
    src_w = torch.tensor([w >= 0 for w in q.src_word], device=tm.device)
    tgt_w = torch.tensor([False] + [w >= 0 for w in q.tgt_word], device=tm.device)     # <s> first
    g_src = np.zeros(len(q.src_ids))
    g_tgt = np.zeros(len(q.prefix_ids))
    odds = []
    pair = _sequences(q, q.src_ids, q.prefix_ids)
    per = max(1, BATCH_ROWS // 2)
    for start in range(0, len(alphas), per):
        a = torch.tensor(alphas[start: start + per], dtype=torch.float32, device=tm.device)
        wts = torch.tensor(weights[start: start + per], dtype=torch.float64, device=tm.device)
        rows = pair * len(a)
        src, dec = _padded(tm, rows)
        T = dec.shape[1]
        a_rows = a.repeat_interleave(2)[:, None]                                        # (B, 1)
        f_src = torch.where(src_w[None, :], a_rows, 1.0).requires_grad_(True)            # (B, S)
        tgt_mask = torch.zeros(T, dtype=torch.bool, device=tm.device)
        tgt_mask[: len(tgt_w)] = tgt_w
        f_tgt = torch.where(tgt_mask[None, :], a_rows, 1.0).requires_grad_(True)         # (B, T)
        with torch.enable_grad(), EmbeddingFactors(tm.model, src, dec, f_src, f_tgt) as hooks:
            lp = _word_logprobs(tm.model(src, dec), rows).double()                       # (B,)
            if hooks.reached != {"src", "tgt"}:
                raise ValueError("This model's token embeddings could not be reached, so gradients cannot be "
                                 "taken for it: use method='erasure'.")
            lo = lp[0::2] - lp[1::2]                                                     # (n,)
            gs, gt = torch.autograd.grad((lo * wts).sum(), (f_src, f_tgt))
        g_src += gs.double().sum(0).cpu().numpy()
        g_tgt += gt[:, 1: 1 + len(q.prefix_ids)].double().sum(0).cpu().numpy()
        odds += lo.detach().cpu().tolist()
    return g_src, g_tgt, odds


def gradient_x_input(tm, q: Question) -> tuple[np.ndarray, np.ndarray, dict]:
    """d(log-odds)/d(factor) at factor 1: the gradient times the token embedding, per source and prefix piece."""
    g_src, g_tgt, _ = _factor_grads(tm, q, np.ones(1), np.ones(1))
    return g_src, g_tgt, {}


def integrated_gradients(tm, q: Question, steps: int) -> tuple[np.ndarray, np.ndarray, dict]:
    """Integrated gradients from zero word embeddings, Gauss-Legendre with `steps` points on [0, 1]."""
    alphas, weights = path_points(steps)                                                  # + the baseline
    g_src, g_tgt, odds = _factor_grads(tm, q, alphas, weights)
    # start, end and language tokens stay at 1 along the path: they take no part in the integral
    g_src[np.asarray(q.src_word) < 0], g_tgt[np.asarray(q.tgt_word, dtype=int) < 0] = 0.0, 0.0
    return g_src, g_tgt, {"baseline_log_odds": float(odds[-1])}


def alti_logit(tm, q: Question) -> tuple[np.ndarray, np.ndarray, dict]:
    """ALTI-Logit of chosen's pieces minus other's, per source position and prefix position; the start token's
    and the word's own pieces' share is unassigned."""
    src, tgt, rest = np.zeros(len(q.src_ids)), np.zeros(len(q.prefix_ids)), 0.0
    for sign, row in zip((1.0, -1.0), _sequences(q, q.src_ids, q.prefix_ids)):
        s, d = logit_contributions(tm.model, *_padded(tm, [row]), row[2], row[3])
        P = len(q.prefix_ids)
        src += sign * s
        tgt += sign * d[1: 1 + P]
        rest += sign * float(d[0] + d[1 + P:].sum())
    return src, tgt, {"unassigned": rest}


# --------------------------------------------------------------------------- the entry point

def contrast(tm, text: str, prefix, chosen, other, method: str = "erasure",
             steps: int = DEFAULT_STEPS) -> Contrast:
    """TranslationModel.contrast: see the module's docstring."""
    check_method(method, steps, METHODS)
    q = question(tm, text, prefix, chosen, other)
    lp_c, lp_o, cross = _whole(tm, q)
    extra = {}
    if q.chosen_ids == q.other_ids:          # the same pieces: nothing can push one over the other
        if method == "integrated":
            extra = {"baseline_log_odds": 0.0}
        src_s, tgt_s, rest = np.zeros(len(q.src_words)), np.zeros(len(q.tgt_words)), 0.0
    elif method == "erasure":
        (src_s, tgt_s), rest = erasure(tm, q), 0.0
    else:
        per_piece = {"gradient": gradient_x_input, "alti_logit": alti_logit,
                     "integrated": lambda tm, q: integrated_gradients(tm, q, steps)}[method]
        src, tgt, extra = per_piece(tm, q)
        src_s, r1 = _to_words(src, q.src_word, len(q.src_words))
        tgt_s, r2 = _to_words(tgt, q.tgt_word, len(q.tgt_words))
        rest = r1 + r2 + extra.pop("unassigned", 0.0)
    return Contrast(q.src, q.prefix, q.chosen, q.other, method, q.src_words, np.asarray(src_s, dtype=np.float64),
                    q.tgt_words, np.asarray(tgt_s, dtype=np.float64), lp_c - lp_o, lp_c, lp_o, cross,
                    float(rest), steps=steps if method == "integrated" else None, **extra)
