"""What a checkpoint folder tells about its training: the card in words, the log as curves, the snapshots.

Pure functions (files or data in, text, tables or Altair charts out) for the checkpoint and
learning-rate pages; nothing here imports Streamlit.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import altair as alt
import numpy as np
import pandas as pd

SNAPSHOT = re.compile(r"step_(\d+)\.npz$")


def read_train_log(path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """train_log.jsonl -> (training steps, validations); empty frames if there is no log.

    A line that does not parse (the last one while training is still writing it) is skipped.
    """
    steps, valids = [], []
    path = Path(path)
    if path.exists():
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(row, dict) and "step" in row:
                (valids if row.get("kind") == "valid" else steps).append(row)
    return pd.DataFrame(steps), pd.DataFrame(valids)


def thin(df: pd.DataFrame, n: int = 2000) -> pd.DataFrame:
    """At most about n evenly spaced rows (plus the last), so that long logs draw quickly."""
    if len(df) <= n:
        return df
    idx = np.unique(np.r_[np.linspace(0, len(df) - 1, n).astype(int), len(df) - 1])
    return df.iloc[idx]


def line_chart(df: pd.DataFrame, y: str, title: str, color: str = "#1f77b4", y_title: str | None = None,
               log_y: bool = False, points: bool = False) -> alt.Chart:
    """One column of a log against the step, as an Altair line with a tooltip."""
    data = thin(df[["step", y]].dropna())
    scale = alt.Scale(type="log") if log_y else alt.Scale(zero=False)
    mark = alt.Chart(data).mark_line(color=color, point=points)
    return mark.encode(
        x=alt.X("step:Q", title="training step"),
        y=alt.Y(f"{y}:Q", title=y_title or y, scale=scale),
        tooltip=[alt.Tooltip("step:Q"), alt.Tooltip(f"{y}:Q", format=".4g")],
    ).properties(title=title, height=240)


def training_charts(steps: pd.DataFrame, valids: pd.DataFrame) -> dict[str, alt.Chart]:
    """The curves a log supports, by name: loss, learning rate, tokens/s, dev BLEU, perplexity, source gain."""
    charts = {}
    if not steps.empty:
        if "loss" in steps:
            charts["loss"] = line_chart(steps, "loss", "Training loss (label-smoothed cross-entropy)")
        if "lr" in steps:
            charts["lr"] = line_chart(steps, "lr", "Learning rate", color="#ff7f0e", y_title="learning rate")
        if "tokens_per_s" in steps:
            charts["tokens_per_s"] = line_chart(steps, "tokens_per_s", "Speed", color="#2ca02c",
                                                y_title="target tokens per second")
    if not valids.empty:
        if "bleu" in valids and valids["bleu"].notna().any():
            charts["bleu"] = line_chart(valids, "bleu", "Dev BLEU (greedy, a sample of sentences)",
                                        color="#d62728", y_title="BLEU", points=True)
        if "ppl" in valids:
            charts["ppl"] = line_chart(valids, "ppl", "Dev perplexity", color="#9467bd", y_title="perplexity",
                                       log_y=True, points=True)
        if "source_gain" in valids and valids["source_gain"].notna().any():
            charts["source_gain"] = line_chart(
                valids, "source_gain", "Source gain: how much worse dev NLL gets with other sentences' sources "
                "(near 0: the model ignores its source)", color="#8c564b", y_title="nats per token", points=True)
    return charts


def _hours(seconds) -> str:
    return f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{seconds / 60:.0f} min"


def training_pairs(card: dict) -> int | None:
    """Number of training sentence pairs, from the data preparation report in the card."""
    try:
        return int(card["data"]["prep_report"]["splits"]["train"]["pairs_out"])
    except (KeyError, TypeError, ValueError):
        return None


def describe_model(card: dict, cfg) -> str:
    """One plain sentence on what this model is and how it was trained, from its card and config."""
    sizes = (f"{cfg.N} encoder / {cfg.n_dec} decoder layers, {cfg.h} heads, d_model {cfg.d_model}")
    if not card or card.get("trained_here") is False and "training" not in card:
        note = card.get("note") or card.get("source") or "not trained here"
        return f"{card.get('name', 'This model')} ({sizes}): {note}."
    t = card.get("training", {})
    parts = [f"{card.get('name', 'This model')} ({sizes}) was trained here"]
    pairs = training_pairs(card)
    if pairs:
        parts.append(f"on {pairs:,} sentence pairs")
    if t.get("steps"):
        parts.append(f"for {t['steps']:,} steps ({t.get('epochs', '?')} epochs)")
    if t.get("wall_time_s"):
        parts.append(f"in {_hours(t['wall_time_s'])}")
    if t.get("hardware"):
        parts.append(f"on {t['hardware']}")
    return " ".join(parts) + "."


def card_facts(card: dict, folder=None) -> dict[str, str]:
    """The card's main facts as label -> short text, for st.metric; missing facts are left out."""
    facts = {}
    if card.get("parameters"):
        facts["Parameters"] = f"{card['parameters'] / 1e6:.1f} M"
    weights = Path(folder) / "model.safetensors" if folder else None
    if weights is not None and weights.exists():
        facts["Weights file"] = f"{weights.stat().st_size / 2**20:.1f} MiB"
    t = card.get("training", {})
    if t.get("steps"):
        facts["Steps"] = f"{t['steps']:,}"
    if t.get("wall_time_s"):
        facts["Training time"] = _hours(t["wall_time_s"])
    test = card.get("test") or {}
    for key in ("bleu", "chrf"):
        if isinstance(test.get(key), (int, float)):
            facts[f"Test {key.upper() if key == 'bleu' else 'chrF'}"] = f"{test[key]:.1f}"
    dev = card.get("dev_last") or {}
    if isinstance(dev.get("bleu"), (int, float)):
        facts["Dev BLEU (last)"] = f"{dev['bleu']:.1f}"
    if isinstance(dev.get("ppl"), (int, float)):
        facts["Dev perplexity"] = f"{dev['ppl']:.1f}"
    return facts


def snapshot_steps(folder) -> list[tuple[int, Path]]:
    """(step, file) of every attention snapshot in folder/snapshots, in step order."""
    snap = Path(folder) / "snapshots" if folder else None
    if snap is None or not snap.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in snap.iterdir() if (m := SNAPSHOT.search(p.name))]
    return sorted(found)


def read_probes(folder) -> list[dict]:
    """The probe sentences of the snapshots (src, tgt and their tokens), or [] if none were recorded."""
    path = Path(folder) / "snapshots" / "probes.json" if folder else None
    if path is None or not path.exists():
        return []
    try:
        return json.loads(path.read_text(encoding="utf-8")).get("sentences", [])
    except (json.JSONDecodeError, AttributeError):
        return []


def read_snapshot(path, probe: int, kind: str) -> np.ndarray:
    """One probe sentence's [layers, heads, rows, cols] maps (float32) from a snapshot file; KeyError if absent."""
    with np.load(path) as npz:
        return npz[f"{probe}_{kind}"].astype(np.float32)


def snapshot_labels(probe: dict, kind: str) -> tuple[list[str], list[str]]:
    """Row and column tokens of a snapshot map, as core.AttendResult defines them."""
    src, tgt, out = probe["src_tokens"], probe["tgt_tokens"], probe["out_tokens"]
    return {"enc_self": (src, src), "dec_self": (out, tgt), "cross": (out, src)}[kind]
