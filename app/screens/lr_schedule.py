"""The warm-up learning-rate schedule (section 5.3): the formula, and what the loaded checkpoint really used."""
from pathlib import Path

import streamlit as st

from app import cache
from app.display import show_figure
from app.figures.schedule import key_values, logged_vs_formula_chart, schedule_chart, schedule_curve, sci
from app.figures.training import line_chart, read_train_log, thin
from core.training.schedule import describe_cooldown


def the_formula() -> None:
    """The paper's schedule for a d_model and warm-up of the reader's choice, with its values at three steps."""
    c1, c2, c3 = st.columns(3)
    d_model = c1.select_slider("d_model", [64, 128, 256, 512, 768, 1024, 2048], value=512, key="lr_d_model")
    warmup = c2.number_input("warmup_steps", min_value=1, max_value=200_000, value=4000, step=500, key="lr_warmup")
    last = c3.number_input("steps shown", min_value=1000, max_value=1_000_000, value=100_000, step=10_000,
                           key="lr_last", help="The paper trains the base model for 100,000 steps.")
    values = key_values(d_model, int(warmup))
    for col, (step, lr) in zip(st.columns(3), values.items()):
        col.metric(f"lrate at step {step:,}", sci(lr))
    curve = schedule_curve(d_model, int(warmup), last_step=int(last))
    show_figure(schedule_chart(curve, int(warmup), f"The formula for d_model {d_model}, warmup {int(warmup):,}",
                               values), f"lr_schedule_{d_model}_{int(warmup)}", key="lr_formula")


def what_it_used(name: str, model) -> None:
    """The learning rate and loss the checkpoint's training logged, beside the formula it followed."""
    steps, _ = read_train_log(Path(model.folder) / "train_log.jsonl") if model.folder else (None, None)
    if steps is None or steps.empty or "lr" not in steps:
        st.info(f"'{name}' has no training log (train_log.jsonl): it was not trained here, or not yet, "
                "so there is no learning rate or loss to show.")
        st.stop()
    t = model.card.training
    run_warmup, run_scale = t.get("warmup"), t.get("lr_scale", 1.0)
    if run_warmup:
        st.write(f"This run used d_model {model.cfg.d_model}, warmup {run_warmup:,} and the formula multiplied by "
                 f"{run_scale}: a small model on a small batch trains better with a shorter warm-up."
                 + (f" At the end, {describe_cooldown(t['cooldown'])}: the logged curve leaves the formula there."
                    if t.get("cooldown") else ""))
        formula = schedule_curve(model.cfg.d_model, int(run_warmup), run_scale, int(steps.step.max()), points=300)
        chart = logged_vs_formula_chart(thin(steps), formula, "Learning rate: logged and formula")
    else:
        chart = line_chart(steps, "lr", "Learning rate logged while training", color="#ff7f0e",
                           y_title="learning rate")
    c1, c2 = st.columns(2)
    with c1:
        show_figure(chart, f"{name}_lr", key="lr_logged")
    with c2:
        show_figure(line_chart(steps, "loss", "Training loss"), f"{name}_loss", key="lr_loss")


st.title("Learning-rate schedule")
st.latex(r"lrate = d_{model}^{-0.5} \cdot \min(step^{-0.5},\ step \cdot warmup\_steps^{-1.5})")
st.write("The rate grows linearly for the first *warmup_steps* steps, then decays with the inverse square "
         "root of the step. The paper uses $d_{model} = 512$ and $warmup\\_steps = 4000$.")
the_formula()
st.header("What the loaded model used")
ckpt, model = cache.model_or_stop()
what_it_used(ckpt.name, model)
