#!/usr/bin/env python
"""Render a checkpoint's card.json as a model card, CARD.md, beside it (optionally adding notes first).

CARD.md's sections: Model, Training data, Training procedure (with the recipe: scripts/recipes/<name>.sh),
Evaluation, Limitations and How to reproduce; each opens with the card's prose for it (notes, data_notes,
training_notes, evaluation_notes, limitations: short paragraphs, a blank line between them), then the facts
card.json records. A card's "history" (a list of {"date", "steps", "change", "dev", "test"}, one a training
segment, oldest first) becomes a table in Training procedure.

    python scripts/write_card.py checkpoints/news-small --notes "why these sizes ..."
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from core.checkpoint import Card, as_card, atomic_write, read_card, update_card
from core.model.grow import describe_growth
from core.studies import long_arcs
from core.training.schedule import describe_cooldown
from scripts import cli


# card["stopped_by"] as words ("patience" is said beside the best dev BLEU; older cards say "budget")
STOPPED_BY = {"max_steps": "its --max-steps limit", "epochs": "its --epochs limit",
              "max_minutes": "its --max-minutes time limit", "signal": "a stop request (SIGTERM or Ctrl-C)"}
REASONS = {"empty": "empty", "too_long": "too long", "ratio": "length ratio"}   # prepare_data.py's drop reasons
ARCHITECTURE = ("N", "N_dec", "d_model", "d_ff", "h", "dropout", "norm", "activation", "positions", "vocab_size")


def card_markdown(card: Card | dict, config: dict | None = None) -> str:
    """The card as a model card in Markdown: Model, Training data, Training procedure, Evaluation, Limitations and
    How to reproduce, each opened by the card's prose for it (config: the folder's config.json).

    Takes a Card (a card.json dict is read as one). A section with nothing to say is left out.
    """
    card = as_card(card)
    sections = {"Model": model_lines(card, config), "Training data": data_lines(card),
                "Training procedure": training_lines(card), "Evaluation": evaluation_lines(card),
                "Limitations": prose(card.limitations), "How to reproduce": reproduce_lines(card)}
    lines = [f"# {card.name}", ""]
    for title, body in sections.items():
        body = [line for line in body if line is not None]
        while body and not body[-1]:
            body.pop()
        if body:
            lines += [f"## {title}", "", *body, ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def prose(text: str | None) -> list[str]:
    """A prose field as the opening paragraph(s) of a section (blank lines in it separate paragraphs)."""
    return [text.strip(), ""] if text and text.strip() else []


def model_lines(card: Card, config: dict | None) -> list:
    t = card.training
    return [*prose(card.notes),
            f"- Trained here: {card.trained_here}",
            f"- Source: {card.source}" if card.source else None,
            f"- Credit: {card.credit}" if card.credit else None,
            f"- Preset: {t.get('preset')}; parameters: {card.parameters:,}" if card.parameters else None,
            ("- Architecture: " + ", ".join(f"{k}={config[k]}" for k in ARCHITECTURE if k in config))
            if config else None]


def data_lines(card: Card) -> list:
    """The data folder and, from scripts/prepare_data.py's report, what was kept and the vocabulary."""
    out = [*prose(card.data_notes)]
    if card.data_name:
        out.append(f"- Data: `{card.data_name}`" + (f", prepared by scripts/prepare_data.py from "
                                                    f"`{card.prep_report['corpus']}`"
                                                    if card.prep_report.get("corpus") else ""))
    splits, settings = card.prep_report.get("splits") or {}, card.prep_report.get("settings") or {}
    train = splits.get("train") or {}
    if train:
        dropped = {k: v for k, v in (train.get("dropped") or {}).items() if v}
        out.append(f"- Training pairs: {train.get('pairs_in', 0):,} in, {train.get('pairs_out', 0):,} kept"
                   + (" (dropped: " + ", ".join(f"{v:,} {REASONS.get(k, k)}" for k, v in dropped.items()) + ")"
                      if dropped else "")
                   + (f"; max {settings['max_len']} {settings.get('max_len_unit', 'words')} a side, length "
                      f"ratio at most {settings['ratio']}" if "max_len" in settings and "ratio" in settings else ""))
    out += extra_lines(card.prep_report)
    held = [f"{name} {splits[name].get('pairs_out', 0):,}" for name in ("valid", "test") if splits.get(name)]
    if held:
        out.append(f"- Held-out pairs (every line kept): {', '.join(held)}")
    if card.prep_report.get("spm_vocab_size"):
        out.append(f"- Vocabulary: one shared SentencePiece {settings.get('model_type', 'BPE').upper()} model of "
                   f"{card.prep_report['spm_vocab_size']:,} pieces"
                   + (" with byte fallback" if settings.get("byte_fallback") else "")
                   + (f", kept from `{card.prep_report['spm_from']}`" if card.prep_report.get("spm_from") else ""))
    return out


def extra_lines(report: dict) -> list[str]:
    """The corpora added to the main one (prepare_data.py --extra) and the 'its' balancing (balance_its_pairs.py)."""
    out = []
    for c in (report.get("extra") or {}).get("corpora", []):
        kinds = ", ".join(f"{k} {v:,}" for k, v in (c.get("taken_by_kind") or {}).items())
        out.append(f"- Added: `{c.get('corpus')}`, {c.get('taken', 0):,} of {c.get('pairs_in', 0):,} pairs"
                   + (f" ({kinds})" if kinds else ""))
    if b := report.get("its_balance"):
        pairs, copies = b.get("pairs") or {}, b.get("extra_copies_of_each") or {}
        out.append(f"- 'its' balanced by scripts/balance_its_pairs.py (factor {b.get('factor')}): "
                   + ", ".join(f"{pairs[k]:,} {k}- pairs copied {copies.get(k, 0)} more times" for k in pairs)
                   + f", {b.get('added', 0):,} pairs added: {b.get('train_pairs', 0):,} training pairs")
    return out


HISTORY = {"date": "date", "steps": "steps", "change": "what changed",
           "dev": "dev: perplexity, greedy BLEU", "test": "test: BLEU / chrF (beam 4)"}   # key: column heading


def history_lines(history) -> list[str]:
    """card["history"] as a Markdown table, one row a training segment (a "|" in a cell is escaped)."""
    if not isinstance(history, list) or not history:
        return []
    def cell(row, key):
        return str(row.get(key, "") if isinstance(row, dict) else "").replace("|", "\\|")
    return ["| " + " | ".join(HISTORY.values()) + " |", "|" + "---|" * len(HISTORY),
            *("| " + " | ".join(cell(row, key) for key in HISTORY) + " |" for row in history), ""]


def training_lines(card: Card) -> list:
    t = card.training
    history = history_lines(card.extra.get("history"))
    if not t:
        return [*prose(card.training_notes), *history]
    return [*prose(card.training_notes), *history,
            f"- Steps: {t.get('steps')}, epochs: {t.get('epochs')}, target tokens: {t.get('target_tokens')}",
            f"- Wall time: {t.get('wall_time_s', 0) / 3600:.2f} h on {t.get('hardware')}",
            f"- Batch: {t.get('max_tokens')} padded tokens x {t.get('accum')}; warmup {t.get('warmup')}, "
            f"lr scale {t.get('lr_scale')}" + (f", gradient clipping {t['clip']}" if t.get("clip") else "")
            + (f", overrides {' '.join(t['overrides'])}" if t.get("overrides") else "")
            + f"; averaged saves: {', '.join(t.get('averaged_saves', []))}",
            f"- Precision: {t['precision']} (the last segment's; fp32 weights, optimiser and loss)"
            if t.get("precision") else None,
            (f"- Warm start: from `{t['warm_start']['from']}` at step {t['warm_start']['step']}, "
             f"{t['warm_start']['optimizer']}, {t['warm_start']['rewarm']} steps of learning-rate re-warm-up"
             + (f"; {describe_growth(t['warm_start']['grown'])}" if t["warm_start"].get("grown") else ""))
            if t.get("warm_start") else None,
            f"- Cool-down: {describe_cooldown(t['cooldown'])}" if t.get("cooldown") else None,
            f"- Recipe: `{card.recipe}` (every command that made it, in order)" if card.recipe else None]


def evaluation_lines(card: Card) -> list:
    lines = [*prose(card.evaluation_notes)]
    if card.dev_last:
        d = card.dev_last
        lines.append(f"- Dev (during training, greedy, first {d.get('bleu_sentences')} sentences): "
                     f"BLEU {d.get('bleu')}, "
                     f"perplexity {d.get('ppl')}"
                     + (f", source gain {d['source_gain']} nats/token" if d.get("source_gain") is not None else "")
                     + f" (step {d.get('step')})")
    if card.dev_best_bleu is not None:
        lines.append(f"- Best dev BLEU during training: {card.dev_best_bleu}"
                     + (f" (step {card.dev_best_bleu_step})" if card.dev_best_bleu_step else "")
                     + ("; stopped because it had stopped improving (--patience)"
                        if card.stopped_by == "patience" else ""))
    if card.stopped_by in STOPPED_BY:
        lines.append(f"- Training ended at {STOPPED_BY[card.stopped_by]}")
    for split in ("valid", "test"):
        e = getattr(card, split)
        if e:
            lines += [f"- {split} ({e.get('sentences')} sentences, beam {e.get('beam')}, alpha {e.get('alpha')}): "
                      f"BLEU {e.get('bleu')}, chrF {e.get('chrf')}",
                      f"  - `{e.get('bleu_signature')}`", f"  - `{e.get('chrf_signature')}`"]
    if card.pronouns:
        p, pct = card.pronouns, lambda v: "n/a" if v is None else f"{100 * v:.1f}%"
        lines.append(f"- Pronoun test ({p.get('items')} contrastive items, scripts/evaluate_pronouns.py): "
                     f"{pct(p.get('accuracy'))} overall, {pct(p.get('feminine'))} with feminine antecedents "
                     f"(ihr-/sie), {pct(p.get('masc_neut'))} with masculine or neuter ones (sein-/er/es); by distance "
                     + ", ".join(f"{k} {pct(v)}" for k, v in (p.get("by_distance") or {}).items()))
        if p.get("separation") is not None:
            lines.append(f"  - genders told apart: separation {p['separation']} (the chance that a feminine item leans "
                         f"more to ihr-/sie than a masculine or neuter one; 0.5: the gender ignored), mean lean to "
                         f"ihr-/sie {p.get('feminine_lean'):+.2f} nats")
        if a := p.get("anaphora_head"):
            lines.append(f"- Anaphora head (core/studies/probes/anaphora_en.jsonl; chosen on the first half, scored on "
                         f"the {a.get('sentences_second_half')} sentences of the second): layer {a.get('layer')} head "
                         f"{a.get('head')} points from the pronoun to its antecedent in "
                         f"{pct(a.get('hit_rate_second_half'))} of them (chance {pct(a.get('chance'))})")
            if h := a.get("random_halvings"):
                lines.append(f"  - the same rule over {h.get('splits')} random halvings of the set: "
                             f"{pct(h.get('mean'))} on average (5-95%: {pct(h.get('p05'))}-{pct(h.get('p95'))}); one "
                             f"sentence of the second half is {pct(1 / max(h.get('sentences_second_half') or 1, 1))}")
    if card.figures:
        lines += figure_lines(card.figures)
    if (card.alignment or {}).get("selected"):
        lines += alignment_lines(card.alignment)
    if card.syntax:
        lines += syntax_lines(card.syntax)
    return lines


def reproduce_lines(card: Card) -> list:
    """Where the commands are, and the commands that fill in the card's scores."""
    if not card.trained_here and not card.training:
        return []
    folder = f"checkpoints/{card.name}"
    out = [f"The commands that made it, in order, with when and why each ran: `{card.recipe}`. "
           f"`bash {card.recipe}` runs them again; it writes into {folder}, replacing this checkpoint."
           if card.recipe else
           "No recipe was recorded: the settings above are those of the last training segment (card.json).", ""]
    evals = [f"python scripts/evaluate.py {folder} --split {split}" for split in ("valid", "test")
             if getattr(card, split)]
    evals += [f"python scripts/evaluate_pronouns.py {folder}"] if card.pronouns else []
    evals += [f"python scripts/evaluate_alignment.py {folder}"] if card.alignment else []
    evals += [f"python scripts/evaluate_alignment.py {folder} --as-tokenized"] \
        if (card.alignment or {}).get("as_tokenized_result") else []
    evals += [f"python scripts/evaluate_syntax.py {folder}"] if card.syntax else []
    corpus = " --corpus" if "corpus" in (card.figures or {}).get("3", {}) else ""
    evals += [f"python scripts/figure_links.py {folder} --card{corpus}"] if card.figures else []
    if evals:
        out += ["The scores above come from:", "", *(f"    {c}" for c in evals), ""]
    out += [f"This file is made from card.json by `python scripts/write_card.py {folder}`."]
    return out


def figure_lines(figures: dict) -> list[str]:
    """card["figures"] (scripts/figure_links.py --card) as Markdown lines: each figure's head, its score and verdict."""
    out = ["- The paper's Figures 3 and 4 on their own sentences (scripts/figure_links.py; a head links the words "
           "when it gives them at least the threshold and at least 2 times what the sentence's other words give):"]
    for number, f in sorted(figures.items()):
        if f.get("linked") is None:
            out.append(f"  - Figure {number}: {f.get('problem', 'not scored')}")
            continue
        out.append(f"  - Figure {number}: layer {f['layer']} head {f['head']}, {f['score']:.3f} (others "
                   f"{f['others']:.3f}, threshold {f['threshold']:.2f}): {'linked' if f['linked'] else 'not linked'}")
        if (corpus := f.get("corpus")) and (line := long_arcs.sentence_line(corpus, f["layer"] - 1, f["head"] - 1)):
            out.append(f"  - Figure {number} beyond its sentence (UD English EWT dev, `figure_links.py --corpus`): "
                       + line)
    return out


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


def syntax_lines(s: dict) -> list[str]:
    """card["syntax"] (scripts/evaluate_syntax.py) as Markdown lines: the syntactic heads, by relation and layer."""
    layers = "; ".join(f"layer {layer}: {len(rels)}" for layer, rels in (s.get("layers") or {}).items())
    out = [f"- Syntax against gold dependency parses ({s.get('sentences')} sentences of `{s.get('conllu')}`, "
           f"{s.get('relations_scored')} relations and directions; best head and fixed-offset baseline chosen on "
           f"the first half, accuracy held out; syntactic = at least 10 points over the baseline, Voita et al. "
           f"2019): " + (f"syntactic heads by layer: {layers}" if layers else "no syntactic head")]
    out += [f"  - {r['relation']} {r['direction']}: layer {r['layer']}, head {r['head']}: {r['accuracy']}% vs "
            f"{r['baseline']}% for offset {r['offset']:+d} ({r['n']} arcs)" for r in s.get("syntactic", [])]
    return out


def main(argv=None):
    p = cli.parser(__doc__)
    cli.add_checkpoint(p)
    p.add_argument("--notes", help="text saved as card['notes'] (why these sizes and this schedule, ...)")
    a = p.parse_args(argv)
    path = Path(a.checkpoint) / "card.json"
    if not path.exists():
        sys.exit(f"error: {path} does not exist")
    card = update_card(a.checkpoint, notes=a.notes) if a.notes else read_card(a.checkpoint)
    config_path = Path(a.checkpoint) / "config.json"
    config = json.loads(config_path.read_text(encoding="utf-8")) if config_path.exists() else None
    atomic_write(Path(a.checkpoint) / "CARD.md", card_markdown(card, config))
    print(f"wrote {Path(a.checkpoint) / 'CARD.md'}")


if __name__ == "__main__":
    main()
