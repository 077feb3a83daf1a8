"""Every cached computation of the app, under one key convention.

The key: a CheckpointKey (app.checkpoints: the checkpoint's name and the version of its weights) first, then the
page's choices. "Which checkpoint, which version" is answered once per rerun: app/main.py pins the checkpoint
picked in the sidebar (pin_checkpoint) and the page reads it (current_checkpoint); a page run on its own, as the
tests run them, answers it when it asks. An argument whose name starts with "_" is not part of a key (Streamlit's
rule): it is the object that the rest of the key stands for. Streamlit keys on the arguments as passed, so a
function with defaults calls its cached twin with every argument in place: one choice, one cache entry.

st.cache_data gives every call its own copy; st.cache_resource one object shared, read-only, by every session
(models, views, figures). Either computes a missing value once: a session that asks meanwhile waits for it.
"""
from __future__ import annotations

import contextlib
import contextvars
import json
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

from app.checkpoints import (UNTRAINED, CheckpointKey, checkpoint_folder, checkpoint_key, checkpoint_names,
                             languages, load_with_progress, untrained_model)
from app.demo import DOMAINS, demo_sentences
from app.figures.attention import ROW_PX, heatmap_figure
from app.figures.qk import qk_scatter, small_multiples
from app.figures.sdpa import collapse_table as sdpa_collapse_table
from app.figures.style import PRESENTER, readable
from app.figures.copy_task import head_map, heads_grid, training_figure
from app.figures.toy import cross_grid, loss_figure
from core import CheckpointError, TranslationModel
from core.checkpoint.snapshots import read_probes, snapshot_steps
from core.decoding_trace import TracedTranslation
from core.model.position_bias import learned_bias
from core.model.trace import Sampling
from core.datasets import WMT14
from core.paths import shared_data
from core.studies import ablation, analysis, compare, pronouns, qk
from core.studies import conllu
from core.studies import syntax as sx
from core.studies import emergence as emergence_study
from core.studies import alignment as al
from core.studies import alignment_gold as ag
from core.studies import contributions as contrib_study
from core.studies import copy_task, step_by_step, toy_task
from core.views import AttentionView

PINNED = "_checkpoint_this_run"      # session state: the key of the checkpoint of the rerun under way (app/main.py)
ATTENDING = "Translating and collecting every attention map…"


# ---- which checkpoint, which version: once per rerun ----

def pin_checkpoint(name: str) -> CheckpointKey:
    """Look up the version of the checkpoint picked for this rerun, once: every page's caches use this key."""
    st.session_state[PINNED] = checkpoint_key(name)
    return st.session_state[PINNED]


def unpin_checkpoint() -> None:
    """The rerun is over (app/main.py): the next one looks at the checkpoint's files again."""
    st.session_state.pop(PINNED, None)


def current_checkpoint() -> CheckpointKey:
    """The key of the checkpoint picked in the sidebar: the one pinned for this rerun, or (a page run on its own)
    the first checkpoint's, looked up now."""
    pinned = st.session_state.get(PINNED)
    return pinned if pinned is not None else checkpoint_key(st.session_state.get("checkpoint", checkpoint_names()[0]))


@contextlib.contextmanager
def progress_bar(start: str, doing: str):
    """A progress bar for a long batched computation: yields the progress(done, total) callback that core's batched
    functions take ("<doing>: 12 of 300 sentences…"); the bar is emptied afterwards, also on an error."""
    bar = st.progress(0.0, text=start)

    def progress(done, total):
        bar.progress(done / max(total, 1), text=f"{doing}: {done} of {total} sentences…")
    try:
        yield progress
    finally:
        bar.empty()


# ---- models and their attention ----

class LoadingBar:
    """The progress(fraction, text) callback that load_with_progress reports to: a bar made at the first report
    only (a model found in the cache reports nothing, so shows nothing) and emptied by close().

    Its Streamlit calls run in the caller's context, copied before the cached loader starts: st.cache_resource
    records every element made while its function runs and replays them on each later call, which would send the
    bar's every step again on every rerun. Called from inside another cached function, the bar is recorded with
    that one's elements, as any element made there, and replayed emptied."""

    def __init__(self, name: str):
        self.name, self._caller, self._bar = name, contextvars.copy_context(), None

    def __call__(self, done: float, text: str) -> None:
        self._caller.run(self._show, done, f"Loading '{self.name}': {text}")

    def _show(self, done: float, text: str) -> None:
        if self._bar is None:
            self._bar = st.progress(done, text=text)
        else:
            self._bar.progress(done, text=text)

    def close(self) -> None:
        """Empty the bar, if there is one (after the model is loaded, or failed to)."""
        if self._bar is not None:
            self._caller.run(self._bar.empty)


def load_model(key: CheckpointKey) -> TranslationModel:
    """One version of a checkpoint's model, loaded once per process with a progress bar; raises CheckpointError,
    also when it would not fit in the memory left (app.checkpoints.load_with_progress)."""
    bar = LoadingBar(key.name)
    try:
        return _load_model(key, bar)
    finally:
        bar.close()


@st.cache_resource(max_entries=4, show_spinner=False)      # the bar says it (LoadingBar)
def _load_model(key: CheckpointKey, _progress: LoadingBar) -> TranslationModel:
    if key.name == UNTRAINED:
        return untrained_model()
    return load_with_progress(checkpoint_folder(key.name), _progress)


def model_or_stop() -> tuple[CheckpointKey, TranslationModel]:
    """For pages: the current checkpoint's key and model, or a message and st.stop()."""
    key = current_checkpoint()
    try:
        return key, load_model(key)
    except CheckpointError as e:
        st.error(f"The checkpoint '{key.name}' cannot be loaded: {str(e).rstrip('.')}. Pick another in the sidebar.")
        st.stop()


def attend(key: CheckpointKey, src: str, tgt: str | None = None, beam: int = 1):
    """AttendResult for (checkpoint version, sentence, target, beam): switching layer or head reuses it."""
    return _attend(key, src, tgt, beam)


@st.cache_data(max_entries=64, show_spinner=ATTENDING)
def _attend(key: CheckpointKey, src: str, tgt: str | None, beam: int):
    return load_model(key).attend(src, tgt=tgt, beam=beam)


def attention_view(key: CheckpointKey, src: str, tgt: str | None = None, beam: int = 1, kind: str = "enc_self",
                   words: bool = False, specials: bool = True) -> AttentionView:
    """One kind of map of attend(...) labelled by core.views, built once per choice and shared read-only: a page
    that shows one head slices it (view.maps[layer, head])."""
    return _attention_view(key, src, tgt, beam, kind, words, specials)


@st.cache_resource(max_entries=64, show_spinner=False)
def _attention_view(key: CheckpointKey, src: str, tgt: str | None, beam: int, kind: str, words: bool,
                    specials: bool) -> AttentionView:
    return attend(key, src, tgt, beam).view(kind, words=words, specials=specials)


@st.cache_resource(max_entries=64, show_spinner=False)
def heatmap_frame(rows: tuple, cols: tuple, row_title: str, col_title: str, zmax, presenter: bool,
                  row_px: int = ROW_PX, words_on_top: bool = False, max_height: int | None = None) -> dict:
    """A styled one-head heatmap for these labels as a dict, shared by every session: switching the head (or the
    layer) only swaps in another map and title (heatmap_from_frame), instead of building a figure. row_px,
    words_on_top, max_height (before presenter mode's x1.5): as heatmap_figure takes them."""
    fig = heatmap_figure(np.zeros((len(rows), len(cols)), np.float32), list(rows), list(cols), zmax=zmax,
                         row_title=row_title, col_title=col_title, text_scale=PRESENTER if presenter else 1.0,
                         row_px=row_px, words_on_top=words_on_top, max_height=max_height)
    return readable(fig, presenter).to_dict()


# ---- the checkpoint page: heads over training ----

def _snapshots_version(name: str) -> str:
    """How many snapshots a checkpoint has and when the newest and probes.json were written: new ones rescore."""
    folder = checkpoint_folder(name) / "snapshots"
    try:
        files = sorted(folder.glob("step_*.npz")) + [folder / "probes.json"]
        return f"{len(files)}:" + ":".join(f"{p.name}@{p.stat().st_mtime_ns}" for p in files[-2:])
    except OSError:
        return "none"


def emergence(key: CheckpointKey):
    """(emergence table of every snapshot, unreadable steps, scores of the final weights), cached per version of
    the weights and of the snapshots."""
    return _emergence(key, _snapshots_version(key.name))


@st.cache_data(max_entries=8, show_spinner="Scoring every attention snapshot of the training run…")
def _emergence(key: CheckpointKey, snapshots_version: str):
    model = load_model(key)
    final = emergence_study.model_scores(model, model.card.steps, spread=True)
    if model.folder is None:
        return None, [], final
    table, unreadable = emergence_study.snapshot_scores({"sentences": read_probes(model.folder),
                                                         "pronouns": read_probes(model.folder, "pronouns")},
                                                        snapshot_steps(model.folder))
    return table, unreadable, final


# ---- What heads do ----

@st.cache_data(show_spinner="Scoring every head on the probe sentences…", max_entries=8)
def head_scores(key: CheckpointKey) -> pd.DataFrame:
    """Every head's scores (core.studies.analysis.head_scores)."""
    return analysis.head_scores(load_model(key))


@st.cache_data(show_spinner="Translating…", max_entries=64)
def translations_without(key: CheckpointKey, texts: tuple, heads: tuple) -> list:
    """Translations with some heads switched off (none: the normal ones)."""
    return ablation.translate_without(load_model(key), texts, heads)


@st.cache_data(show_spinner=False, max_entries=8)
def dev_slice(key: CheckpointKey, n: int):
    """(sources, references, where they come from) to measure BLEU on."""
    return ablation.dev_slice(load_model(key), n, name=key.name)


@st.cache_data(show_spinner="Running both models…", max_entries=16)
def comparison(a: CheckpointKey, b: CheckpointKey, sentence: str) -> compare.Comparison:
    """Two checkpoints' maps of one sentence, aligned (core.studies.compare)."""
    return compare.compare_results(*compare.attend_both(load_model(a), load_model(b), sentence))


# ---- What heads do: syntax ----

def _file_version(path: str) -> str:
    """A file's size and time of change ("missing" when it is not there): a changed file is read again."""
    try:
        st_ = Path(path).stat()
        return f"{st_.st_size}@{st_.st_mtime_ns}"
    except OSError:
        return "missing"


def ud_sentences(path: str):
    """(the gold-parsed sentences of a CoNLL-U file, None), or (None, why not) when it is missing or garbled."""
    return _ud_sentences(path, _file_version(path))


@st.cache_resource(max_entries=4, show_spinner="Reading the gold parses…")
def _ud_sentences(path: str, version: str):
    try:
        return conllu.read_conllu(path), None
    except conllu.SyntaxDataError as e:
        return None, str(e)


def syntax_report(key: CheckpointKey, path: str, n: int, min_arcs: int) -> sx.SyntaxReport:
    """core.studies.syntax's report of the checkpoint on the first n sentences of a CoNLL-U file (held out: the
    second half of them), computed once per checkpoint version and choice with a progress bar, shared read-only.
    SyntaxDataError when none can be used."""
    return _syntax_report(key, path, _file_version(path), n, min_arcs)


@st.cache_resource(max_entries=8, show_spinner=False)
def _syntax_report(key: CheckpointKey, path: str, version: str, n: int, min_arcs: int) -> sx.SyntaxReport:
    sentences = ud_sentences(path)[0][:n]
    with progress_bar(f"Running the encoder on {len(sentences)} gold-parsed sentences (once per checkpoint and "
                      "number of sentences)…", "Running the encoder") as progress:
        return sx.report(sx.evaluate(load_model(key), sentences, progress=progress), min_arcs)


@st.cache_resource(max_entries=64, show_spinner=False)
def _parsed_attention(key: CheckpointKey, parse: str, _sentence: conllu.UDSentence) -> sx.SentenceAttention:
    return sx.sentence_attention(attend(key, _sentence.text), _sentence)


def parsed_attention(key: CheckpointKey, sentence: conllu.UDSentence) -> sx.SentenceAttention:
    """One parsed sentence's word-level encoder self-attention; SyntaxDataError when it cannot be mapped."""
    return _parsed_attention(key, repr((sentence.text, sentence.words, sentence.heads, sentence.deprels)), sentence)


# ---- Which pronoun? ----

@st.cache_data(show_spinner=False)
def pronoun_set() -> list[dict]:
    return pronouns.load_pronoun_set()


@st.cache_data(show_spinner=False, max_entries=32)
def form_choice(key: CheckpointKey, src: str, tgt: str, pronoun: str) -> pronouns.FormChoice | None:
    """The model's probability of each German form of `pronoun` where `tgt` has one (None: it has none)."""
    return pronouns.form_probabilities(load_model(key), src, tgt, pronoun)


@st.cache_data(show_spinner=False, max_entries=32)
def gaze(key: CheckpointKey, src: str, tgt: str, pronoun: str, antecedent: str, written: str) -> pronouns.Gaze:
    """Where the model looked while it wrote the form `written` (core.studies.pronouns.gaze); ValueError if a word
    is missing."""
    return pronouns.gaze(attend(key, src, tgt), pronoun, antecedent, written)


@st.cache_data(show_spinner=False, max_entries=64)
def sentence_test(key: CheckpointKey, item: dict) -> tuple[float, float]:
    """log P of a set item's right and of its wrong German."""
    return pronouns.sentence_test(load_model(key), item)


# ---- Alignment ----

@st.cache_data(show_spinner=False, max_entries=4)
def gold_pairs(folder: str):
    """(pairs, None), or (None, why not) when the gold data is not there."""
    try:
        return ag.read_gold(folder), None
    except ag.AlignmentError as e:
        return None, str(e)


@st.cache_data(show_spinner=ATTENDING, max_entries=32)
def sentence_maps(key: CheckpointKey, src: str, tgt: str | None, folder: str, pair: int | None) -> al.SentenceMaps:
    """Word-level cross-attention of a sentence pair under every shift: gold pair number `pair` (0-based) of the
    gold in `folder`, or (None) the model's own words; AlignmentError (a ValueError) when it cannot be aligned."""
    gold = None if pair is None else gold_pairs(folder)[0][pair]
    return al.sentence_maps(attend(key, src, tgt), gold)


# ---- Queries and keys ----

def qk_sentences(key: CheckpointKey) -> tuple[list[dict], str]:
    """The sentence pairs of the view and where they come from: the checkpoint's sample, its dev data, or (about
    "") the demo sentences. Cached by where the dev set would be and whether it is there, so a dev set fetched (or
    a data folder moved) while the server runs is read, not an older answer."""
    dev = shared_data(WMT14) / "valid.en"           # scripts/get_data.py newstest: for any en -> de model
    return _qk_sentences(key, str(dev), dev.is_file())


@st.cache_data(show_spinner=False, max_entries=8)
def _qk_sentences(key: CheckpointKey, dev: str, dev_there: bool) -> tuple[list[dict], str]:
    model = load_model(key)
    pairs, about = qk.checkpoint_sample(model.folder, model.card)
    if pairs:
        return pairs, about
    if languages(model.card) == ("en", "de") and dev_there:
        pairs = qk.read_corpus(Path(dev).parent, "valid")
        return pairs, f"the first {len(pairs)} sentences of newstest2013, the paper's dev set"
    demo = list(dict.fromkeys(demo_sentences(model.card) + [s for _, ex in DOMAINS.values() for s in ex.values()]))
    return [{"src": s, "tgt": None} for s in demo], ""


def qk_vectors(key: CheckpointKey) -> dict:
    """{kind: core.studies.qk.QKSet} of qk_sentences, computed once per checkpoint version and set of sentences
    (with a progress bar) and read by every session; a session that asks meanwhile waits."""
    pairs, about = qk_sentences(key)
    return _qk_vectors(key, about, len(pairs))


@st.cache_resource(max_entries=2, show_spinner=False)
def _qk_vectors(key: CheckpointKey, about: str, n: int) -> dict:
    pairs = qk_sentences(key)[0]
    with progress_bar(f"Running the model on {len(pairs)} sentences and keeping every head's queries and keys "
                      "(once per checkpoint)…", "Running the model") as progress:
        return qk.collect(load_model(key), pairs, progress=progress)


def clear_qk_vectors() -> None:
    """Forget every checkpoint's vectors (the page's fetch button: they were computed without the data)."""
    _qk_vectors.clear()


@st.cache_resource(max_entries=64, show_spinner=False)
def qk_embedding(key: CheckpointKey, kind: str, layer: int, head: int, method: str, specials: bool,
                 _qks: qk.QKSet):
    """(points, coords, variance kept) of one head of qk_vectors(key)[kind] (core.studies.qk.head_embedding)."""
    qks = _qks.first_sentences(qk.TSNE_MAX_POINTS) if method == "tsne" else _qks
    return qk.head_embedding(qks, layer, head, method, specials)


@st.cache_resource(max_entries=16, show_spinner=False)
def qk_layer_embedding(key: CheckpointKey, kind: str, layer: int, specials: bool, _qks: qk.QKSet) -> list:
    """PCA of every head of one layer of qk_vectors(key)[kind] (core.studies.qk.layer_embeddings)."""
    return qk.layer_embeddings(_qks, layer, "pca", specials)


# Figures too: building one with thousands of points costs a second or two.
@st.cache_resource(max_entries=32, show_spinner=False)
def qk_scatter_figure(key: CheckpointKey, kind: str, layer: int, head: int, method: str, specials: bool,
                      color_by: str, words: tuple | None, mark: int | None, title: str, axes: tuple,
                      _embedded: tuple):
    """app.figures.qk.qk_scatter of qk_embedding(key, kind, layer, head, method, specials)."""
    points, coords, _ = _embedded
    return qk_scatter(points, coords, color_by, None if words is None else list(words), title=title,
                      axis_titles=axes, mark=mark)


@st.cache_resource(max_entries=16, show_spinner=False)
def qk_grid_figure(key: CheckpointKey, kind: str, layer: int, specials: bool, color_by: str, selected: int,
                   title: str, _embedded: list):
    """app.figures.qk.small_multiples of qk_layer_embedding(key, kind, layer, specials)."""
    return small_multiples(_embedded, color_by, title, selected=selected)


# ---- Attention, step by step ----

@st.cache_data(show_spinner=False)
def collapse_table(d_ks: tuple) -> pd.DataFrame:
    """app.figures.sdpa.collapse_table: the same for every run of the page."""
    return sdpa_collapse_table(list(d_ks))


@st.cache_resource(max_entries=32, show_spinner=ATTENDING)
def head_steps(key: CheckpointKey, src: str, kind: str, layer: int) -> step_by_step.HeadSteps:
    """Every head's q, k, v of one attention layer for one sentence and the model's own translation
    (core.studies.step_by_step.capture), shared read-only: a head or word switch only slices it."""
    return step_by_step.capture(load_model(key), src, kind=kind, layer=layer)


# ---- Watch it learn ----

def position_bias(key: CheckpointKey, span: int = 40) -> dict | None:
    """A T5 checkpoint's learned position bias per head over distance (core.model.position_bias.learned_bias), or
    None for a model with the paper's positions: its config.json says which, so no model is loaded for those."""
    try:
        positions = json.loads((checkpoint_folder(key.name) / "config.json").read_text(encoding="utf-8"))["positions"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return _position_bias(key, span) if positions == "relative" else None


@st.cache_data(max_entries=8, show_spinner=False)
def _position_bias(key: CheckpointKey, span: int) -> dict | None:
    return learned_bias(load_model(key).model, span)


@st.cache_resource
def toy_runs() -> toy_task.OneRunAtATime:
    """The server's one live toy training: every session of the process watches the same run."""
    return toy_task.OneRunAtATime()


@st.cache_resource(max_entries=8, show_spinner=False)
def toy_figures(run_id: str, step: int, presenter: bool, _run: toy_task.LiveRun, _snapshots: tuple) -> tuple:
    """(loss figure, cross-attention grid) of a run up to its snapshot at `step`, built once and sent to every
    watching session (thirty sessions polling would otherwise build thirty copies a second)."""
    cfg, last = _run.cfg, _snapshots[-1]
    done = [s for s in _snapshots if s.loss is not None]
    loss = loss_figure([s.step for s in done], [s.loss for s in done], toy_task.expected_loss_floor(cfg), cfg.steps)
    grid = cross_grid(last.cross, cfg.task, cfg.example, last.hits,
                      f"Cross-attention at step {last.step}")   # the page's caption says what to look for
    return readable(loss, presenter), readable(grid, presenter)



@st.cache_resource
def copy_runs() -> copy_task.OneCopyRunAtATime:
    """The server's one live Learn to copy training: every session of the process watches the same run."""
    return copy_task.OneCopyRunAtATime()


@st.cache_resource(max_entries=8, show_spinner=False)
def copy_figures(run_id: str, step: int, presenter: bool, _run: copy_task.LiveCopyRun, _snapshots: tuple) -> tuple:
    """(loss and induction score, the best head's map, every head's map) of a copy run up to its snapshot at
    `step`, built once and sent to every watching session, as toy_figures."""
    cfg, last = _run.cfg, _snapshots[-1]
    layer, head = last.best
    training = training_figure(list(_snapshots), cfg.threshold, cfg.steps)
    best = head_map(last.example[layer, head], last.example_ids, layer, head, last.best_induction, last.step)
    every = heads_grid(last.example, last.induction)
    return readable(training, presenter), readable(best, presenter), readable(every, presenter)

# ---- Beyond attention weights: norm-based maps and ALTI+ ----

@st.cache_resource(max_entries=32, show_spinner="Measuring what each word contributes…")
def contributions(key: CheckpointKey, src: str, tgt: str | None = None, beam: int = 1) -> contrib_study.Contributions:
    """core.studies.contributions of a sentence, computed once per (checkpoint version, sentence, target, decoding)
    and shared read-only; ValueError for bad input, as attend."""
    return contrib_study.contributions(load_model(key), src, tgt, beam)


@st.cache_resource(max_entries=64, show_spinner=False)
def contribution_view(key: CheckpointKey, src: str, tgt: str | None, beam: int, kind: str, weights: str,
                      words: bool = False, specials: bool = True) -> AttentionView:
    """One kind of map under `weights` ("attention", "norm", "alti"), labelled as attention_view labels it; a
    layer-only map (ALTI+) is shown for every head. Shared read-only: a page slices view.maps[layer, head]."""
    if weights == "attention":
        return attention_view(key, src, tgt, beam, kind, words, specials)
    view = contributions(key, src, tgt, beam).view(kind, weights, words, specials)
    h = load_model(key).cfg.h
    if view.maps.shape[1] != h:
        view.maps = np.broadcast_to(view.maps, (view.maps.shape[0], h, *view.maps.shape[2:]))
    return view


# ---- How it writes ----

@st.cache_resource(max_entries=16, show_spinner="The model is writing its translation, step by step…")
def decoding_trace(key: CheckpointKey, src: str, beam: int, alpha: float, prefix: tuple | None = None,
                   sampling: tuple | None = None) -> TracedTranslation:
    """TranslationModel.trace of a sentence, shared read-only: a step change only reads it. prefix: target ids to
    force first; sampling: (temperature, top_k, top_p, seed) to draw at random instead. ValueError for bad input."""
    return load_model(key).trace(src, beam=beam, alpha=alpha, prefix=list(prefix) if prefix else None,
                                 sampling=Sampling(*sampling) if sampling else None)


# ---- Why this and not that? ----

@st.cache_resource(max_entries=32, show_spinner="Asking why this word and not the other…")
def contrast(key: CheckpointKey, src: str, prefix: tuple, chosen: tuple, other: tuple, method: str):
    """TranslationModel.contrast at one step, shared read-only: prefix, chosen and other as target ids (How it
    writes) or text in 1-tuples (Which pronoun?). ValueError for anything that cannot be asked."""
    def arg(x):
        return x[0] if len(x) == 1 and isinstance(x[0], str) else list(x)
    return load_model(key).contrast(src, arg(prefix) if prefix else None, arg(chosen), arg(other), method=method)

