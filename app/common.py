"""What every page shares: the checkpoint picker in the sidebar, the cached model and cached attention."""
from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import streamlit as st
import torch

from app.demo import DOMAINS, domain
from app.figures.export import FORMATS, export_problem, figure_spec, is_plotly, render
from app.figures.style import install, readable
from core import CheckpointError, Transformer, TranslationModel, load_checkpoint, preset
from core.checkpoint import read_card
from core.paths import REPO

install()              # readable text in every Plotly figure built from now on (after Streamlit set its own default)

# One sentence at a time means tiny matrix products: one thread is as fast, and on a busy machine several
# threads spin-wait for each other (measured: a cold translation took 31 s on 2 threads, 3.8 s on 1).
torch.set_num_threads(int(os.environ.get("ATTN_EXPLORER_THREADS", "1")))

CHECKPOINTS = REPO / "checkpoints"      # default; the env var ATTN_EXPLORER_CHECKPOINTS overrides it (tests)
UNTRAINED = "(untrained model)"


def checkpoints_dir() -> Path:
    """The folder of checkpoints, read at every call so that tests can point it at a temporary folder."""
    return Path(os.environ.get("ATTN_EXPLORER_CHECKPOINTS") or CHECKPOINTS)


def checkpoint_names() -> list[str]:
    """Folders of checkpoints/ that look like checkpoints, then the untrained fallback."""
    names = sorted(p.name for p in checkpoints_dir().glob("*")        # dot-folders are half-written imports
                   if not p.name.startswith(".") and (p / "config.json").exists())
    return names + [UNTRAINED]


def checkpoint_version(name: str) -> str:
    """Folder and weights' modification time: a checkpoint rewritten by training is loaded afresh. A cache of
    anything computed from a model is keyed on it (with the name), never on id(model)."""
    if name == UNTRAINED:
        return UNTRAINED
    weights = checkpoints_dir() / name / "model.safetensors"
    try:
        return f"{weights}@{weights.stat().st_mtime_ns}"
    except OSError:
        return str(weights)


def get_model(name: str) -> TranslationModel:
    """The model, loaded once per process (and per version of its weights); raises CheckpointError."""
    return _load_model(name, checkpoint_version(name))


@st.cache_resource(max_entries=4, show_spinner="Loading the model…")
def _load_model(name: str, version: str) -> TranslationModel:
    if name == UNTRAINED:
        return untrained_model()
    return load_checkpoint(checkpoints_dir() / name)


def untrained_model() -> TranslationModel:
    """A freshly initialised small model with a byte-level tokenizer, for when no checkpoint exists."""
    from app.fallback_tokenizer import fallback_tokenizer
    tok = fallback_tokenizer()
    cfg = preset("small", vocab_size=len(tok), dropout=0.0)
    # the same "untrained model" in every process, without touching the global RNG
    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = Transformer(cfg)
    return TranslationModel(model, tok, {"name": UNTRAINED, "trained_here": False,
                                         "note": "freshly initialised: its attention is noise"})


def get_attention(name: str, src: str, tgt: str | None = None, beam: int = 1):
    """AttendResult for (checkpoint, sentence, target, beam): switching layer or head reuses it."""
    return _attention(name, checkpoint_version(name), src, tgt, beam)


@st.cache_data(max_entries=64, show_spinner="Translating and collecting every attention map…")
def _attention(name: str, version: str, src: str, tgt: str | None, beam: int):
    return get_model(name).attend(src, tgt=tgt, beam=beam)


def _snapshots_version(name: str) -> str:
    """How many snapshots a checkpoint has and when the newest and probes.json were written: new ones rescore."""
    folder = checkpoints_dir() / name / "snapshots"
    try:
        files = sorted(folder.glob("step_*.npz")) + [folder / "probes.json"]
        return f"{len(files)}:" + ":".join(f"{p.name}@{p.stat().st_mtime_ns}" for p in files[-2:])
    except OSError:
        return "none"


def get_emergence(name: str):
    """(emergence table of every snapshot, unreadable steps, scores of the final weights), cached per version."""
    return _emergence(name, checkpoint_version(name), _snapshots_version(name))


@st.cache_data(max_entries=8, show_spinner="Scoring every attention snapshot of the training run…")
def _emergence(name: str, version: str, snapshots_version: str):
    from app.figures.training import read_probes, snapshot_steps
    from core.studies import emergence
    model = get_model(name)
    final = emergence.model_scores(model, model.card.steps)
    if model.folder is None:
        return None, [], final
    table, unreadable = emergence.snapshot_scores({"sentences": read_probes(model.folder),
                                                   "pronouns": read_probes(model.folder, "pronouns")},
                                                  snapshot_steps(model.folder))
    return table, unreadable, final


def current_model_name() -> str:
    return st.session_state.get("checkpoint", checkpoint_names()[0])


def card_domain(name: str) -> str | None:
    """The domain ('captions', 'news') of a checkpoint's training data, read from its card.json alone."""
    if name == UNTRAINED:
        return None
    try:
        return domain(read_card(checkpoints_dir() / name))
    except (OSError, ValueError):
        return None


def preferred_checkpoint(names: list[str], prefer_domain: str | None) -> str:
    """The first checkpoint trained on `prefer_domain`, else the first one."""
    return next((n for n in names if prefer_domain and card_domain(n) == prefer_domain), names[0])


def _picked() -> None:
    st.session_state.checkpoint_picked = True


def sidebar(prefer_domain: str | None = None) -> None:
    """Checkpoint picker, its card and the presenter switch; a broken checkpoint shows a message and the others
    stay pickable. Until someone picks a checkpoint, a page with a prefer_domain gets a checkpoint of that domain."""
    names = checkpoint_names()
    if not st.session_state.get("checkpoint_picked") or st.session_state.get("checkpoint") not in names:
        st.session_state.checkpoint = preferred_checkpoint(names, prefer_domain)
    with st.sidebar:
        st.toggle("Presenter mode", key="presenter",
                  help="Larger text in every figure, to read it from the back of a room on a projector. "
                       "For the page's own text, zoom the browser (Ctrl and +).")
        name = st.selectbox("Checkpoint", names, key="checkpoint", on_change=_picked,
                            help="Models in the checkpoints/ folder. Pick another if one fails to load.")
        try:
            model = get_model(name)
        except CheckpointError as e:
            st.error(f"This checkpoint cannot be loaded: {e}\n\nPick another one above.")
            return
        card = model.card
        if name == UNTRAINED:
            st.warning("No trained checkpoint is loaded: this model is freshly initialised, "
                       "so its attention patterns are random.")
        elif not card.trained_here:
            st.info(f"Imported, not trained here: {card.source or 'see its card'}.")
        cfg = model.cfg
        st.caption(f"N={cfg.N} encoder / {cfg.N_dec} decoder layers, h={cfg.h} heads, d_model={cfg.d_model}")
        if name != UNTRAINED:
            st.caption(f"Trained on {DOMAINS[domain(card)][0]}: it translates such sentences best.")
        if card.test:
            st.caption("Test: " + ", ".join(f"{k} {v}" for k, v in card.test.items() if isinstance(v, (int, float))))


def plain(text: str) -> str:
    """Backslash-escape Markdown so that text (typed by a user, or naming <s> and </s>) shows exactly as written."""
    return re.sub(r"([\\`*_{}\[\]()#+\-.!|<>~$:])", r"\\\1", text)


def model_or_stop() -> tuple[str, TranslationModel]:
    """For pages: the current checkpoint name and model, or a message and st.stop()."""
    name = current_model_name()
    try:
        return name, get_model(name)
    except CheckpointError as e:
        st.error(f"The checkpoint '{name}' cannot be loaded: {e}. Pick another in the sidebar.")
        st.stop()


def log_run(started: float, page: str) -> None:
    """If the env var ATTN_EXPLORER_RUN_LOG names a file, append this script run's duration to it as a JSON line
    (scripts/bench/bench_class.py reads it); otherwise do nothing."""
    path = os.environ.get("ATTN_EXPLORER_RUN_LOG")
    if path:
        line = json.dumps({"t": time.time(), "seconds": time.perf_counter() - started, "page": page}) + "\n"
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())      # one append of one short line: lines of concurrent runs never mix
        finally:
            os.close(fd)


def presenter_mode() -> bool:
    """Whether the sidebar's presenter switch is on (bigger type for a projector)."""
    return bool(st.session_state.get("presenter"))


def show_figure(fig, name: str, key: str | None = None, styled: bool = False, **chart_kwargs):
    """Draw a Plotly or Altair figure with PNG and SVG downloads; returns what st.plotly_chart/altair_chart return.

    name: the file name without extension. styled: the figure already went through app.figures.style.readable
    for the current presenter setting (restyling a Plotly figure costs tens of ms). chart_kwargs go to the
    chart call (e.g. on_select=...).
    """
    if not styled:
        fig = readable(fig, presenter=presenter_mode())
    plotly = is_plotly(fig)
    if plotly:
        state = st.plotly_chart(fig, key=key, theme=None, config={      # theme=None: keep our template's text
            "displaylogo": False, "toImageButtonOptions": {"format": "png", "filename": name, "scale": 2}},
            **chart_kwargs)
    else:
        state = st.altair_chart(fig, key=key, **chart_kwargs)
    download_menu(fig, name, key)
    return state


def download_menu(fig, name: str, key: str | None = None) -> None:
    """A small popover with PNG and SVG buttons. The file is drawn only when a button is clicked
    (kaleido needs seconds a figure), on Streamlit's download thread, and cached by the figure's JSON.
    Without a key, Streamlit tells the buttons apart by their file names."""
    plotly = is_plotly(fig)
    sub = (lambda part: f"download:{key}{part}") if key else (lambda part: None)
    with st.popover("⬇ PNG / SVG", key=sub(""), help="Save this figure as an image file"):
        problem = export_problem(plotly)
        if problem:
            st.info(problem)
            return
        cols = st.columns(len(FORMATS))
        for col, (fmt, mime) in zip(cols, FORMATS.items()):
            col.download_button(fmt.upper(), data=lambda fmt=fmt: render(figure_spec(fig), fmt, plotly),
                                file_name=f"{name}.{fmt}", mime=mime, key=sub(f":{fmt}"),
                                on_click="ignore")
        st.caption("Drawing the file takes a few seconds after the click.")
