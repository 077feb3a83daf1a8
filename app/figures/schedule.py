"""The learning-rate schedule of section 5.3 as data and Altair charts (the maths is core.noam_lr)."""
from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from core import noam_lr

KEY_STEPS = (1000, 4000, 5000)


def schedule_curve(d_model: int, warmup: int, scale: float = 1.0, last_step: int = 100_000,
                   points: int = 600) -> pd.DataFrame:
    """(step, lr) at about `points` steps from 1 to last_step, always including the peak at `warmup`."""
    steps = np.unique(np.r_[np.linspace(1, last_step, points).astype(int), [warmup] if warmup <= last_step else []])
    return pd.DataFrame({"step": steps.astype(int), "lr": [noam_lr(int(s), d_model, warmup, scale) for s in steps]})


def key_values(d_model: int, warmup: int, scale: float = 1.0, steps=KEY_STEPS) -> dict[int, float]:
    """The learning rate at a few steps, e.g. {1000: 1.75e-4, 4000: 6.99e-4, 5000: 6.25e-4} for 512 / 4000."""
    return {s: noam_lr(s, d_model, warmup, scale) for s in steps}


def sci(x: float) -> str:
    """A rate as people write it: 1.75e-4 rather than 1.75e-04."""
    mantissa, exponent = f"{x:.2e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def schedule_chart(curve: pd.DataFrame, warmup: int, title: str, marks: dict[int, float] | None = None) -> alt.Chart:
    """The formula's curve with a rule at the end of warm-up, where the rate peaks, and points at `marks`."""
    line = alt.Chart(curve).mark_line(color="#ff7f0e").encode(
        x=alt.X("step:Q", title="training step"), y=alt.Y("lr:Q", title="learning rate", axis=alt.Axis(format=".1e")),
        tooltip=[alt.Tooltip("step:Q"), alt.Tooltip("lr:Q", format=".3e")])
    rule = alt.Chart(pd.DataFrame({"step": [warmup], "label": [f"warm-up ends: step {warmup:,}"]})).mark_rule(
        strokeDash=[4, 4], color="gray").encode(x="step:Q", tooltip=["label:N"])
    layers = [line, rule]
    if marks:
        points = pd.DataFrame({"step": list(marks), "lr": list(marks.values())})
        layers.append(alt.Chart(points).mark_point(filled=True, size=60, color="black").encode(
            x="step:Q", y="lr:Q", tooltip=[alt.Tooltip("step:Q"), alt.Tooltip("lr:Q", format=".3e")]))
    return alt.layer(*layers).properties(title=title, height=280)


def logged_vs_formula_chart(logged: pd.DataFrame, formula: pd.DataFrame, title: str) -> alt.Chart:
    """The learning rate the training run logged (solid) over the formula with its own settings (dashed)."""
    names = ["logged while training", "formula, same settings"]
    data = pd.concat([logged[["step", "lr"]].assign(source=names[0]), formula.assign(source=names[1])],
                     ignore_index=True)
    return alt.Chart(data).mark_line().encode(
        x=alt.X("step:Q", title="training step"),
        y=alt.Y("lr:Q", title="learning rate", axis=alt.Axis(format=".1e")),
        # colour and dash share one legend with the same settings: a legend=None on one of two channels of
        # one field makes Vega warn 'Conflicting legend property "disable"'
        color=alt.Color("source:N", title=None, scale=alt.Scale(domain=names, range=["#1f77b4", "#ff7f0e"]),
                        legend=alt.Legend(orient="bottom")),
        strokeDash=alt.StrokeDash("source:N", title=None, scale=alt.Scale(domain=names, range=[[1, 0], [5, 4]]),
                                  legend=alt.Legend(orient="bottom")),
        tooltip=["source:N", alt.Tooltip("step:Q"), alt.Tooltip("lr:Q", format=".3e")],
    ).properties(title=title, height=280)
