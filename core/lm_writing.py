"""How a decoder-only language model writes: next-token prediction after a prompt, step by step.

write(lm, prompt, ...) returns a Writing: at each step the model's top-k next tokens with their probabilities, and
the token taken: the likeliest (greedy), one drawn at random from softmax(logits / temperature) cut to top-k /
top-p (core.model.trace.Sampling, with a seeded generator: the same seed draws the same tokens; with no cut the
draws are LanguageModel.generate's), or a token the user forced at one step; the model then goes on from it, as if
it had written it itself. One pass with the cache per step, as generate does, then one pass over the whole text for
the attention each step chose with (causal: a row never sees the tokens written after it).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from .model.trace import FORCED, SAMPLED, Sampling

GREEDY = "greedy"               # how a step's token was taken: GREEDY, SAMPLED or FORCED
MAX_NEW = 200


@dataclass(frozen=True)
class Forcing:
    """Write `ids` (one token or a typed word's pieces) from step `step` (from 0), instead of the model's choice."""
    step: int
    ids: tuple


@dataclass
class Candidate:
    """A next token of one step: the model's probability (T = 1) and the one it was drawn with (the sampling's
    distribution; for greedy and forced steps the same as prob)."""
    token: int
    piece: str
    prob: float
    drawn: float


@dataclass
class WriteStep:
    """One step: the top-k candidates, likeliest first; the token taken and how (GREEDY, SAMPLED or FORCED);
    its probability under the model (T = 1); other: the probability of every token not in candidates."""
    candidates: list
    token: int
    how: str
    prob: float
    other: float


@dataclass
class Writing:
    """A prompt and what the model wrote after it. ids: the prompt's ids (its first token included where the
    family puts one) then the written ones; prompt_len: how many are the prompt's; attention (N, h, T, T): the
    self-attention of one pass over ids, row t choosing the token at t + 1; stopped: why it stopped ("end of
    text", "max_len" or "max_new")."""
    prompt: str
    ids: list
    prompt_len: int
    steps: list
    attention: np.ndarray
    pieces: list
    stopped: str
    sampling: Sampling | None = None
    forcing: Forcing | None = None
    notices: list = field(default_factory=list)
    tokenizer: object = field(default=None, repr=False, compare=False)

    @property
    def written(self) -> list:
        """The ids written after the prompt."""
        return self.ids[self.prompt_len:]

    @property
    def text(self) -> str:
        """The written ids as text."""
        return self.tokenizer.decode(self.written)

    def context(self, step: int) -> list:
        """The ids the model had read when it chose at `step`: the prompt and the steps before."""
        return self.ids[: self.prompt_len + step]

    def looked(self, step: int) -> np.ndarray:
        """(N, h, prompt_len + step): the attention of the position that chose at `step` over what it had read."""
        row = self.prompt_len + step - 1
        return self.attention[:, :, row, : row + 1]


def prompt_ids(lm, prompt) -> tuple[list, str, list]:
    """(ids, the prompt as text, notices) of a prompt given as text or as ids; ValueError in words."""
    if isinstance(prompt, str):
        ids, truncated = lm.ids(prompt)
        notices = [f"The prompt was cut to the model's {lm.cfg.max_len} tokens."] if truncated else []
    elif isinstance(prompt, (list, tuple)) and all(isinstance(i, (int, np.integer)) for i in prompt):
        ids, notices = [int(i) for i in prompt], []
        if any(not 0 <= i < lm.cfg.vocab_size for i in ids):
            raise ValueError("The prompt holds ids outside the model's vocabulary.")
        if len(ids) > lm.cfg.max_len:
            raise ValueError(f"The prompt is {len(ids)} tokens long: this model reads at most {lm.cfg.max_len}.")
    else:
        raise ValueError(f"Give the prompt as text, not {type(prompt).__name__}.")
    if not ids:
        raise ValueError("The prompt has no tokens: write a few words for the model to continue.")
    return ids, lm.tokenizer.decode(ids), notices


def _forcing(lm, forcing) -> Forcing | None:
    if forcing is None:
        return None
    if not isinstance(forcing, Forcing):
        forcing = Forcing(*forcing)
    ids = tuple(int(i) for i in forcing.ids)
    if not ids or any(not 0 <= i < lm.cfg.vocab_size for i in ids):
        raise ValueError("The forced word must be one or more tokens of the model's vocabulary.")
    if not isinstance(forcing.step, (int, np.integer)) or forcing.step < 0:
        raise ValueError(f"The forced step must be a step of the writing (from 1), not {forcing.step!r}.")
    return Forcing(int(forcing.step), ids)


@torch.no_grad()
def write(lm, prompt, max_new: int = 12, sampling: Sampling | None = None, k: int = 10,
          forcing: Forcing | tuple | None = None) -> Writing:
    """The model writing up to `max_new` tokens after `prompt` (text or ids): greedy without sampling; forcing
    puts the user's tokens at a step and the model goes on from them. Stops at the end-of-text id (unless
    forced) or at the model's max_len."""
    if not isinstance(max_new, (int, np.integer)) or not 1 <= max_new <= MAX_NEW:
        raise ValueError(f"Write from 1 to {MAX_NEW} tokens, not {max_new!r}.")
    ids, text, notices = prompt_ids(lm, prompt)
    forcing = _forcing(lm, forcing)
    if forcing is not None and forcing.step >= max_new:
        raise ValueError(f"The forced step {forcing.step + 1} is after the last step ({max_new}): write more tokens.")
    forced = {} if forcing is None else {forcing.step + i: t for i, t in enumerate(forcing.ids)}
    g = None if sampling is None else torch.Generator().manual_seed(sampling.seed)
    cache = [{} for _ in range(lm.cfg.N)]
    fed, steps, P = torch.tensor([ids], device=lm.device), [], len(ids)
    stopped = "max_new"
    for s in range(max_new):
        if len(ids) >= lm.cfg.max_len:
            stopped = "max_len"
            break
        logits = lm.model(fed, cache=cache)[0, -1].float().cpu()                          # (V,)
        logp = logits.log_softmax(-1)
        probs = logp.exp()
        drawn = probs if sampling is None else sampling.distribution(logp)
        if s in forced:
            token, how = forced[s], FORCED
        elif sampling is None:
            token, how = int(logits.argmax()), GREEDY
        else:
            token, how = int(torch.multinomial(drawn, 1, generator=g)), SAMPLED
        steps.append(_step(lm, probs, drawn, token, how, k))
        ids.append(token)
        if token == lm.cfg.eos_id and s + 1 not in forced:
            stopped = "end of text"
            break
        fed = torch.tensor([[token]], device=lm.device)
    if forcing is not None and forcing.step > len(steps) - 1:
        raise ValueError(f"The model stopped writing before step {forcing.step + 1}: force a word at an earlier "
                         "step.")
    _, attns = lm.model(torch.tensor([ids], device=lm.device), need_weights=True)
    attention = torch.cat([a for a in attns]).float().cpu().numpy()                     # (N, h, T, T)
    return Writing(text, ids, P, steps, attention, lm.tokenizer.pieces(ids), stopped, sampling, forcing, notices,
                   lm.tokenizer)


def _step(lm, probs: torch.Tensor, drawn: torch.Tensor, token: int, how: str, k: int) -> WriteStep:
    p, i = probs.topk(min(k, probs.numel()))
    top = i.tolist()
    pieces = lm.tokenizer.pieces(top)
    cands = [Candidate(t, piece, float(q), float(drawn[t])) for t, piece, q in zip(top, pieces, p)]
    return WriteStep(cands, token, how, float(probs[token]), max(0.0, 1.0 - float(p.sum())))
