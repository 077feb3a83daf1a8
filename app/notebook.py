"""The explorer in a notebook (Jupyter, VS Code, Colab): the app's own figures, without Streamlit.

    from app.notebook import load, head_map
    tm = load("news-small")                                   # a folder of checkpoints/, or any checkpoint path
    tm = load("Helsinki-NLP/opus-mt-en-de")                   # a Hugging Face model, downloaded and converted once
    head_map(tm, "The cat sat on the mat.", layer=5, head=2)  # the last value of a cell is drawn
    lm = load("openai-community/gpt2")                        # a language model (GPT-2, Llama, BERT…) too:
    head_map(lm, "The cat sat on the mat.", layer=5, head=2)  # its one kind of map, self-attention

Each function returns the Plotly figure the app draws for the same choice (app/figures' builders, in the app's
style), so it renders wherever Plotly does and saves with fig.write_html("map.html") or fig.write_image("map.png").
Layers and heads count from 1, as on every page and in the paper. kind: "enc_self" (encoder self-attention),
"dec_self" (decoder self-attention) or "cross" (encoder-decoder). tgt: a translation to read (teacher-forced), or
None for the model's own. weights: "attention" (the weights), "norm" (weighted by value size, Kobayashi et al.
2020) or "alti" (contributions, ALTI+, Ferrando et al. 2022). docs/notebook.md shows them all.

Here, not in core/: it draws with app/figures, and core/ knows nothing of the app. It imports no Streamlit.
"""
from __future__ import annotations

from pathlib import Path

import plotly.graph_objects as go

from app.checkpoints import DECODER_ONLY, checkpoint_folder, is_language_model, load_with_progress, model_family
from app.figures import style
from app.figures.attention import COL_TITLES, ROW_TITLES, head_view_figure, heatmap_figure, model_view_figure
from app.figures.contrast import attention_of, contrast_figure
from app.figures import copy_task as copy_figs
from app.figures.contributions import source_share_figure
from app.figures.decoding import beam_tree_figure, candidates_figure
from app.figures.paper import figure_set, find_heads
from app.figures.report import sentence_report
from app.figures.training import describe_model
from app.lm import views as lm_views
from core import TranslationModel
from core.checkpoint import atomic_write
from core.checkpoint.pretrained import is_pretrained_source, pretrained_checkpoint
from core.studies import contributions as contrib
from core.studies import copy_task
from core.studies import paper_figures as pf
from core.views import KINDS, AttentionView, check_kind

style.install()                  # the app's Plotly template: the figures look as they do on its pages
MAIN_PICTURE = {3: "figure3", 4: "figure4_its"}       # Figure 5: its first head's picture
BEST_HEADS = {3: 1, 4: 2, 5: 2}    # heads drawn unless chosen: as many as the paper draws, as the app's page does


def load(checkpoint: str | Path = "news-small", src_lang: str | None = None, tgt_lang: str | None = None,
         revision: str | None = None) -> TranslationModel:
    """A checkpoint by its folder name in checkpoints/ (news-small, multi30k-small, an imported model) or by path,
    or a Hugging Face model by its Hub id or downloaded folder (converted once: core.checkpoint.pretrained; src_lang
    and tgt_lang pick a many-to-many model's direction, e.g. "en_XX", "de_DE" for mBART-50). Refused with a
    readable CheckpointError (HFImportError for a Hub model) when it is missing, broken or too big for the memory
    left."""
    folder = Path(checkpoint)
    if not folder.is_dir() and checkpoint_folder(str(checkpoint)).is_dir():
        folder = checkpoint_folder(str(checkpoint))
    elif is_pretrained_source(checkpoint):
        folder = pretrained_checkpoint(checkpoint, revision, src_lang, tgt_lang)
    return load_with_progress(folder)


def view(tm: TranslationModel, src: str, tgt: str | None = None, kind: str = "enc_self", words: bool = False,
         weights: str = "attention", specials: bool = True, beam: int = 1) -> AttentionView:
    """One kind of map of a sentence, labelled as every page labels it (core.views): view.maps (layers, heads,
    rows, cols), view.rows, view.cols. Contributions (weights="alti") are one map per layer, shown for each head.
    A language model (load() of GPT-2, Llama, BERT…) has one kind of map, its self-attention: kind is then ignored,
    and tgt is an encoder-only model's second sentence."""
    if is_language_model(tm):
        return _lm_view(tm, src, tgt, weights)
    check_kind(kind)
    if weights == "attention":
        return tm.attend(src, tgt, beam=beam).view(kind, words=words, specials=specials)
    v = contrib.contributions(tm, src, tgt, beam).view(kind, weights, words, specials)
    if v.maps.shape[1] != tm.cfg.h:
        v.maps = v.maps.repeat(tm.cfg.h, axis=1)
    return v


def _lm_view(lm, text: str, pair: str | None, weights: str) -> AttentionView:
    """A language model's self-attention of a text, labelled as the explorer labels it (app.lm.views)."""
    if weights != "attention":
        raise ValueError("A language model's maps are its attention weights: weights='attention' only.")
    if pair is not None and model_family(lm) == DECODER_ONLY:
        raise ValueError("A decoder-only language model reads one text: put the second sentence after the first.")
    return lm_views.lm_view(lm, lm.attend(text) if pair is None else lm.attend(text, pair))


def _titles(tm, kind: str) -> tuple[str, str, str]:
    """(map title, row title, column title) of a kind of map, or of a language model's one kind."""
    if is_language_model(tm):
        return lm_views.title(tm), lm_views.ROW_TITLE, lm_views.COL_TITLE
    return KINDS[kind], ROW_TITLES[kind], COL_TITLES[kind]


def _index(n: int, i: int, what: str) -> int:
    """A 1-based layer or head -> its 0-based index, or a ValueError that says the range."""
    if not 1 <= int(i) <= n:
        raise ValueError(f"There is no {what} {i}: this model has {what}s 1 to {n}.")
    return int(i) - 1


def head_map(tm: TranslationModel, src: str, tgt: str | None = None, kind: str = "enc_self", layer: int = 1,
             head: int = 1, words: bool = False, weights: str = "attention", zmax: float | None = 1.0) -> go.Figure:
    """One head's map as a heatmap (the explorer's 'One head'); zmax None stretches the colours to its top weight.
    A language model: head_map(lm, text, layer=2, head=3) (tgt: an encoder-only model's second sentence)."""
    v = view(tm, src, tgt, kind, words, weights)
    L, H = v.maps.shape[:2]
    li, hi = _index(L, layer, "layer"), _index(H, head, "head")
    title, row_title, col_title = _titles(tm, kind)
    return heatmap_figure(v.maps[li, hi], v.rows, v.cols, f"{title}, layer {layer} of {L}, head {head} of {H}",
                          zmax=zmax, row_title=row_title, col_title=col_title)


def model_view(tm: TranslationModel, src: str, tgt: str | None = None, kind: str = "enc_self", words: bool = False,
               weights: str = "attention", zmax: float | None = 1.0) -> go.Figure:
    """Every layer (rows) and head (columns) as small maps on one colour scale (the explorer's 'All heads')."""
    v = view(tm, src, tgt, kind, words, weights)
    return model_view_figure(v.maps, v.rows, v.cols, title=_titles(tm, kind)[0], zmax=zmax)


def head_view(tm: TranslationModel, src: str, tgt: str | None = None, kind: str = "enc_self", layer: int = 1,
              heads=None, focus: str | None = None, words: bool = True, layout: str = "columns") -> go.Figure:
    """The paper's lines, one per weight, one colour per head (the explorer's 'Head view'). heads: 1-based heads to
    draw (default all); focus: a word (or piece) of the rows whose lines alone are drawn; layout "rows": the paper's."""
    v = view(tm, src, tgt, kind, words)
    L, H = v.maps.shape[:2]
    li = _index(L, layer, "layer")
    shown = None if heads is None else [_index(H, k, "head") for k in heads]
    at = None                  # find_words / find_pieces raise a ValueError that lists the sentence's words
    if focus is not None:
        at = (pf.find_words(v.rows, focus) if words else pf.find_pieces(v.rows, focus))[0]
    return head_view_figure(v.rows, v.cols, v.maps[li], heads=shown, focus=at, layout=layout,
                            title=f"{_titles(tm, kind)[0]}, layer {layer}: the stronger the weight, the bolder "
                                  "its line")


def paper_heads(tm: TranslationModel, number: int = 3, words: bool = True) -> pf.FigureHeads:
    """The heads of the paper's Figure 3, 4 or 5, found by score on the paper's own sentence: .layer and .heads
    (0-based, as the arrays), .best (the best head's row of .scores), .linked (whether any head links the words)."""
    if number not in pf.FIGURES:
        raise ValueError(f"the paper's attention figures are {sorted(pf.FIGURES)}, not {number}")
    sentence = pf.FIGURES[number][1]
    return find_heads(number, tm.attend(sentence), sentence, words)[0]


def paper_figure(tm: TranslationModel, number: int = 3, heads=None, words: bool = True) -> go.Figure:
    """The paper's Figure 3 ('making … more difficult'), 4 ('its' → 'Law') or 5 drawn for this model in the paper's
    style, on the layer found by score (paper_heads) and its best heads (one for Figure 3, two for 4 and 5, as the
    paper draws), or the 1-based heads given of that layer."""
    sentence = pf.FIGURES.get(number, (None, None))[1]
    if sentence is None:
        raise ValueError(f"the paper's attention figures are {sorted(pf.FIGURES)}, not {number}")
    found, v = find_heads(number, tm.attend(sentence), sentence, words)
    chosen = (pf.top_heads(found.scores, found.layer, BEST_HEADS[number]) if heads is None
              else [_index(tm.cfg.h, k, "head") for k in heads])
    figures = figure_set(number, v, found.layer, chosen)
    return figures.get(MAIN_PICTURE.get(number), next(iter(figures.values())))


def contributions_map(tm: TranslationModel, src: str, tgt: str | None = None, kind: str = "cross",
                      layer: int | None = None, words: bool = True) -> go.Figure:
    """What each input word has contributed to each row through every layer up to `layer` (1-based; default the
    last): ALTI+, residual connections and LayerNorm included (the explorer's 'Show: contributions'). For the
    per-head maps weighted by value size, head_map(..., weights="norm")."""
    v = view(tm, src, tgt, kind, words, "alti")
    L = v.maps.shape[0]
    li = L - 1 if layer is None else _index(L, layer, "layer")
    return heatmap_figure(v.maps[li, 0], v.rows, v.cols, f"{KINDS[kind]}, layer {li + 1} of {L}: contributions "
                                                         "(ALTI+)", zmax=None)


def source_share(tm: TranslationModel, src: str, tgt: str | None = None) -> go.Figure:
    """One bar per translated word: how much of its prediction came from the source and how much from the words
    written before it (ALTI+)."""
    words, share = contrib.word_shares(contrib.contributions(tm, src, tgt))
    return source_share_figure(words, share, "Where each translated word came from")


def why(tm: TranslationModel, text: str, prefix: str, chosen: str, other: str, method: str = "erasure",
        layer: int | None = None, head: int | None = None) -> go.Figure:
    """Why `chosen` and not `other` after `prefix` (the target words already written, "" for the first word)?
    Each source word's push towards chosen (red, +) or other (blue, -) by `method` ("erasure": the word left out,
    the reference; "gradient", "integrated", "alti_logit"), beside the same step's cross-attention (one 1-based
    layer and head, or means) and the earlier target words' pushes (TranslationModel.contrast; How it writes)."""
    c = tm.contrast(text, prefix, chosen, other, method=method)
    li = None if layer is None else _index(tm.cfg.N_dec, layer, "layer")
    hi = None if head is None else _index(tm.cfg.h, head, "head")
    attention, label = attention_of(c.cross, li, hi)
    return contrast_figure(c.src_words, c.src_scores, attention, c.chosen, c.other, method, label, c.tgt_words,
                           c.tgt_scores, f"Why '{c.chosen}' and not '{c.other}'? (log P difference {c.log_odds:+.2f})")


def head_atlas(tm: TranslationModel, compute: bool = True) -> go.Figure:
    """Every head of every kind coloured by its strongest role over a corpus (the Atlas tab of What heads do):
    the checkpoint's atlas.json, or computed here (a minute or a few; not saved) when it has none and compute."""
    from app.checkpoints import languages
    from app.figures.atlas import atlas_figure
    from core.studies import atlas as core_atlas
    found = core_atlas.read_atlas(tm.folder) if tm.folder else None
    if found is None and is_language_model(tm) and compute:
        from core.studies.lm_atlas import compute_lm_atlas
        found = compute_lm_atlas(tm, name=tm.card.name or "")
    if found is None:
        sentences, pairs, notes = core_atlas.load_corpora(languages(tm.card))
        if not compute or not (sentences or pairs):
            raise ValueError("This model has no atlas. " + " ".join(notes or ["compute=True computes one."]))
        found = core_atlas.compute_atlas(tm, sentences, pairs, tm.card.name or "")
    return atlas_figure(found)


def next_pieces(tm: TranslationModel, src: str, step: int | None = None, beam: int = 1, prefix: str | None = None,
                temperature: float = 1.0, top_k: int = 10) -> go.Figure:
    """The candidates for the next piece at one step (1-based; default: the first after the prefix) of the model's
    translation ("How it writes"): their probabilities as bars, coloured by what the search did with them, on the
    winner's way. prefix: German words to force first; temperature: redraw the bars as softmax(log P / T) (the
    search itself uses 1)."""
    tr = tm.trace(src, beam=beam, prefix=prefix, top_k=top_k)
    t = min(tr.forced, len(tr.steps) - 1) if step is None else _index(len(tr.steps), step, "step")
    return candidates_figure(tr, t, dict(tr.search.path()).get(t, 0), temperature)


def beam_tree(tm: TranslationModel, src: str, beam: int = 4, alpha: float = 0.6, step: int | None = None,
              window: int | None = None) -> go.Figure:
    """The beam search as a tree of hypotheses over the steps ("How it writes"): the winner's way red, pruned lines
    grey, finished hypotheses as stars with their scores on hover. step (1-based) is shaded; window: how many steps
    the x axis shows (default all of them; drag to scroll)."""
    tr = tm.trace(src, beam=beam, alpha=alpha)
    t = None if step is None else _index(len(tr.steps), step, "step")
    return beam_tree_figure(tr, t, window or len(tr.steps) + 1, f"Beam search, {beam} beams: {tr.translation}")


def report(tm: TranslationModel, src: str, tgt: str | None = None, beam: int = 1, words: bool = True,
           path: str | Path | None = None) -> str:
    """One sentence's every map (each kind, layer and head, switchable) with its translation, the checkpoint's name
    and card summary and the date, as one HTML file that opens offline (Plotly's JavaScript inside, ~5 MB); returned
    as text, and written to `path` when given. A language model: its text's self-attention, what it makes of the
    text, and the head finder's grids (app/lm/report.py; tgt: an encoder-only model's second sentence)."""
    if is_language_model(tm):
        from app.lm.report import report as lm_report
        page = lm_report(tm, src, tgt)
    else:
        page = sentence_report(tm.attend(src, tgt, beam=beam), tm.card.name or "checkpoint",
                               describe_model(tm.card, tm.cfg), words=words)
    if path is not None:
        atomic_write(path, page)              # the project's one atomic write: never half a report on disk
    return page


# ---- Watch it learn's Learn to copy: a GPT's induction head forming ----

def learn_to_copy(steps: int = 600, seed: int = 0, progress: bool = True, **settings) -> copy_task.CopyResult:
    """Trains Watch it learn's GPT (2 layers, attention only) on repeated random tokens until an induction head forms
    (core.studies.copy_task.train: a few seconds on one CPU thread); settings: other CopyConfig fields (h, d_model,
    lr, ...). The result's .snapshots hold every head's scores every 25 steps, .phase_change the step it formed."""
    import torch
    from tqdm.auto import tqdm
    cfg = copy_task.CopyConfig(steps=steps, seed=seed, **settings)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)              # tiny matrices: two threads wait on each other (core/studies/copy_task.py)
    bar = tqdm(total=steps, desc="Learn to copy", unit="step", disable=not progress)
    try:
        return copy_task.train(cfg, on_snapshot=lambda s: bar.update(s.step - bar.n))
    finally:
        bar.close()
        torch.set_num_threads(threads)


def phase_change(result: copy_task.CopyResult) -> go.Figure:
    """The training loss and the best head's induction score over the steps, the phase change marked (Watch it
    learn's figure)."""
    return copy_figs.training_figure(result.snapshots, result.threshold, result.steps)


def induction_map(result: copy_task.CopyResult, step: int | None = None, layer: int | None = None,
                  head: int | None = None) -> go.Figure:
    """One head's map on the held-out repeated sequence at the snapshot of `step` (None: the last), the cells an
    induction head picks outlined; layer and head count from 1 (None: the best head then)."""
    snaps = result.snapshots
    snap = snaps[-1] if step is None else min(snaps, key=lambda s: abs(s.step - step))
    best = snap.best
    lay = best[0] if layer is None else _index(snap.induction.shape[0], layer, "layer")
    hd = best[1] if head is None else _index(snap.induction.shape[1], head, "head")
    return copy_figs.head_map(snap.example[lay, hd], snap.example_ids, lay, hd, float(snap.induction[lay, hd]),
                              snap.step)
