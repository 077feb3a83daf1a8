"""Validation during training: dev loss, perplexity, source gain, greedy BLEU and the pronoun test."""
from __future__ import annotations

import json
import time

import numpy as np
import sacrebleu
import torch

from core import TranslationModel, clean_text, label_smoothed_loss
from core.data import collate, encode_pairs, read_parallel, token_batches
from core.studies.pronouns import load_pronoun_set, pronoun_accuracy

from .run import plateaued


class Validation:
    """Dev loss, perplexity and greedy BLEU on the first sentences of the valid split.

    Also the dev NLL when every target is paired with the next sentence's source: a model that
    uses its source does much worse then; one whose encoder collapsed (all sources look alike)
    scores the same, and `source_gain` (the difference, nats per token) shows it long before BLEU.
    And the contrastive pronoun accuracy (core.studies.pronouns: does 'its' become sein- or ihr- as it should?).
    """

    def __init__(self, args, tokenizer, cfg, device):
        src, tgt = read_parallel(args.data, "valid")
        src, tgt = src[: args.valid_sentences], tgt[: args.valid_sentences]
        self.pairs, _ = encode_pairs(tokenizer, src, tgt, cfg.eos_id, cfg.max_len - 1)
        self.wrong = [(self.pairs[(i + 1) % len(self.pairs)][0], t) for i, (_, t) in enumerate(self.pairs)]
        self.batches, self.wrong_batches = (token_batches([(len(s), len(t) + 1) for s, t in pairs], args.max_tokens)
                                            for pairs in (self.pairs, self.wrong))
        bleu = [(s, t) for s, t in zip(src[: args.bleu_sentences], tgt) if clean_text(s)]   # valid may keep empty lines
        self.bleu_src, self.bleu_ref = [s for s, _ in bleu], [t for _, t in bleu]
        self.tokenizer, self.cfg, self.device = tokenizer, cfg, device
        self.pronoun_items = load_pronoun_set()

    def _losses(self, model, pairs, batches):
        """(label-smoothed loss, NLL) per target token over the given pairs."""
        nll = smoothed = tokens = 0.0
        for idx in batches:
            src, tin, tout = collate(pairs, idx, self.cfg.pad_id, self.cfg.bos_id, self.cfg.eos_id, self.device)
            logits = model(src, tin).float()
            l_s, n = label_smoothed_loss(logits, tout, self.cfg.label_smoothing, self.cfg.pad_id)
            l_n, _ = label_smoothed_loss(logits, tout, 0.0, self.cfg.pad_id)
            smoothed, nll, tokens = smoothed + l_s.item() * n.item(), nll + l_n.item() * n.item(), tokens + n.item()
        return smoothed / tokens, nll / tokens

    @torch.no_grad()
    def run(self, model) -> dict:
        model.eval()
        smoothed, nll = self._losses(model, self.pairs, self.batches)
        _, wrong_nll = self._losses(model, self.wrong, self.wrong_batches)
        out = {"loss": round(smoothed, 4), "nll": round(nll, 4), "ppl": round(float(np.exp(nll)), 2),
               "source_gain": round(wrong_nll - nll, 4)}
        if self.bleu_src:
            hyps = TranslationModel(model, self.tokenizer).translate(self.bleu_src, beam=1)
            out["bleu"] = round(sacrebleu.corpus_bleu(hyps, [self.bleu_ref]).score, 2)
            out["bleu_sentences"] = len(self.bleu_src)
        # teacher-forced, batched: cheap next to BLEU's decoding ({"accuracy", "feminine", "masc_neut"})
        out["pronouns"] = pronoun_accuracy(TranslationModel(model, self.tokenizer), self.pronoun_items)
        return out


def validate(valid: Validation, model, info, log, bar, patience: int = 0) -> dict:
    t = time.time()
    res = valid.run(model)
    res.update(kind="valid", step=info["step"], seconds=round(time.time() - t, 1))
    log.write(res)
    info["last_valid"] = res
    if res.get("bleu") is not None:
        if info.get("best_bleu") is None or res["bleu"] > info["best_bleu"]:
            info["best_bleu"], info["best_bleu_step"], info["bleu_stale"] = res["bleu"], info["step"], 0
        else:
            info["bleu_stale"] = info.get("bleu_stale", 0) + 1
    say = bar.write if bar is not None else print
    say(f"step {info['step']}: dev {json.dumps(res)}")
    if plateaued(info, patience):
        say(f"dev BLEU has not beaten {info['best_bleu']} (step {info['best_bleu_step']}) "
            f"for {info['bleu_stale']} validations: stopping (--patience {patience})")
    if res["source_gain"] < 0.01 and info["step"] >= 1000:
        say("warning: the model ignores its source (dev NLL is the same with other sentences' sources); "
            "its encoder may have collapsed. A lower --lr-scale, a longer --warmup or --set norm=pre can help.")
    return res
