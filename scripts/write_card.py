#!/usr/bin/env python
"""Render a checkpoint's card.json as a readable CARD.md beside it (optionally adding notes first).

    python scripts/write_card.py checkpoints/news-small --notes "why these sizes ..."
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from core.checkpoint import atomic_write, read_card, update_card
from core.training.schedule import describe_cooldown


# card["stopped_by"] as words ("patience" is said beside the best dev BLEU; older cards say "budget")
STOPPED_BY = {"max_steps": "its --max-steps limit", "epochs": "its --epochs limit",
              "max_minutes": "its --max-minutes time limit", "signal": "a stop request (SIGTERM or Ctrl-C)"}
ARCHITECTURE = ("N", "N_dec", "d_model", "d_ff", "h", "dropout", "norm", "activation", "positions", "vocab_size")


def card_markdown(card: dict, config: dict | None = None) -> str:
    """The card as Markdown: what the model is, how it was made, how it scores (config: the folder's config.json)."""
    t, lines = card.get("training", {}), [f"# {card.get('name', 'checkpoint')}", ""]
    if card.get("notes"):
        lines += [card["notes"], ""]
    lines += ["## How it was made", "",
              f"- Trained here: {card.get('trained_here')}",
              f"- Data: `{(card.get('data') or {}).get('folder')}`",
              f"- Preset: {t.get('preset')}; parameters: {card.get('parameters'):,}" if card.get("parameters") else "",
              ("- Architecture: " + ", ".join(f"{k}={config[k]}" for k in ARCHITECTURE if k in config))
              if config else None,
              f"- Steps: {t.get('steps')}, epochs: {t.get('epochs')}, target tokens: {t.get('target_tokens')}",
              f"- Wall time: {t.get('wall_time_s', 0) / 3600:.2f} h on {t.get('hardware')}",
              f"- Batch: {t.get('max_tokens')} padded tokens x {t.get('accum')}; warmup {t.get('warmup')}, "
              f"lr scale {t.get('lr_scale')}" + (f", gradient clipping {t['clip']}" if t.get("clip") else "")
              + (f", overrides {' '.join(t['overrides'])}" if t.get("overrides") else "")
              + f"; averaged saves: {', '.join(t.get('averaged_saves', []))}",
              f"- Precision: {t['precision']} (the last session's; fp32 weights, optimiser and loss)"
              if t.get("precision") else None,
              (f"- Warm start: from `{t['warm_start']['from']}` at step {t['warm_start']['step']}, "
               f"{t['warm_start']['optimizer']}, {t['warm_start']['rewarm']} steps of learning-rate re-warm-up")
              if t.get("warm_start") else None,
              f"- Cool-down: {describe_cooldown(t['cooldown'])}" if t.get("cooldown") else None, ""]
    lines += ["## Scores", ""]
    if card.get("dev_last"):
        d = card["dev_last"]
        lines.append(f"- Dev (during training, greedy, first {d.get('bleu_sentences')} sentences): "
                     f"BLEU {d.get('bleu')}, "
                     f"perplexity {d.get('ppl')}"
                     + (f", source gain {d['source_gain']} nats/token" if d.get("source_gain") is not None else "")
                     + f" (step {d.get('step')})")
    if card.get("dev_best_bleu") is not None:
        lines.append(f"- Best dev BLEU during training: {card['dev_best_bleu']}"
                     + (f" (step {card['dev_best_bleu_step']})" if card.get("dev_best_bleu_step") else "")
                     + ("; stopped because it had stopped improving (--patience)"
                        if card.get("stopped_by") == "patience" else ""))
    if card.get("stopped_by") in STOPPED_BY:
        lines.append(f"- Training ended at {STOPPED_BY[card['stopped_by']]}")
    for split in ("valid", "test"):
        if card.get(split):
            e = card[split]
            lines += [f"- {split} ({e.get('sentences')} sentences, beam {e.get('beam')}, alpha {e.get('alpha')}): "
                      f"BLEU {e.get('bleu')}, chrF {e.get('chrf')}",
                      f"  - `{e.get('bleu_signature')}`", f"  - `{e.get('chrf_signature')}`"]
    if card.get("pronouns"):
        p, pct = card["pronouns"], lambda v: "n/a" if v is None else f"{100 * v:.1f}%"
        lines.append(f"- Pronoun test ({p.get('items')} contrastive items, scripts/evaluate_pronouns.py): "
                     f"{pct(p.get('accuracy'))} overall, {pct(p.get('feminine'))} with feminine antecedents "
                     f"(ihr-/sie), {pct(p.get('masc_neut'))} with masculine or neuter ones (sein-/er/es); by distance "
                     + ", ".join(f"{k} {pct(v)}" for k, v in (p.get("by_distance") or {}).items()))
    if (card.get("alignment") or {}).get("selected"):
        lines += alignment_lines(card["alignment"])
    return "\n".join(line for line in lines if line is not None) + "\n"


def alignment_lines(a: dict) -> list[str]:
    """card["alignment"] (scripts/evaluate_alignment.py) as Markdown lines: held-out AER of the chosen head."""
    def pct(x):
        return "n/a" if x is None else f"{100 * x:.1f}%"
    s, b, d = a["selected"], a["best_layer"], a["diagonal"]
    out = [f"- Word alignment ({a.get('scored')} of {a.get('pairs')} RWTH de-en gold pairs, {a.get('method')}, "
           f"lower AER is better; chosen on the first {a['halves']['first']} pairs, AER on the other "
           f"{a['halves']['second']}): layer {s['layer']}, head {s['head']}, shift '{s['shift']}': AER "
           f"{pct(s['aer_second_half'])}; best layer average (layer {b['layer']}, '{b['shift']}') "
           f"{pct(b['aer_second_half'])}; diagonal baseline {pct(d['aer_second_half'])}"]
    t = a.get("as_tokenized_result")
    if t:
        out.append(f"  - fed the gold's tokenised text unchanged: layer {t['selected']['layer']}, head "
                   f"{t['selected']['head']}, '{t['selected']['shift']}': AER {pct(t['selected']['aer_second_half'])}")
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("checkpoint")
    p.add_argument("--notes", help="text saved as card['notes'] (why these sizes and this schedule, ...)")
    a = p.parse_args(argv)
    path = Path(a.checkpoint) / "card.json"
    if not path.exists():
        sys.exit(f"error: {path} does not exist")
    card = update_card(a.checkpoint, notes=a.notes) if a.notes else read_card(a.checkpoint)
    config_path = Path(a.checkpoint) / "config.json"
    config = json.loads(config_path.read_text(encoding="utf-8")) if config_path.exists() else None
    atomic_write(Path(a.checkpoint) / "CARD.md", card_markdown(card.to_dict(), config))
    print(f"wrote {Path(a.checkpoint) / 'CARD.md'}")


if __name__ == "__main__":
    main()
