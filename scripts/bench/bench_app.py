"""How long the explorer page makes a user wait, measured on the server side, for the small preset.

    python scripts/bench/bench_app.py [--checkpoint news-small] [--repeat 3]

Prints: a cold first translation with all maps (TranslationModel.attend: decoding + one forward pass with
weights), the pure figure builders given cached maps (+ their JSON, which Streamlit sends), and a warm
rerun of the whole page after a head switch (Streamlit's AppTest, nothing recomputed but the figure).
Uses the checkpoint if it loads, else the untrained small model the app falls back to.
"""
from __future__ import annotations

import argparse
import statistics
import time

from app.checkpoints import UNTRAINED, checkpoints_dir, untrained_model
from app.startup import set_up_process
from app.figures.attention import head_view_figure, heatmap_figure, model_view_figure
from core import CheckpointError, load_checkpoint
from core.paths import REPO


FIG3 = ("It is in this spirit that a majority of American governments have passed new laws since 2009 "
        "making the registration or voting process more difficult.")


def timed(fn, repeat: int) -> tuple[float, object]:
    """Median seconds over `repeat` calls, and the last result."""
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def pick_model(name: str | None):
    for candidate in ([name] if name else []) + ["news-small", "multi30k-small"]:
        try:
            return candidate, load_checkpoint(checkpoints_dir() / candidate)
        except CheckpointError as e:
            print(f"  ({candidate}: {e})")
    return UNTRAINED, untrained_model()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--checkpoint", help="a folder name in checkpoints/ (default: news-small, else untrained)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-apptest", action="store_true", help="skip the whole-page rerun measurement")
    args = ap.parse_args()
    set_up_process()                # torch on one thread and the app's Plotly template, as in the app

    name, model = pick_model(args.checkpoint)
    cfg = model.cfg
    print(f"model: {name}  (N={cfg.N}/{cfg.N_dec}, h={cfg.h}, d_model={cfg.d_model})")
    for beam in (1, 4):
        sec, res = timed(lambda beam=beam: model.attend(FIG3, beam=beam), args.repeat)
        print(f"cold translation + all maps, beam {beam}: {sec:6.2f} s   "
              f"({len(res.src_tokens)} source, {len(res.tgt_tokens)} target tokens)")
    res = model.attend(FIG3)
    sec, _ = timed(lambda: model.attend(FIG3, tgt=res.tgt), args.repeat)
    print(f"teacher-forced maps only (no decoding):   {sec:6.2f} s")

    v = res.view("enc_self")
    builders = {
        "one head heatmap": lambda: heatmap_figure(v.maps[4, 0], v.rows, v.cols),
        "model view (all heads)": lambda: model_view_figure(v.maps, v.rows, v.cols, selected=(4, 0)),
        "head view (lines)": lambda: head_view_figure(v.rows, v.cols, v.maps[4]),
        "whole words (merge)": lambda: res.view("enc_self", words=True),
    }
    for label, build in builders.items():
        sec, fig = timed(build, args.repeat)
        line = f"build {label:<24} {sec * 1000:7.1f} ms"
        if hasattr(fig, "to_json"):
            js, text = timed(fig.to_json, args.repeat)
            line += f"   + JSON {js * 1000:6.1f} ms, {len(text) / 1e6:5.2f} MB"
        print(line)

    if not args.no_apptest:
        from streamlit.testing.v1 import AppTest
        at = AppTest.from_file(str(REPO / "app" / "main.py"), default_timeout=600)
        at.session_state["checkpoint"] = name
        t = time.perf_counter()
        at.run()
        print(f"page, first run (AppTest, includes loading): {time.perf_counter() - t:6.2f} s")
        for head in (1, 2, 3):
            t = time.perf_counter()
            at.selectbox(key="head").set_value(head).run()
            print(f"page rerun after a head switch:             {(time.perf_counter() - t) * 1000:7.1f} ms"
                  + ("  (exception!)" if at.exception else ""))


if __name__ == "__main__":
    main()
