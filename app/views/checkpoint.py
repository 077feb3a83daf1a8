"""The loaded checkpoint: its card, its training curves, and its attention snapshots replayed over training."""
import json
from pathlib import Path

import streamlit as st

from app.common import model_or_stop, show_figure
from app.figures.attention import KINDS, heatmap_figure
from app.figures.training import (card_facts, describe_model, read_probes, read_snapshot, read_train_log,
                                  snapshot_labels, snapshot_steps, training_charts)

st.title("Checkpoint")
name, model = model_or_stop()
card, folder = model.card, model.folder
st.write(describe_model(card, model.cfg))

facts = list(card_facts(card, folder).items())
for row in range(0, len(facts), 4):                     # four facts to a row
    for col, (label, value) in zip(st.columns(4), facts[row: row + 4]):
        col.metric(label, value)
test = card.get("test") or {}
if test.get("bleu_signature"):
    st.caption(f"BLEU signature: `{test['bleu_signature']}`")
t = card.get("training") or {}
if t:
    st.caption("Training settings: " + ", ".join(f"{k} {v}" for k, v in t.items()
                                                   if k in ("preset", "max_tokens", "warmup", "lr_scale", "accum", "clip", "overrides")))
with st.expander("The whole card (card.json) and config (config.json)"):
    st.json(card or {"note": "this model has no card"}, expanded=1)
    st.json(json.loads(model.cfg.to_json()), expanded=False)

st.header("Training curves")
steps, valids = read_train_log(Path(folder) / "train_log.jsonl") if folder else (None, None)
charts = training_charts(steps, valids) if folder else {}
if not charts:
    st.info("This checkpoint has no training log (train_log.jsonl), so there are no curves to show. "
            "A freshly initialised or imported model was never trained here.")
else:
    last = steps.iloc[-1] if steps is not None and not steps.empty else None
    if last is not None:
        st.caption(f"{len(steps):,} logged steps; the last, step {int(last['step']):,}, "
                   f"after {last.get('elapsed_s', 0) / 3600:.1f} h.")
    names = list(charts)
    for i in range(0, len(names), 2):
        for col, key in zip(st.columns(2), names[i:i + 2]):
            with col:
                show_figure(charts[key], f"{name}_{key}", key=f"ckpt_curve_{key}")

st.header("Attention while it learned")
snaps, probes = snapshot_steps(folder), read_probes(folder)
if not snaps or not probes:
    st.info("This checkpoint has no attention snapshots (snapshots/step_*.npz and probes.json): "
            "they are recorded only when training runs with --probe-every.")
    st.stop()
st.caption(f"{len(snaps)} snapshots of the attention on {len(probes)} dev sentences, taken during training. "
           "Move the slider to watch a head form.")
c1, c2, c3, c4 = st.columns([3, 2, 1, 1])
probe = c1.selectbox("Sentence", range(len(probes)), key="snap_probe",
                     format_func=lambda i: f"dev line {probes[i].get('line', '?')}: {probes[i]['src'][:70]}")
kind = c2.selectbox("Attention", list(KINDS), format_func=KINDS.get, key="snap_kind")
n_layers = model.cfg.N if kind == "enc_self" else model.cfg.n_dec
layer = c3.selectbox("Layer", range(n_layers), format_func=lambda l: str(l + 1), key="snap_layer")
head = c4.selectbox("Head", range(model.cfg.h), format_func=lambda h: str(h + 1), key="snap_head")
by_step = dict(snaps)
step = st.select_slider("Training step", options=list(by_step), value=list(by_step)[-1], key="snap_step")
try:
    maps = read_snapshot(by_step[step], probe, kind)
except (KeyError, OSError, ValueError) as e:
    st.error(f"The snapshot of step {step} cannot be read ({e}); it may have been cut short while training wrote it.")
    st.stop()
rows, cols = snapshot_labels(probes[probe], kind)
if maps.shape[2:] != (len(rows), len(cols)) or layer >= maps.shape[0] or head >= maps.shape[1]:
    st.error("This snapshot does not match its probe sentences or this model's sizes; it belongs to another run.")
    st.stop()
fig = heatmap_figure(maps[layer, head], rows, cols, zmax=1.0,
                     title=f"Step {step:,}: {KINDS[kind].lower()}, layer {layer + 1}, head {head + 1}")
show_figure(fig, f"{name}_snapshot_{step}_{kind}_l{layer + 1}_h{head + 1}", key="snap_fig")
