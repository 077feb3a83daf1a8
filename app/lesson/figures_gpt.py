"""The lesson's figures of a decoder-only model (a GPT): "GPT is the decoder alone" (the paper's diagram less the
encoder, then a GPT's self-attention map beside the class's translation decoder's, both causal) and "A head that
copies" (the induction head of checkpoints/tiny-copy on a repeated sequence).

Both use the shipped tiny-copy whatever the class's checkpoint is: loaded once per version of its weights through
core's one checkpoint loader. Pure like app.lesson.figures (no Streamlit); listed in its FIGURES.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from app.checkpoints import DECODER_ONLY, UNTRAINED, CheckpointKey, checkpoints_dir
from app.figures import architecture, attention
from app.demo import default_sentence
from app.lesson.kinds import Answer, Before, LessonFigure
from app.text import md_escape
from core import CheckpointError, load_checkpoint
from core.model.families import family_of
from core.paths import REPO
from core.studies import copy_task, induction

GPT = "tiny-copy"                       # the shipped decoder-only model (scripts/recipes/tiny-copy.sh)
SEQUENCE = "Q 4 B X 7 M K Q 4 B X 7 M K"   # seven of its tokens, twice: its tokenizer's letters and digits
SIDE_PX = 240                           # px of one of the two maps side by side
SHOWN_PIECES = 14                       # of the translation decoder's map: an untrained model writes to its limit


def short(word: str, n: int) -> str:
    return word if len(word) <= n else word[: n - 1] + "…"


def sentence(model, options) -> str:
    """The step's English sentence, else the checkpoint's own example (as app.lesson.figures picks it)."""
    return options.get("sentence") or default_sentence(model.card)


def gpt_folder():
    """checkpoints/tiny-copy of the app's checkpoints folder, else the repository's (where it is committed)."""
    for folder in (checkpoints_dir() / GPT, REPO / "checkpoints" / GPT):
        if (folder / "config.json").exists():
            return folder
    return None


def _gpt() -> tuple[CheckpointKey, str]:
    """(the key of this version of the tiny GPT, its folder), or ValueError saying how to make it."""
    folder = gpt_folder()
    if folder is None:
        raise ValueError(f"this step shows the small GPT '{GPT}', which is not in {checkpoints_dir()}: make it with "
                         f"`bash scripts/recipes/{GPT}.sh` (seconds on a laptop)")
    weights = folder / "model.safetensors"
    version = f"{weights}@{weights.stat().st_mtime_ns}" if weights.exists() else str(weights)
    return CheckpointKey(GPT, version), str(folder)


def gpt_model():
    """The tiny GPT (core.language_model.LanguageModel), or ValueError saying how to make it."""
    return _load(*_gpt())


def gpt_version() -> str:
    """Which version of the tiny GPT the steps would draw ("missing" where there is none): part of their cache key."""
    try:
        return _gpt()[0].version
    except ValueError:
        return "missing"


@lru_cache(maxsize=2)                   # the key holds the weights' modification time: retrained, loaded again
def _load(key: CheckpointKey, folder: str):
    try:
        gpt = load_checkpoint(folder)
    except CheckpointError as e:
        raise ValueError(f"the small GPT '{GPT}' cannot be loaded: {e}") from None
    if family_of(gpt.cfg) != DECODER_ONLY:
        raise ValueError(f"{folder} holds a {family_of(gpt.cfg)} model, not the small GPT these steps need")
    return gpt


def read(gpt, text: str):
    """The GPT's pass over `text` (core.language_model.LMAttendResult), or ValueError naming a word it does not know
    (its tokenizer reads an unknown one as its start token <s>)."""
    r = gpt.attend(text)
    unknown = [w for w, t in zip(text.split(), r.tokens[1:]) if t == "<s>" and w != "<s>"]
    if unknown:
        raise ValueError(f"'{unknown[0]}' is not one of {GPT}'s tokens: write capital letters A-Z, digits 0-9, # @ "
                         "or %, split by spaces")
    return r


def _layer_head(cfg, options) -> tuple[int, int]:
    """The options' layer and head (counted from 1), checked against one model's sizes; 0-based."""
    layer, head = int(options["layer"]), int(options["head"])
    if not (1 <= layer <= cfg.N and 1 <= head <= cfg.h):
        raise ValueError(f"layer {layer}, head {head}: the GPT has layers 1 to {cfg.N} and heads 1 to {cfg.h}")
    return layer - 1, head - 1


def right_of_diagonal(maps: np.ndarray) -> float:
    """(..., T, T) maps -> the mean share of a row's weight on keys after its query (0 where a mask hides them)."""
    upper = np.triu(np.ones(maps.shape[-2:], dtype=bool), k=1)
    return float((maps * upper).sum(-1).mean())


# ---- GPT is the decoder alone ----

def decoder_alone_before(model, options) -> Before:
    return Before("The Transformer of the paper, and what a GPT keeps of it. It reads one text, left to right, "
                  "and writes the word that comes next.",
                  architecture.transformer_diagram(True, "What a GPT keeps"))


def decoder_alone_answer(model, options) -> Answer:
    """A GPT's self-attention map (tiny-copy, on `sequence`) beside the class model's decoder self-attention on
    its own translation of `sentence`; the share of weight right of the diagonal over every head of each."""
    gpt = gpt_model()
    g_layer, g_head = _layer_head(gpt.cfg, options)
    lm = read(gpt, options["sequence"])
    result = model.attend(sentence(model, options))
    dec = result.view("dec_self")
    n = min(len(dec.rows), SHOWN_PIECES)
    t_layer, t_head = min(g_layer, dec.maps.shape[0] - 1), min(g_head, dec.maps.shape[1] - 1)
    name = "the untrained model" if model.card.name in (None, "", UNTRAINED) else model.card.name
    def label(pieces):                              # "▁Wir" -> "Wir": two maps share a 480 px column
        return [short(w.replace("▁", "") or w, 10) for w in pieces[:n]]
    left = attention.heatmap_figure(lm.self_attn[g_layer, g_head], lm.tokens, lm.tokens, zmax=1.0, width=SIDE_PX,
                                    title=GPT)
    right = attention.heatmap_figure(dec.maps[t_layer, t_head, :n, :n], label(dec.rows), label(dec.cols), zmax=1.0,
                                     width=SIDE_PX,
                                     title="untrained" if name == "the untrained model" else short(name, 14))
    fig = architecture.side_by_side(left, right, f"Layer {g_layer + 1}, head {g_head + 1} of each")
    cut = f"; first {n} pieces drawn" if len(dec.rows) > n else ""
    fact = (f"Weight right of the diagonal, over every head: **{right_of_diagonal(lm.self_attn):.3f}** in the GPT "
            f"({gpt.cfg.N * gpt.cfg.h} heads), **{right_of_diagonal(dec.maps):.3f}** in {md_escape(name)}'s decoder "
            f"({dec.maps.shape[0] * dec.maps.shape[1]} heads{cut}); its encoder, which reads the whole sentence: "
            f"{right_of_diagonal(result.enc_self):.2f}.")
    return Answer(fig, fact)


# ---- A head that copies (an induction head) ----

def _induction_head() -> tuple[int, int, float]:
    """(layer, head, score), 0-based, of the GPT's best induction head, measured as its card's evaluation was (the
    held-out repeated sequences of core.studies.copy_task): measured here, not read off the card."""
    return _scores(*_gpt()).best("induction")


@lru_cache(maxsize=2)
def _scores(key: CheckpointKey, folder: str) -> induction.InductionScores:
    gpt = _load(key, folder)
    config = (gpt.card.training or {}).get("config", {})
    L = min(int(config.get("eval_len", 12)), induction.longest_copy(gpt.cfg))
    return induction.induction_scores(gpt.model, L=L, batch=int(config.get("eval_batch", 64)),
                                      seed=copy_task.EVAL_SEED)


def _query(tokens: list[str], options) -> tuple[int, int]:
    """(the query's position in the tokens, <s> at 0; the position of the token after its first occurrence)."""
    q = int(options["query"])
    text = tokens[1:]
    if not 1 <= q <= len(text):
        raise ValueError(f"query: the sequence has tokens 1 to {len(text)}, not {q}")
    first = tokens.index(tokens[q])
    if first == q or first + 1 >= q:
        raise ValueError(f"query {q} ('{tokens[q]}') must repeat a token seen before it, with a token after that "
                         "first one: pick one of the second copy")
    return q, first + 1


def copy_before(model, options) -> Before:
    gpt = gpt_model()
    tokens = read(gpt, options["sentence"]).tokens
    q, _ = _query(tokens, options)
    layer, head, _ = _induction_head()
    shown = " ".join(md_escape(t) for t in tokens[:q]) + f" **{md_escape(tokens[q])}** …"
    return Before(f"**The GPT reads:** {shown}  \nFrom the **{md_escape(tokens[q])}** in bold (position {q}), where "
                  f"will its layer {layer + 1}, head {head + 1} look? It sees only the tokens up to it.")


def copy_answer(model, options) -> Answer:
    """The induction head's map on the sequence, the query's row framed and the token after the first occurrence
    marked; the head's weight there and its induction score."""
    gpt = gpt_model()
    r = read(gpt, options["sentence"])
    q, target = _query(r.tokens, options)
    layer, head, score = _induction_head()
    measured = _scores(*_gpt())
    row = r.self_attn[layer, head, q]                                           # (T,) over the keys
    fig = attention.heatmap_figure(r.self_attn[layer, head], r.tokens, r.tokens, zmax=1.0,
                                   title=f"{GPT}, layer {layer + 1}, head {head + 1}: the induction head")
    T = len(r.tokens)
    fig.add_shape(type="rect", x0=-0.5, x1=T - 0.5, y0=q - 0.5, y1=q + 0.5, line=dict(color="#d95f02", width=3))
    fig.add_shape(type="rect", x0=target - 0.5, x1=target + 0.5, y0=q - 0.5, y1=q + 0.5,
                  line=dict(color="#b71c1c", width=3))
    top = int(np.argmax(row))
    said = "" if top == target else f" Its most-weighted key is {md_escape(r.tokens[top])} (position {top})."
    likeliest = md_escape(gpt.tokenizer.pieces([r.next_ids[q]])[0])
    fact = (f"From the second **{md_escape(r.tokens[q])}** (position {q}), layer {layer + 1}, head {head + 1} puts "
            f"**{row[target]:.2f}** of its attention on **{md_escape(r.tokens[target])}** (position {target}), the "
            f"token after the first {md_escape(r.tokens[q])}: it looks up what came next last time. The model's "
            f"likeliest next token: **{likeliest}**.{said} Its induction score (the same look, on "
            f"{measured.sequences} sequences of {measured.L} random tokens repeated): **{score:.2f}**.")
    keys = slice(0, q + 1)
    return Answer(fig, fact, {"words": list(r.tokens[keys]), "weights": [float(x) for x in row[keys]],
                              "head": f"layer {layer + 1}, head {head + 1}"})


FIGURES = {
    "decoder_alone": LessonFigure("explorer.py", "app.figures.attention.heatmap_figure",
                                  "a GPT's self-attention beside the translation decoder's: both causal",
                                  decoder_alone_before, decoder_alone_answer,
                                  {"sentence": None, "sequence": SEQUENCE, "layer": 1, "head": 1}),
    "induction_head": LessonFigure("explorer.py", "app.figures.attention.heatmap_figure",
                                   "a small GPT's induction head on a repeated sequence", copy_before, copy_answer,
                                   {"sentence": SEQUENCE, "query": 10}, depends="nothing"),
}
