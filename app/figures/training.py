"""What a checkpoint folder tells about its training: the card in words, the log as curves, the snapshots.

Pure functions (files or data in, text, tables or Altair charts out) for the checkpoint and
learning-rate pages; nothing here imports Streamlit.
"""
from __future__ import annotations

from pathlib import Path

import altair as alt
import numpy as np
import pandas as pd

from core.checkpoint.card import Card, as_card
from core.checkpoint.jsonl import split_train_log
# the snapshots' readers live in core.checkpoint.snapshots; named here too for the pages that import them from here
from core.checkpoint.snapshots import read_probes, read_snapshot, snapshot_steps  # noqa: F401
from core.studies.paper_figures import LINK_FACTOR


def read_train_log(path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """train_log.jsonl -> (training steps, validations); empty frames if there is no log.

    A line that does not parse (the last one while training is still writing it) is skipped.
    """
    steps, valids = split_train_log(path) if Path(path).exists() else ([], [])
    return pd.DataFrame(steps), pd.DataFrame(valids)


def thin(df: pd.DataFrame, n: int = 2000) -> pd.DataFrame:
    """At most about n evenly spaced rows (plus the last), so that long logs draw quickly."""
    if len(df) <= n:
        return df
    idx = np.unique(np.r_[np.linspace(0, len(df) - 1, n).astype(int), len(df) - 1])
    return df.iloc[idx]


def line_chart(df: pd.DataFrame, y: str, title: str, color: str = "#1f77b4", y_title: str | None = None,
               log_y: bool = False, points: bool = False, subtitle: str | list[str] = "") -> alt.Chart:
    """One column of a log against the step, as an Altair line with a tooltip.

    Vega-Lite never wraps a title: keep `title` short and say the rest in `subtitle` (a list: one line each).
    """
    data = thin(df[["step", y]].dropna())
    scale = alt.Scale(type="log") if log_y else alt.Scale(zero=False)
    mark = alt.Chart(data).mark_line(color=color, point=points)
    return mark.encode(
        x=alt.X("step:Q", title="training step"),
        y=alt.Y(f"{y}:Q", title=y_title or y, scale=scale),
        tooltip=[alt.Tooltip("step:Q"), alt.Tooltip(f"{y}:Q", format=".4g")],
    ).properties(title=alt.TitleParams(title, subtitle=subtitle) if subtitle else title, height=240)


def training_charts(steps: pd.DataFrame, valids: pd.DataFrame) -> dict[str, alt.Chart]:
    """The curves a log supports, by name: loss, learning rate, tokens/s, dev BLEU, perplexity, source gain."""
    charts = {}
    if not steps.empty:
        if "loss" in steps:
            charts["loss"] = line_chart(steps, "loss", "Training loss", subtitle="label-smoothed cross-entropy")
        if "lr" in steps:
            charts["lr"] = line_chart(steps, "lr", "Learning rate", color="#ff7f0e", y_title="learning rate")
        if "tokens_per_s" in steps:
            # a log scale where parts of the run differ tenfold (a GPU segment among CPU ones), not for a few slow steps
            speed = steps["tokens_per_s"][steps["tokens_per_s"] > 0]
            wide = not speed.empty and speed.quantile(0.95) > 10 * speed.quantile(0.05)
            charts["tokens_per_s"] = line_chart(steps, "tokens_per_s", "Speed", color="#2ca02c",
                                                y_title="target tokens / s", log_y=wide,
                                                subtitle="log scale: parts of the run differ more than tenfold"
                                                if wide else "")
    if not valids.empty:
        if "bleu" in valids and valids["bleu"].notna().any():
            charts["bleu"] = line_chart(valids, "bleu", "Dev BLEU", subtitle="greedy, on a sample of dev sentences",
                                        color="#d62728", y_title="BLEU", points=True)
        if "ppl" in valids:
            charts["ppl"] = line_chart(valids, "ppl", "Dev perplexity", color="#9467bd", y_title="perplexity",
                                       log_y=True, points=True)
        if "source_gain" in valids and valids["source_gain"].notna().any():
            charts["source_gain"] = line_chart(
                valids, "source_gain", "Source gain", color="#8c564b", y_title="nats per token", points=True,
                subtitle=["how much worse dev NLL gets with other sentences' sources",
                          "near 0: the model ignores its source"])
    return charts


def _hours(seconds) -> str:
    return f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{seconds / 60:.0f} min"


def training_pairs(card: Card) -> int | None:
    """Number of training sentence pairs, from the data preparation report in the card (after balancing 'its')."""
    try:
        balanced = card.prep_report.get("its_balance") or {}
        return int(balanced.get("train_pairs") or card.prep_report["splits"]["train"]["pairs_out"])
    except (KeyError, TypeError, ValueError):
        return None


def describe_model(card: Card | dict | None, cfg) -> str:
    """One plain sentence on what this model is and how it was trained, from its card and config."""
    card = as_card(card)
    sizes = (f"{cfg.N} encoder / {cfg.N_dec} decoder layers" if hasattr(cfg, "N_dec") else f"{cfg.N} layers") \
        + f", {cfg.h} heads, d_model {cfg.d_model}"
    if card.trained_here is False and not card.training:
        note = card.note or card.source or "not trained here"
        return f"{card.name} ({sizes}): {note}."
    t = card.training
    parts = [f"{card.name} ({sizes}) was trained here"]
    pairs = training_pairs(card)
    if pairs:
        parts.append(f"on {pairs:,} sentence pairs")
    if t.get("steps"):
        parts.append(f"for {t['steps']:,} steps ({t.get('epochs', '?')} epochs)")
    if t.get("wall_time_s"):
        parts.append(f"in {_hours(t['wall_time_s'])}")
    if t.get("hardware"):        # the card records the last segment's hardware; a history has others
        history = card.extra.get("history")
        if isinstance(history, list) and len(history) > 1:
            parts[-1] += f"; its last segment on {t['hardware']}"
        else:
            parts.append(f"on {t['hardware']}")
    return " ".join(parts) + "."


def card_facts(card: Card | dict | None, folder=None) -> dict[str, str]:
    """The card's main facts as label -> short text, for st.metric; missing facts are left out."""
    card, facts = as_card(card), {}
    if card.parameters:
        facts["Parameters"] = f"{card.parameters / 1e6:.1f} M"
    weights = Path(folder) / "model.safetensors" if folder else None
    if weights is not None and weights.exists():
        facts["Weights file"] = f"{weights.stat().st_size / 2**20:.1f} MiB"
    t = card.training
    if t.get("steps"):
        facts["Steps"] = f"{t['steps']:,}"
    if t.get("wall_time_s"):
        facts["Training time"] = _hours(t["wall_time_s"])
    test = card.test or {}
    for key in ("bleu", "chrf"):
        if isinstance(test.get(key), (int, float)):
            facts[f"Test {key.upper() if key == 'bleu' else 'chrF'}"] = f"{test[key]:.1f}"
    dev = card.dev_last or {}
    if isinstance(dev.get("bleu"), (int, float)):
        facts["Dev BLEU (last)"] = f"{dev['bleu']:.1f}"
    if isinstance(dev.get("ppl"), (int, float)):
        facts["Dev perplexity"] = f"{dev['ppl']:.1f}"
    return facts


# ---- when did the heads appear? (core.studies.emergence's table as curves and sentences) ----

HEAD_SERIES = {   # column of core.studies.emergence's table -> (legend, colour, dashed)
    "fig3_score": ("Figure 3: 'making' → 'more difficult', best head", "#1f77b4", False),
    "fig3_threshold": ("Figure 3: a link from here", "#1f77b4", True),
    "fig4_score": ("Figure 4: 'its' → 'Law' (antecedent), best head", "#d62728", False),
    "fig4_threshold": ("Figure 4: a link from here", "#d62728", True),
    "fig4_application": ("same head: 'its' → 'application' (next word)", "#ff9896", False),
    "fig4_next_word": ("same head: next-word score over the sentence", "#7f7f7f", False),
}
PRONOUN_SERIES = {
    "hit_rate": ("hit rate of the best Figure 4 head", "#d62728", False),
    "hit_best": ("hit rate of the best head on the set", "#9467bd", False),
    "hit_held_out": ("held out: the best head of one half, on the other half", "#8c564b", False),
    "hit_chance": ("a random pick of a word", "#7f7f7f", True),
    "accuracy": ("translation: pronoun accuracy (dev log)", "#2ca02c", False),
    "feminine": ("translation: feminine antecedents", "#98df8a", False),
    "masc_neut": ("translation: masculine/neuter antecedents", "#bcbd22", False),
    "separation": ("translation: genders told apart (0.5: not at all)", "#17becf", False),
}


def pronoun_log(valids: pd.DataFrame) -> pd.DataFrame:
    """The validations' "pronouns" records as columns step, accuracy, feminine, masc_neut (fractions 0-1) and
    separation (an AUC, 0-1; logs written before 2026-12-03 lack it)."""
    if valids is None or valids.empty or "pronouns" not in valids:
        return pd.DataFrame()
    rows = []
    for step, rec in zip(valids["step"], valids["pronouns"]):
        if isinstance(rec, dict):
            vals = {k: rec.get(k) for k in ("accuracy", "feminine", "masc_neut", "separation")
                    if isinstance(rec.get(k), (int, float))}
            rows.append({"step": int(step), **{k: v / 100 if v > 1 else v for k, v in vals.items()}})   # % or 0-1
    return pd.DataFrame(rows)


def _head_label(row, prefix: str) -> str:
    layer, head = row.get(prefix + "layer"), row.get(prefix + "head")
    return "" if pd.isna(layer) or pd.isna(head) else f"layer {int(layer) + 1}, head {int(head) + 1}"


def _long(table: pd.DataFrame, series: dict, source: str) -> pd.DataFrame:
    """Wide table -> rows (step, series, value, head, source, dashed) for the columns of `series` it has."""
    heads = {"fig3": "fig3_", "fig4": "fig4_", "hit_rate": "fig4_", "hit_best": "hit_best_",
             "hit_held_out": "hit_held_out_"}
    rows = []
    for _, r in table.iterrows():
        for col, (legend, _, dashed) in series.items():
            if col in r and pd.notna(r[col]):
                prefix = next((p for k, p in heads.items() if col.startswith(k)), None)
                rows.append({"step": int(r["step"]), "series": legend, "value": float(r[col]), "source": source,
                             "dashed": dashed, "head": _head_label(r, prefix) if prefix and not dashed else ""})
    return pd.DataFrame(rows, columns=["step", "series", "value", "source", "dashed", "head"])


def _series_chart(data: pd.DataFrame, series: dict, title: str, y_title: str) -> alt.Chart:
    """Lines per series over the step (dashed: reference levels), final-weights values as diamonds."""
    present = [v[0] for v in series.values() if v[0] in set(data.series)]
    colour = alt.Color("series:N", title=None, legend=alt.Legend(orient="bottom", columns=2, labelLimit=400),
                       scale=alt.Scale(domain=present, range=[v[1] for v in series.values() if v[0] in present]))
    tooltip = [alt.Tooltip("step:Q"), alt.Tooltip("series:N"), alt.Tooltip("value:Q", format=".3f"),
               alt.Tooltip("head:N"), alt.Tooltip("source:N")]
    enc = dict(x=alt.X("step:Q", title="training step", scale=alt.Scale(zero=True)),
               y=alt.Y("value:Q", title=y_title, scale=alt.Scale(domain=[0, 1])), color=colour, tooltip=tooltip)
    over_time = data[data.source != "final weights"]
    layers = [alt.Chart(over_time[~over_time.dashed]).mark_line(point=True).encode(**enc),
              alt.Chart(over_time[over_time.dashed]).mark_line(strokeDash=[6, 4]).encode(**enc),
              alt.Chart(data[data.source == "final weights"]).mark_point(shape="diamond", size=140, filled=True,
                                                                           opacity=0.8).encode(**enc)]
    return alt.layer(*layers).properties(title=title, height=300)


def emergence_charts(table: pd.DataFrame | None, final: dict | None = None,
                     valids: pd.DataFrame | None = None) -> dict[str, alt.Chart]:
    """"When did the heads appear?": the paper's Figure 3/4 scores, and the pronoun scores, against the step.

    table: emergence.snapshot_scores (core.studies; one row per snapshot); final: emergence.model_scores of the
    checkpoint's weights (diamonds at its step); valids: the log's validations (their "pronouns" record).
    """
    parts = {"heads": [], "pronouns": []}
    if table is not None and not table.empty:
        parts["heads"].append(_long(table, HEAD_SERIES, "snapshot"))
        parts["pronouns"].append(_long(table, PRONOUN_SERIES, "snapshot"))
    if final:
        one = pd.DataFrame([final])
        parts["heads"].append(_long(one, {k: v for k, v in HEAD_SERIES.items() if not v[2]}, "final weights"))
        parts["pronouns"].append(_long(one, {k: v for k, v in PRONOUN_SERIES.items() if k.startswith("hit")},
                                       "final weights"))
    log = pronoun_log(valids)
    if not log.empty:
        parts["pronouns"].append(_long(log, PRONOUN_SERIES, "dev log"))
    titles = {"heads": ("The paper's heads over training", "share of the word's attention", HEAD_SERIES),
              "pronouns": ("Pronouns: does a head point them at their antecedent?", "share of pronoun sentences",
                           PRONOUN_SERIES)}
    charts = {}
    for key, frames in parts.items():
        data = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
        if not data.empty:
            title, y_title, series = titles[key]
            charts[key] = _series_chart(data, series, title, y_title)
    return charts


def emergence_summary(found: dict | None, number: int, final: dict | None = None) -> str:
    """core.studies.emergence.appearance in plain words: when the head of Figure 3 or 4 appeared, or that it did not.

    final: core.studies.emergence.model_scores of the checkpoint's weights, said in a sentence of its own.
    """
    head, words = {3: ("long-distance head", "'making' to 'more difficult' (Figure 3)"),
                   4: ("anaphora head", "'its' to 'Law' (Figure 4)")}[number]
    f = f"fig{number}_"
    in_final = "" if not final or f + "score" not in final else (
        f" In the final weights, {'a head links them' if final[f + 'linked'] else 'no head links them'}: the "
        f"best puts {final[f + 'score']:.2f} there (layer {final[f + 'layer'] + 1}, head {final[f + 'head'] + 1}).")
    if found is None:
        return (f"The snapshots do not hold the Figure {number} sentence, so they cannot show when a head "
                f"linking {words} appeared." + in_final)
    b = found["best"]
    def at(r):
        return f"layer {r['layer'] + 1}, head {r['head'] + 1}"
    capped = b["threshold"] < LINK_FACTOR * b["chance"] - 1e-9
    rule = (f"a link needs {b['threshold']:.2f} "
            f"({'half of the attention' if capped else f'{LINK_FACTOR:g}x an even spread'}) "
            f"and twice what the sentence's other words give")
    if not found["appeared"]:
        return (f"**No {head} appeared**: in {found['snapshots']} snapshots no head links {words}. The most any "
                f"head put there was {b['score']:.2f} (step {b['step']:,}, {at(b)}); {rule}." + in_final)
    first, last = found["first"], found["last"]
    now = (f"at the last snapshot (step {last['step']:,}) {at(last)} puts {last['score']:.2f} there" if last
           else "at the last snapshot no head links them")
    return (f"**A {head} appeared at step {first['step']:,}** ({at(first)}, {first['score']:.2f}): a head links "
            f"{words} in {found['linked']} of {found['snapshots']} snapshots; {now}; {rule}." + in_final)
