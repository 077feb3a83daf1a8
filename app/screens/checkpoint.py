"""The loaded checkpoint: its card, its training curves, and its attention snapshots replayed over training."""
import json
from pathlib import Path

import pandas as pd
import streamlit as st

from app import cache, url_state
from app.display import show_figure
from app.figures.attention import heatmap_figure
from app.figures.training import (card_facts, describe_model, emergence_charts, emergence_summary, read_train_log,
                                  training_charts)
from app.text import md_escape
from app.words import words_note, words_toggle
from app.lm.common import needs_translation
from core.checkpoint.snapshots import read_probes, read_snapshot, snapshot_steps
from core.studies.emergence import appearance
from core.training.schedule import describe_cooldown
from core.views import DECODER_ROWS, KINDS, attention_view

st.title("Checkpoint")
ckpt, model = cache.model_or_stop()
name = ckpt.name
card, folder = model.card, model.folder
st.write(describe_model(card, model.cfg))

facts = list(card_facts(card, folder).items())
for row in range(0, len(facts), 4):                     # four facts to a row
    for col, (label, value) in zip(st.columns(4), facts[row: row + 4]):
        col.metric(label, value)
test = card.test or {}
if test.get("bleu_signature"):
    st.caption(f"BLEU signature: `{test['bleu_signature']}`")
t = card.training
if t:
    shown = ("preset", "max_tokens", "warmup", "lr_scale", "accum", "clip", "overrides")
    st.caption("Training settings: " + ", ".join(f"{k} {v}" for k, v in t.items() if k in shown)
               + (f"; {describe_cooldown(t['cooldown'])}" if t.get("cooldown") else ""))
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

with st.expander("The whole card (card.json) and config (config.json)"):     # below the curves: a chart on screen 1
    st.json(card.to_dict(), expanded=1)
    st.json(json.loads(model.cfg.to_json()), expanded=False)

st.header("When did the heads appear?")
if needs_translation("snapshots", model):       # a language model: its snapshots score translation heads
    st.stop()
st.write("At every attention snapshot taken during training: the best head for the paper's Figure 3 "
         "('making' → 'more difficult') and Figure 4 ('its' → 'Law', the noun 'its' refers to), and, on our own "
         "pronoun sentences (core/probes/anaphora_en.jsonl), how often a head points a pronoun at its antecedent: "
         "the word it attends to most, itself and </s> aside. Diamonds: this checkpoint's final weights.")
table, unreadable, final = cache.emergence(ckpt)
if table is None or table.empty:
    st.info("This checkpoint has no attention snapshots to score over training; only its final weights are scored.")
else:
    for number in (3, 4):
        found = appearance(table, number)
        (st.success if found and found["appeared"] else st.warning)(emergence_summary(found, number, final))
    if unreadable:
        st.caption(f"{len(unreadable)} snapshot file(s) could not be read (cut short?): steps {unreadable}.")
if "hit_best" in final:
    before = table is not None and not table.empty and ("hit_best" not in table or table["hit_best"].isna().all())
    st.caption(("These snapshots were recorded before training saved the pronoun sentences, so the hit rate is "
                "known for the final weights only: " if before else "The pronoun hit rate of the final weights: ")
               + (f"{final['hit_rate']:.2f} for the best Figure 4 head, " if "hit_rate" in final else "")
               + f"{final['hit_best']:.2f} for the best head on the set (layer {final['hit_best_layer'] + 1}, "
               f"head {final['hit_best_head'] + 1}), against {final['hit_chance']:.2f} for a random pick of a word"
               + (f"; held out, the best head of the first half of the sentences (layer "
                  f"{final['hit_held_out_layer'] + 1}, head {final['hit_held_out_head'] + 1}) hits "
                  f"{final['hit_held_out']:.2f} of the other half (chance {final['hit_held_out_chance']:.2f})."
                  if "hit_held_out" in final else ".")
               + (f" Which sentences fall in which half matters: over {sp['splits']:,} random halvings the same rule "
                  f"hits {sp['mean']:.2f} on average (5-95%: {sp['p05']:.2f}-{sp['p95']:.2f}); one sentence of "
                  f"{sp['sentences_second_half']} is {1 / sp['sentences_second_half']:.2f}."
                  if (sp := final.get("hit_held_out_spread")) else ""))
for key, chart in emergence_charts(table if table is not None else pd.DataFrame(), final, valids).items():
    show_figure(chart, f"{name}_emergence_{key}", key=f"ckpt_emergence_{key}")

st.header("Attention while it learned")
snaps, probes = snapshot_steps(folder), read_probes(folder)
if not snaps or not probes:
    st.info("This checkpoint has no attention snapshots (snapshots/step_*.npz and probes.json): "
            "they are recorded only when training runs with --probe-every.")
    st.stop()
st.caption(f"{len(snaps)} snapshots of the attention on {len(probes)} dev sentences, taken during training. "
           "Move the slider to watch a head form.")
by_step = dict(snaps)
link = [url_state.number("sentence", "snap_probe", len(probes), 0, "sentence"),
        url_state.choice("kind", "snap_kind", list(KINDS), "enc_self", "kind of attention"),
        url_state.number("layer", "snap_layer", lambda: model.cfg.N if st.session_state.get("snap_kind", "enc_self")
                         == "enc_self" else model.cfg.N_dec, 0, "layer"),
        url_state.number("head", "snap_head", model.cfg.h, 0, "head"), url_state.flag("words", "snap_words", True),
        url_state.choice("step", "snap_step", {str(s): s for s in by_step}, list(by_step)[-1], "saved step")]
url_state.restore("checkpoint", link)          # ?step=1200&layer=5&head=4: a head forming, shared
if st.session_state.get("snap_step") not in by_step:         # another checkpoint's step
    st.session_state.snap_step = list(by_step)[-1]
c1, c2, c3, c4, c5 = st.columns([2.4, 2, 1, 1, 1.8], vertical_alignment="bottom")   # room for "Whole words"
probe = c1.selectbox("Sentence", range(len(probes)), key="snap_probe",
                     format_func=lambda i: (f"dev line {probes[i]['line']}" if probes[i].get("line") else
                                            "the paper's sentence") + f": {probes[i]['src'][:70]}")
kind = c2.selectbox("Attention", list(KINDS), format_func=KINDS.get, key="snap_kind")
n_layers = model.cfg.N if kind == "enc_self" else model.cfg.N_dec
layer = c3.selectbox("Layer", range(n_layers), format_func=lambda i: str(i + 1), key="snap_layer")
head = c4.selectbox("Head", range(model.cfg.h), format_func=lambda h: str(h + 1), key="snap_head")
words = words_toggle(c5, "snap_words")                            # words first, as on every other map
step = st.select_slider("Training step", options=list(by_step), key="snap_step")
url_state.publish("checkpoint", link)
try:
    maps = read_snapshot(by_step[step], probe, kind)
except (KeyError, OSError, ValueError) as e:
    st.error(f"The snapshot of step {step} cannot be read ({e}); it may have been cut short while training wrote it.")
    st.stop()
try:
    snap = attention_view(probes[probe], kind, words=words, maps=maps)   # labelled as on every page (core.views)
except (KeyError, ValueError):                                     # tokens missing, or not the maps' sizes
    snap = None
if snap is not None and kind != "enc_self" and layer >= snap.maps.shape[0] and head < snap.maps.shape[1]:
    st.info(f"At step {step:,} the decoder had {snap.maps.shape[0]} of its {n_layers} layers: layer {layer + 1} was "
            "added later, when training grew the model (the card's warm start says when). Pick an earlier layer or "
            "a later step.")
    st.stop()
if snap is None or layer >= snap.maps.shape[0] or head >= snap.maps.shape[1]:
    st.error("This snapshot does not match its probe sentences or this model's sizes; it belongs to another run.")
    st.stop()
fig = heatmap_figure(snap.maps[layer, head], snap.rows, snap.cols, zmax=1.0,
                     title=f"Step {step:,}: {KINDS[kind].lower()}, layer {layer + 1}, head {head + 1}")
show_figure(fig, f"{name}_snapshot_{step}_{kind}_l{layer + 1}_h{head + 1}", key="snap_fig")
st.caption(md_escape(" ".join([words_note(words)] + ([DECODER_ROWS] if kind != "enc_self" else []))))
