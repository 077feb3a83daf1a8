"""Attention snapshots during training: the maps of fixed dev sentences every few steps, to watch heads form.

The files and their format belong to core.checkpoint.snapshots; this module chooses the sentences and computes
the maps."""
from __future__ import annotations

from pathlib import Path

from core import TranslationModel
from core.checkpoint import snapshots
from core.data import read_parallel
from core.studies import emergence


PROBE_LINES = [8, 1053, 1]   # newstest2013 lines (1-based): the paper's Figure 3 and Figures 4-5 sentences, a short one


class Probes:
    """Attention maps of fixed dev sentences, saved as fp16 .npz every few steps (to watch heads form)."""

    def __init__(self, args, tokenizer, model):
        src, tgt = read_parallel(args.data, "valid")
        lines = [n for n in PROBE_LINES if n <= len(src)] or [1]
        self.sentences = [(n, src[n - 1], tgt[n - 1]) for n in lines]
        # the paper's Figure 3-5 sentences when the dev lines lack them (translated greedily: no reference)
        self.sentences += emergence.paper_probes(s for _, s, _ in self.sentences)
        self.out = Path(args.out)                       # the checkpoint folder: its snapshots/ receives them
        self.tokenizer, self.model = tokenizer, model

    def snapshot(self, step: int) -> None:
        tm = TranslationModel(self.model, self.tokenizer)     # puts the model in eval mode
        arrays, meta = {}, []
        for i, (line, src, tgt) in enumerate(self.sentences):
            r = tm.attend(src, tgt=tgt)
            for kind in snapshots.KINDS:                    # written as fp16
                arrays[f"{i}_{kind}"] = getattr(r, kind)
            meta.append({"line": line, "src": r.src, "tgt": r.tgt, "src_tokens": r.src_tokens,
                         "tgt_tokens": r.tgt_tokens, "out_tokens": r.out_tokens})
        pronoun_arrays, pronouns = emergence.record_pronouns(tm)   # the pronoun rows of core/probes/anaphora_en
        arrays.update(pronoun_arrays)
        snapshots.write_snapshot(self.out, step, arrays)
        snapshots.write_probes(self.out, meta, pronouns)
        self.model.train()
