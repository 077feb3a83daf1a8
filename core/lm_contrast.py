"""Why this token and not that one? Contrastive attribution of a language model's next token.

lm_contrast(lm, prompt, chosen, other, method) asks how much each prompt token pushes the log-odds
log P(chosen) - log P(other) at the position after the prompt (contrastive explanations, Yin & Neubig 2022), as
core.attribution asks it of a translation. A word of several tokens is scored by its tokens' log-probabilities
summed, teacher-forced. A positive score pushes towards `chosen`, a negative one towards `other`. The family's first
token (Llama's <|begin_of_text|>) gets no score of its own: what a method gives it is LMContrast.unassigned.

Methods (METHODS):
- "erasure": log-odds with the whole prompt minus log-odds with the token deleted (the tokens after it close up).
  Exact, the reference; one batched pass with each token left out once.
- "gradient": gradient x input on the token embeddings: d(log-odds)/d(e_i) . e_i (core.embedding_gradients).
- "integrated": integrated gradients from zero token embeddings (positions and the first token kept), by
  Gauss-Legendre quadrature: the scores add up to log_odds - baseline_log_odds up to the quadrature's error
  (completeness_gap). A model with rotary positions and RMSNorm (Llama) reads a scaled embedding almost as the
  embedding itself until it is zero: there the baseline is a jump the integral cannot see, and the gap shows it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from .embedding_gradients import DEFAULT_STEPS, EmbeddingScale, check_method, path_points, word_logprobs
from .lm_writing import prompt_ids

METHODS = {"erasure": "leave one token out (deleted): the exact change, the reference",
           "gradient": "gradient x input on the token embeddings",
           "integrated": "integrated gradients from zero token embeddings"}
BATCH_ROWS = 32


@dataclass
class LMContrast:
    """What pushed the model to `chosen` rather than `other` after a prompt, per prompt token (positive: towards
    chosen). tokens (W,): the prompt's pieces that get a score, positions (W,): where they are in the prompt;
    scores (W,): in nats of log-odds. log_odds: log P(chosen) - log P(other) after the whole prompt (natural log;
    logp_chosen, logp_other its parts). attention (N, h, W): the self-attention of the prompt's last position (the
    one that predicts) over those tokens. baseline_log_odds (integrated only): the log-odds at the baseline."""
    prompt: str
    chosen: str
    other: str
    method: str
    tokens: list
    positions: list
    scores: np.ndarray
    log_odds: float
    logp_chosen: float
    logp_other: float
    attention: np.ndarray
    unassigned: float = 0.0
    baseline_log_odds: float | None = None
    steps: int | None = None
    notes: list = field(default_factory=list)

    @property
    def completeness_gap(self) -> float | None:
        """|sum of the scores + unassigned - (log-odds - baseline log-odds)| for integrated gradients, else None."""
        if self.baseline_log_odds is None:
            return None
        return abs(float(self.scores.sum()) + self.unassigned - (self.log_odds - self.baseline_log_odds))

    def ranking(self) -> list[int]:
        """Prompt tokens from the one that pushes most towards `chosen` to the one that pushes most towards other."""
        return [int(i) for i in np.argsort(-self.scores, kind="stable")]


@dataclass
class LMQuestion:
    """One contrast, validated: the prompt's ids, which of them get a score (not the family's first token), and
    the two words' ids."""
    prompt: str
    ids: list
    scored: list
    chosen: str
    other: str
    chosen_ids: list
    other_ids: list


def lm_question(lm, prompt, chosen, other) -> LMQuestion:
    """Validate a contrast (prompt: text or ids; chosen, other: text or ids); ValueError, in words."""
    ids, text, _ = prompt_ids(lm, prompt)
    (c_ids, c_text), (o_ids, o_text) = _word(lm, chosen, "first"), _word(lm, other, "second")
    if len(ids) + max(len(c_ids), len(o_ids)) - 1 > lm.cfg.max_len:
        raise ValueError(f"The prompt and the word after it are more than the model's {lm.cfg.max_len} tokens: "
                         "shorten the prompt.")
    first = lm.cfg.bos_id is not None and ids[0] == lm.cfg.bos_id
    scored = [p for p in range(len(ids)) if not (p == 0 and first)]
    return LMQuestion(text, ids, scored, c_text, o_text, c_ids, o_ids)


def _word(lm, word, name: str) -> tuple[list, str]:
    if isinstance(word, str):
        ids = lm.tokenizer.encode(word) if word else []
        if not ids:
            raise ValueError(f"Give the {name} word as text: '{word}' has no tokens.")
        return ids, word
    if isinstance(word, (list, tuple)) and word and all(isinstance(i, (int, np.integer)) for i in word):
        ids = [int(i) for i in word]
        if any(not 0 <= i < lm.cfg.vocab_size for i in ids):
            raise ValueError(f"The {name} word must be tokens of the model's vocabulary.")
        return ids, lm.tokenizer.decode(ids) or "".join(lm.tokenizer.pieces(ids))
    raise ValueError(f"Give the {name} word as text, not {type(word).__name__}.")


def _rows(q: LMQuestion, ids: list) -> list:
    """(the sequence fed, the word, the row that scores its first piece): for chosen, then other."""
    return [(ids + w[:-1], w, len(ids) - 1) for w in (q.chosen_ids, q.other_ids)]


def _padded(lm, rows: list) -> torch.Tensor:
    """(B, T) on the right with id 0: causal attention never lets a token see the padding after it."""
    T = max(len(r[0]) for r in rows)
    return torch.tensor([r[0] + [0] * (T - len(r[0])) for r in rows], device=lm.device)


@torch.no_grad()
def log_odds_of(lm, q: LMQuestion, prompts: list) -> np.ndarray:
    """log P(chosen) - log P(other) after each prompt (a list of ids), in padded batches: (len(prompts),)."""
    rows = [r for ids in prompts for r in _rows(q, ids)]
    lps = []
    for start in range(0, len(rows), BATCH_ROWS):
        chunk = rows[start: start + BATCH_ROWS]
        lps.append(word_logprobs(lm.model(_padded(lm, chunk)), [(w, f) for _, w, f in chunk]))
    lp = torch.cat(lps).double().cpu().numpy()
    return lp[0::2] - lp[1::2]


def without(q: LMQuestion, position: int) -> list:
    """The prompt's ids with the token at `position` deleted."""
    return q.ids[:position] + q.ids[position + 1:]


def erasure(lm, q: LMQuestion) -> np.ndarray:
    """Each scored token's erasure score: log-odds minus log-odds with it deleted."""
    if len(q.ids) < 2:
        raise ValueError("Leaving a token out needs a prompt of two tokens at least: write a longer prompt.")
    lo = log_odds_of(lm, q, [q.ids] + [without(q, p) for p in q.scored])
    return lo[0] - lo[1:]


def _factor_grads(lm, q: LMQuestion, alphas: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, list]:
    """sum_k weights[k] * d(log-odds)/d(factor) at factor alphas[k] on every scored token (1 on the first token):
    (per prompt position (P,), the log-odds at each alpha)."""
    P = len(q.ids)
    scored = torch.zeros(P, dtype=torch.bool, device=lm.device)
    scored[q.scored] = True
    pair, grads, odds = _rows(q, q.ids), np.zeros(P), []
    per = max(1, BATCH_ROWS // 2)
    for start in range(0, len(alphas), per):
        a = torch.tensor(alphas[start: start + per], dtype=torch.float32, device=lm.device)
        wts = torch.tensor(weights[start: start + per], dtype=torch.float64, device=lm.device)
        rows = pair * len(a)
        tokens = _padded(lm, rows)                                                       # (B, T)
        mask = torch.zeros(tokens.shape[1], dtype=torch.bool, device=lm.device)
        mask[:P] = scored
        factor = torch.where(mask[None, :], a.repeat_interleave(2)[:, None], 1.0).requires_grad_(True)  # (B, T)
        with torch.enable_grad(), EmbeddingScale(lm.model, [(tokens, factor, "tokens")]) as hooks:
            lp = word_logprobs(lm.model(tokens), [(w, f) for _, w, f in rows]).double()     # (B,)
            if hooks.reached != {"tokens"}:
                raise ValueError("This model's token embeddings could not be reached, so gradients cannot be "
                                 "taken for it: use method='erasure'.")
            lo = lp[0::2] - lp[1::2]                                                     # (n,)
            (g,) = torch.autograd.grad((lo * wts).sum(), (factor,))
        grads += g[:, :P].double().sum(0).cpu().numpy()
        odds += lo.detach().cpu().tolist()
    return grads, odds


@torch.no_grad()
def _whole(lm, q: LMQuestion) -> tuple[float, float, np.ndarray]:
    """(log P(chosen), log P(other), the predicting row's attention over the scored tokens (N, h, W))."""
    rows = _rows(q, q.ids)
    logits, attns = lm.model(_padded(lm, rows), need_weights=True)
    lp = word_logprobs(logits, [(w, f) for _, w, f in rows]).double().cpu().numpy()
    row = len(q.ids) - 1
    attention = torch.stack([a[0, :, row, q.scored] for a in attns]).float().cpu().numpy()
    return float(lp[0]), float(lp[1]), attention


def lm_contrast(lm, prompt, chosen, other, method: str = "erasure", steps: int = DEFAULT_STEPS) -> LMContrast:
    """Why `chosen` and not `other` after `prompt`: see the module's docstring."""
    check_method(method, steps, METHODS)
    q = lm_question(lm, prompt, chosen, other)
    lp_c, lp_o, attention = _whole(lm, q)
    extra, rest = {}, 0.0
    if q.chosen_ids == q.other_ids:          # the same tokens: nothing can push one over the other
        scores = np.zeros(len(q.scored))
        if method == "integrated":
            extra = {"baseline_log_odds": 0.0}
    elif method == "erasure":
        scores = erasure(lm, q)
    else:
        alphas, weights = (np.ones(1), np.ones(1)) if method == "gradient" else path_points(steps)
        grads, odds = _factor_grads(lm, q, alphas, weights)
        scores = grads[q.scored]
        rest = float(grads.sum() - scores.sum()) if method == "gradient" else 0.0     # IG: the first token stays 1
        if method == "integrated":
            extra = {"baseline_log_odds": float(odds[-1])}
    return LMContrast(q.prompt, q.chosen, q.other, method, lm.tokenizer.pieces([q.ids[p] for p in q.scored]),
                      list(q.scored), np.asarray(scores, dtype=np.float64), lp_c - lp_o, lp_c, lp_o, attention, rest,
                      steps=steps if method == "integrated" else None, **extra)
