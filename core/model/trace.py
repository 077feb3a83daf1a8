"""Decoding step by step: the same search as beam_search (or greedy, or sampling), with every choice recorded.

At each step every live hypothesis gets its next-piece probabilities from the very function beam_search uses
(_step_logprobs), and the same selection (select_candidates) keeps, prunes or finishes its candidates: so the traced
best hypothesis is beam_search's, token for token. The attention each hypothesis chose with is recorded from that
same pass (AttentionRecorder): the search's attention runs in torch's fused kernel, which returns no weights, so a
hook on each decoder attention recomputes softmax(q k^T / sqrt(d_k)) of the newest position from the query it was
given and the keys in its cache (T5: unscaled, with its position bias); the output the search uses is never touched.
Pure torch and numpy: ids in, a SearchTrace out.
"""
from __future__ import annotations

import contextvars
from dataclasses import dataclass, field

import numpy as np
import torch

from .attention import scaled_dot_product_attention
from .decoding import (_length_limits, _step_logprobs, length_penalty, only_eos_at_limit, reorder_cache,
                       select_candidates)

KEPT, PRUNED, FINISHED, FORCED, SAMPLED = "kept", "pruned", "finished", "forced", "sampled"


@dataclass(frozen=True)
class Sampling:
    """Draw each next piece at random from softmax(log P / temperature), cut to the top_k most probable (0: all)
    and to the smallest set whose probability reaches top_p (1: all), with a seeded generator."""
    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int = 0

    def __post_init__(self):
        if not self.temperature > 0:
            raise ValueError(f"The temperature must be above 0, not {self.temperature}.")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top-p must be above 0 and at most 1, not {self.top_p}.")
        if self.top_k < 0:
            raise ValueError(f"top-k must be 0 (no cut) or more, not {self.top_k}.")

    def distribution(self, logp: torch.Tensor) -> torch.Tensor:
        """(V,) log-probabilities -> (V,) the probabilities the piece is drawn from."""
        probs = (logp / self.temperature).softmax(-1)
        if self.top_k:
            cut = probs.topk(min(self.top_k, probs.numel())).values[-1]
            probs = torch.where(probs >= cut, probs, torch.zeros_like(probs))
        if self.top_p < 1:
            sorted_p, order = probs.sort(descending=True)
            before = sorted_p.cumsum(0) - sorted_p              # the mass of the more probable pieces
            sorted_p[before >= self.top_p * sorted_p.sum()] = 0.0
            probs = torch.zeros_like(probs).scatter(0, order, sorted_p)
        return probs / probs.sum()


@dataclass
class Candidate:
    """A next piece of one hypothesis: its probability (the model's, T = 1) and what the search did with it."""
    token: int
    prob: float
    total: float                 # the hypothesis' log P plus log prob: its log P if this piece is taken
    fate: str                    # kept, pruned, finished (</s> set aside), forced, sampled
    score: float | None = None   # finished: the length-penalised score that ranked it
    child: int | None = None     # kept: its index among the next step's hypotheses


@dataclass
class Hypothesis:
    """A partial translation alive at one step, and how it chose its next piece."""
    tokens: list                 # the pieces written so far (ids, no start token)
    logprob: float               # log P(tokens | source)
    score: float                 # logprob / lp(len(tokens)): how the beam compares it
    parent: int | None           # its index among the previous step's hypotheses
    candidates: list             # the top-k next pieces, best first (and any the search took beyond them)
    other: float                 # probability of every piece not in candidates
    logprobs: np.ndarray         # (V,) float16: every next piece's log P, for redrawing at another temperature
    cross: np.ndarray            # (N_dec, h, S): encoder-decoder attention of the position that chooses
    dec_self: np.ndarray         # (N_dec, h, len(tokens) + 1): its decoder self-attention

    def probabilities(self, temperature: float = 1.0) -> np.ndarray:
        """(V,) the next-piece distribution softmax(log P / temperature): 1 is the model's own (the paper's
        decoding); below 1 sharper, above 1 flatter. The order of the pieces never changes."""
        if not temperature > 0:
            raise ValueError(f"The temperature must be above 0, not {temperature}.")
        z = self.logprobs.astype(np.float64) / temperature
        z = np.exp(z - z.max())
        return z / z.sum()


@dataclass
class Finished:
    """A hypothesis that wrote </s>: at `step`, from hypothesis `parent` of that step."""
    tokens: list
    logprob: float
    score: float
    step: int
    parent: int


@dataclass
class Step:
    hyps: list                   # the live hypotheses choosing at this step
    forced: bool = False         # teacher-forced: the piece was chosen beforehand


@dataclass
class SearchTrace:
    """Every step of one sentence's search; best: the winner's ids (no start token, no </s>)."""
    steps: list
    finished: list
    best: list
    best_score: float
    best_logprob: float
    beam: int
    alpha: float
    sampling: Sampling | None = None
    limit: int = 0               # the most steps the search could take
    winner: Finished | None = field(default=None, repr=False)

    def path(self, end: Finished | None = None) -> list[tuple[int, int]]:
        """(step, hypothesis) of each step on the way to a finished hypothesis (the winner by default)."""
        end = end or self.winner
        if end is None:
            return [(t, 0) for t in range(len(self.steps))]
        out, i = [], end.parent
        for t in range(end.step, -1, -1):
            out.append((t, i))
            i = self.steps[t].hyps[i].parent
        return out[::-1]

    def path_cross(self, end: Finished | None = None) -> np.ndarray:
        """(N_dec, h, T, S): the cross-attention with which each piece of a path was chosen (</s> last)."""
        return np.stack([self.steps[t].hyps[i].cross for t, i in self.path(end)], axis=2)


_RECORDING = contextvars.ContextVar("attention_recorder", default=None)


class AttentionRecorder:
    """While open (`with AttentionRecorder(model) as rec:`), keeps the attention probabilities of the newest decoder
    position of every incremental decoder pass in this thread; take() hands them over. Other threads' calls on the
    same (shared) model are not recorded: the hooks act only for the recorder that is active in their context."""

    def __init__(self, model):
        self.model, self._handles, self._token = model, [], None
        self.maps = {"dec_self": [], "cross": []}

    def __enter__(self):
        for layer in self.model.decoder:
            for kind, module in (("dec_self", layer.self_attn), ("cross", layer.cross_attn)):
                self._handles.append(module.register_forward_hook(self._hook(kind), with_kwargs=True))
        self._token = _RECORDING.set(self)
        return self

    def __exit__(self, *exc):
        _RECORDING.reset(self._token)
        for handle in self._handles:
            handle.remove()

    def _hook(self, kind: str):
        def hook(module, args, kwargs, output):
            cache = kwargs.get("cache")
            if _RECORDING.get() is not self or cache is None:
                return
            (q,) = module._project(args[0], module.w_q)                         # (K, h, 1, d_k): the query used
            mask = args[3] if len(args) > 3 else kwargs.get("mask")
            bias = kwargs.get("position_bias")                                  # T5's: (1, h, Tq, keys) or None
            _, probs = scaled_dot_product_attention(q[:, :, -1:], cache["k"], cache["v"], mask,
                                                    bias=None if bias is None else bias[:, :, -1:],
                                                    scale=module.scale)          # (K, h, 1, keys)
            self.maps[kind].append(probs[:, :, 0])
        return hook

    def take(self) -> tuple[np.ndarray, np.ndarray]:
        """(cross (K, N_dec, h, S), dec_self (K, N_dec, h, t + 1)) of the last pass, float32 numpy."""
        out = tuple(torch.stack(self.maps[kind], 1).float().cpu().numpy() for kind in ("cross", "dec_self"))
        self.maps = {"dec_self": [], "cross": []}
        return out


def _candidates(probs: torch.Tensor, top: list, logprob: float, taken: dict) -> tuple[list, float]:
    """(Candidates of the top pieces plus any taken beyond them, the probability of every other piece).
    probs: (V,) one hypothesis' next-piece probabilities; taken: token -> (fate, score, child)."""
    chosen = list(top) + [w for w in taken if w not in top]
    picked = probs[chosen]
    cands = []
    for w, p in zip(chosen, picked.tolist()):
        fate, score, child = taken.get(w, (PRUNED, None, None))
        cands.append(Candidate(int(w), p, logprob + float(np.log(p)) if p > 0 else float("-inf"), fate, score,
                               child))
    return cands, max(0.0, float(probs.sum(dtype=torch.float64) - picked.sum(dtype=torch.float64)))


@torch.no_grad()
def traced_search(model, src, beam: int = 4, alpha: float = 0.6, forced=(), top_k: int = 10,
                  sampling: Sampling | None = None, max_extra: int = 50, head_mask=None) -> SearchTrace:
    """One sentence src (1, S) decoded with every step recorded: beam search (beam 1: greedy), or with sampling one
    hypothesis drawn at random. forced: ids teacher-forced first (a chosen prefix), then the search continues."""
    cfg, K = model.cfg, (1 if sampling else beam)
    if src.size(0) != 1 or K < 1:
        raise ValueError("traced_search decodes one sentence (src of shape (1, S)) with beam >= 1")
    dev = src.device
    memory, src_mask, _ = model.encode(src, head_mask=head_mask)
    memory, src_mask = memory.repeat_interleave(K, 0), src_mask.repeat_interleave(K, 0)
    limit = int(_length_limits(model, src, max_extra)[0])
    cache = [{} for _ in model.decoder]
    tokens = torch.full((K, 1), cfg.bos_id, dtype=torch.long, device=dev)
    scores = torch.full((1, K), float("-inf"), device=dev)
    scores[:, 0] = 0.0                                     # all beams start as one hypothesis
    generator = torch.Generator().manual_seed(sampling.seed) if sampling else None
    steps, finished, parents = [], [], [None] * K
    recorder = AttentionRecorder(model)
    for t in range(limit):
        with recorder:
            logp = _step_logprobs(model, tokens, memory, src_mask, cache, t, head_mask)   # (K, V): as beam_search
        cross, dec_self = recorder.take()
        model_logp = logp.clone()                                                     # before the length limit
        V = logp.size(-1)
        only_eos_at_limit(logp, torch.full((K,), t + 1 >= limit, device=dev), cfg.eos_id)
        if t < len(forced):
            kept, ended = [(float(scores[0, 0] + logp[0, forced[t]]), 0, int(forced[t]))], []
        elif sampling:
            w = int(torch.multinomial(sampling.distribution(logp[0].float().cpu()), 1, generator=generator))
            s = float(scores[0, 0] + logp[0, w])
            kept, ended = ([], [(s, 0)]) if w == cfg.eos_id else ([(s, 0, w)], [])
        else:
            top_scores, top_idx = (scores.view(K, 1) + logp).view(1, K * V).topk(2 * K, dim=1)
            kept, ended = select_candidates(top_scores.tolist()[0], top_idx.tolist()[0], V, K, cfg.eos_id,
                                            len(finished))
        fate = FORCED if t < len(forced) else SAMPLED if sampling else None
        taken = [{} for _ in range(K)]                   # per row: token -> (fate, score, child)
        for n, (_, k, w) in enumerate(kept):
            taken[k][w] = (fate or KEPT, None, n)
        for s, k in ended:
            seq = tokens[k, 1:].tolist()
            final = s / length_penalty(len(seq) + 1, alpha)
            taken[k][cfg.eos_id] = (fate or FINISHED, final, None)
            finished.append(Finished(seq, s, final, t, k))
        steps.append(Step(_hypotheses(tokens, scores[0].tolist(), parents, model_logp, cross, dec_self, top_k, taken,
                                      alpha), forced=t < len(forced)))
        if len(finished) >= K or not kept:
            break
        reorder = torch.tensor([k for _, k, _ in kept] + [0] * (K - len(kept)), device=dev)
        new_tok = torch.tensor([w for _, _, w in kept] + [cfg.pad_id] * (K - len(kept)), device=dev)
        new_scores = torch.full((1, K), float("-inf"), device=dev)
        new_scores[0, :len(kept)] = torch.tensor([s for s, _, _ in kept], device=dev)
        tokens, scores = torch.cat([tokens[reorder], new_tok[:, None]], dim=1), new_scores
        parents = [k for _, k, _ in kept] + [None] * (K - len(kept))
        reorder_cache(cache, reorder)
    winner = max(finished, key=lambda f: f.score) if finished else None
    if winner is None:                                  # no hypothesis ended: the best live one, as beam_search
        best, best_logprob, best_score = tokens[0, 1:].tolist(), float(scores[0, 0]), 0.0
    else:
        best, best_logprob, best_score = winner.tokens, winner.logprob, winner.score
    return SearchTrace(steps, finished, [w for w in best if w not in (cfg.eos_id, cfg.pad_id)], best_score,
                       best_logprob, beam, alpha, sampling, limit, winner)


def _hypotheses(tokens, scores: list, parents: list, logp, cross, dec_self, top_k: int, taken: list,
                alpha: float) -> list[Hypothesis]:
    """The live rows of one step (a finite log P) as Hypotheses."""
    probs = logp.float().exp().cpu()                                     # (K, V)
    top = probs.topk(min(top_k, probs.size(-1)), dim=-1).indices.tolist()
    hyps = []
    for k, s in enumerate(scores):
        if s == float("-inf"):
            continue
        cands, other = _candidates(probs[k], top[k], s, taken[k])
        seq = tokens[k, 1:].tolist()
        hyps.append(Hypothesis(seq, s, s / length_penalty(len(seq), alpha), parents[k], cands, other,
                               logp[k].float().cpu().numpy().astype(np.float16), cross[k], dec_self[k]))
    return hyps
