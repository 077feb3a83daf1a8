"""The figures of the lesson (app/lesson/lesson.toml): for each kind, what the class sees with the question and the
answer the model draws on "Reveal", built by the same builder as the full page that shows it.

Pure: a TranslationModel and a step's options in, figures and sentences out; no Streamlit (the page caches these
through app.lesson.cache, scripts/export_lesson.py calls them directly). Builders are called through their modules
(`sdpa.matrix_figure`, not a name imported from it), so that tests can check which builder drew each figure.
Layers and heads are said counting from 1, as on every page.
"""
from __future__ import annotations

import numpy as np

from app.demo import default_sentence
from app.figures import alignment as alignment_figs
from app.figures import attention, decoding, paper, positional, pronouns, sdpa, toy
from app.figures import contrast as contrast_figs
from app.lesson import figures_gpt
from app.lesson.kinds import Answer, Before, LessonFigure
from app.text import md_escape
from core.studies import alignment as al
from core.studies import analysis
from core.studies import paper_figures as pf
from core.tokenizer import bare_word
from core.studies import pronouns as P
from core.studies import toy_task


# core.studies.analysis scores of the model view, as the answer names them
HABITS = {"previous": "previous word", "next": "next word", "self": "the word itself", "eos": "`</s>`"}


def _short(word: str, n: int = 20) -> str:
    return word if len(word) <= n else word[: n - 1] + "…"


def _words(items, limit: int = 8) -> str:
    """'a, b, c and 3 more' for a list of short phrases."""
    items = list(items)
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


# ---- the model translates: where does each German word look? (the Alignment page) ----

def _sentence(model, options) -> str:
    return options.get("sentence") or default_sentence(model.card)


def alignment_before(model, options) -> Before:
    sentence = _sentence(model, options)
    result = model.attend(sentence)
    return Before(f"**English:** {md_escape(sentence)}  \n"
                  f"**The model's German:** {md_escape(_short(result.tgt, 90)) or '(empty)'}")


def alignment_answer(model, options) -> Answer:
    """The head the checkpoint's card picked for alignment (else layer 1, head 1), on the model's own words."""
    result = model.attend(_sentence(model, options))
    maps = al.sentence_maps(result)                                # AlignmentError (a ValueError) if it cannot
    chosen = (model.card.alignment or {}).get("selected") or {}
    layer, head, shift = chosen.get("layer", 1), chosen.get("head", 1), chosen.get("shift", "read")
    found = al.head_links(maps, layer, head, shift)
    fig = alignment_figs.alignment_figure(found.attn, [_short(w) for w in maps.rows], [_short(w) for w in maps.cols],
                                          found.links, None,
                                          f"Layer {layer}, head {head}")
    links = sorted(found.links["model"])
    why = "the head its card picked for alignment" if chosen else "no head picked on its card: the first one"
    pairs = (md_escape(f"{_short(maps.rows[t])} → {_short(maps.cols[s])}") for t, s in links)
    return Answer(fig, f"Layer {layer}, head {head} ({why}): {_words(pairs, 5)}.")


# ---- scaled dot-product attention on small matrices (the "Attention, step by step" page) ----

def _example(options):
    example = sdpa.example_qkv()                                   # 2 queries, 3 keys, d_k = d_v = 2
    query = min(max(int(options["query"]), 1), len(example["Q"])) - 1
    return example, query


def _vector(row) -> str:
    return "(" + ", ".join(f"{x:g}" for x in row) + ")"


def sdpa_before(model, options) -> Before:
    example, q = _example(options)
    keys = ", ".join(f"{name} = {_vector(row)}" for name, row in example["K"].iterrows())
    return Before(f"**{example['Q'].index[q]}** = {_vector(example['Q'].iloc[q])}; {keys}.")


def sdpa_answer(model, options) -> Answer:
    example, q = _example(options)
    steps = sdpa.attention_steps(example["Q"].to_numpy(), example["K"].to_numpy(), example["V"].to_numpy())
    queries, keys = list(example["Q"].index), list(example["K"].index)
    fig = sdpa.matrix_figure(steps["weights"], "Softmax: the weights", queries, keys, "Blues", False)
    d_k = example["Q"].shape[1]
    w = steps["weights"][q]
    return Answer(fig, f"{queries[q].capitalize()}: scores q·k = {', '.join(f'{x:g}' for x in steps['scores'][q])}; "
                       f"÷ √{d_k}: {', '.join(f'{x:.2f}' for x in steps['scaled'][q])}; softmax: "
                       f"{', '.join(f'{x:.2f}' for x in w)}. The most weight goes to **{keys[int(np.argmax(w))]}**.")


# ---- why divide by sqrt(d_k) (the same page) ----

def scaling_before(model, options) -> Before:
    return Before(f"One query and 10 keys of d_k = {int(options['d_k'])} random numbers each (variance 1).")


def scaling_answer(model, options) -> Answer:
    d_k, seed = int(options["d_k"]), int(options["seed"])
    q, k = sdpa.random_query_keys(d_k, 10, seed=seed)
    scaled, unscaled = (w[0, 0].numpy() for w in sdpa.scaled_and_unscaled(q, k))
    table = sdpa.collapse_table([d_k]).set_index("softmax")["max weight"]
    return Answer(sdpa.weights_chart(scaled, unscaled, d_k),
                  f"This query's largest weight: {scaled.max():.2f} scaled, **{unscaled.max():.2f} unscaled**. Over "
                  f"200 random queries: {table[sdpa.SCALED]:.2f} and {table[sdpa.UNSCALED]:.2f}. Without the "
                  "division the softmax picks one key and its gradients vanish."
                  + ("" if model.cfg.scale_scores else
                     " (This checkpoint, like T5, does not divide by √d_k: its query weights started √d_k times "
                     "smaller, which does the division's work when training begins; training then set the scores' "
                     "size.)"))


# ---- positional encoding (the "Positional encoding" page) ----

def _pe(model, options) -> np.ndarray:
    return positional.pe_table(int(options["positions"]), model.cfg.d_model, model.cfg.pe_layout)


def positional_before(model, options) -> Before:
    return Before(f"The sines and cosines of this model: d_model = {model.cfg.d_model}, positions 0 to "
                  f"{int(options['positions']) - 1}.")


def positional_answer(model, options) -> Answer:
    pe, k = _pe(model, options), int(options["distance"])
    a, b = (int(options[n]) for n in ("first", "second"))
    if max(a, b) + k >= len(pe):
        raise ValueError(f"positions {a} and {b} plus {k} must be below {len(pe)} (the option 'positions')")
    learned = ("" if model.cfg.positions == "sinusoidal" else
               " (This checkpoint, like T5, adds no position vectors and does not divide by √d_k: each head adds a "
               "learned bias of the distance to its scores, drawn on the Positional encoding page; shown is the "
               "paper's table.)" if model.cfg.positions == "relative" else
               f" (This checkpoint learns its positions ({model.cfg.positions}); shown is the paper's table.)")
    return Answer(positional.dot_heatmap(pe),
                  f"PE({a})·PE({a + k}) = {pe[a] @ pe[a + k]:.2f} and PE({b})·PE({b + k}) = {pe[b] @ pe[b + k]:.2f}: "
                  f"the same, because it depends only on the distance {k}. The matrix is constant along every "
                  "diagonal." + learned)


# ---- every head of the encoder on a sentence (the explorer, "All heads") ----

def heads_before(model, options) -> Before:
    cfg = model.cfg
    return Before(f"**Sentence:** {md_escape(_sentence(model, options))} ({cfg.N} layers × {cfg.h} heads = "
                  f"{cfg.N * cfg.h} maps)")


def heads_answer(model, options) -> Answer:
    view = model.attend(_sentence(model, options)).view("enc_self", words=True)
    fig = attention.model_view_figure(view.maps, view.rows, view.cols)       # the step names it
    scores = analysis.sentence_scores(view.maps, view.rows)          # {score: (N, h)}
    habits = []
    for name, said in HABITS.items():
        layer, head = np.unravel_index(int(np.nanargmax(scores[name])), scores[name].shape)
        habits.append(f"{said} {scores[name][layer, head]:.2f} (layer {layer + 1}, head {head + 1})")
    return Answer(fig, "The head most given to each habit, and the share of a word's attention it gives: "
                       + "; ".join(habits) + ".")


# ---- the paper's Figures 3 and 4 (the "The paper's figures" page) ----

def paper_before(number: int):
    def before(model, options) -> Before:
        focus = {3: "making", 4: "its"}[number]
        sentence = options.get("sentence") or pf.FIGURES[number][1]
        marked = " ".join(f"**{md_escape(w)}**" if w.strip(".,") == focus else md_escape(w) for w in sentence.split())
        return Before(f"**Sentence:** {marked}")
    return before


def paper_answer(number: int):
    """Figure 3 ('making', its best head alone, as the page starts) or Figure 4 ('its', the two best heads)."""
    target = {3: "more difficult", 4: "Law"}[number]

    def answer(model, options) -> Answer:
        sentence = options.get("sentence") or pf.FIGURES[number][1]
        found, view = paper.find_heads(number, model.attend(sentence), sentence, True)
        heads = pf.top_heads(found.scores, found.layer, 1 if number == 3 else 2)
        fig = list(paper.figure_set(number, view, found.layer, heads).values())[-1]      # Figure 4: the 'its' one
        best = found.best
        fact = (f"Best head: layer {int(best.layer) + 1}, head {int(best['head']) + 1} puts **{best.score:.2f}** of "
                f"the attention of '{found.focus}' on '{target}' (a head that spreads evenly: {found.chance:.2f}); "
                + ("that counts as a link." if found.linked else f"not a link (that needs {found.threshold:.2f})."))
        if number == 4:
            fact += f" On 'application', the next word: {best['→ application']:.2f}."
        layer, head = int(best.layer), int(best["head"])
        row = view.maps[layer][head][pf.find_words(view.rows, found.focus)[0]]     # (S,) over the words
        words = [(w, float(x)) for w, x in zip(view.cols, row) if w not in pf.SPECIALS and bare_word(w)]
        return Answer(fig, fact, {"words": [w for w, _ in words], "weights": [x for _, x in words],
                                  "head": f"layer {layer + 1}, head {head + 1}"})
    return answer


# ---- which German form for 'its' (the "Which pronoun?" page) ----

def _item(options) -> dict:
    items = P.load_pronoun_set()
    n = int(options["item"])
    if not 1 <= n <= len(items):
        raise ValueError(f"the pronoun set has items 1 to {len(items)}, not {n}")
    return items[n - 1]


def pronoun_before(model, options) -> Before:
    item = _item(options)
    choice = P.form_probabilities(model, item["en"], item["de"], item["pronoun"])
    prefix = choice.prefix if choice else ""
    gender = {"f": "feminine", "m": "masculine", "n": "neuter"}[item["gender"]]
    return Before(f"**English:** {md_escape(item['en'])}  \n'{item['antecedent']}' is *{item['antecedent_de']}* in "
                  f"German: {gender}. The decoder has written: *{md_escape(prefix)} …*")


def pronoun_answer(model, options) -> Answer:
    item = _item(options)
    choice = P.form_probabilities(model, item["en"], item["de"], item["pronoun"])
    if choice is None:
        raise ValueError(f"the German '{item['de']}' has no form of '{item['pronoun']}'")
    feminine = item["gender"] in P.FEMININE
    fig = pronouns.form_figure(choice.table, choice.written, feminine)      # the question says after what
    right = P.right_for(choice.chosen, item["gender"])
    return Answer(fig, f"The model's choice: **{choice.chosen}**, {'right' if right else 'wrong'} for "
                       f"*{item['antecedent_de']}*; the feminine forms (ihr-) get {choice.feminine_share:.0%} of the "
                       "probability.", {"choice": choice.chosen})


# ---- which word comes next, and greedy or beam search (the "How it writes" page) ----

def _writing(model, options, beam: int = 1):
    """The trace of the step's sentence (default: the paper's Figure 4 sentence), teacher-forced on the German
    words of `after` (default: none), and the step that chooses next: the first after them, else the step where
    the model was least sure of its word."""
    sentence = options.get("sentence") or pf.FIGURES[4][1]
    tr = model.trace(sentence, beam=beam, prefix=options.get("after") or None)
    if options.get("after") or len(tr.steps) <= 1:
        return tr, min(tr.forced, len(tr.steps) - 1)
    sure = [s.hyps[0].candidates[0].prob for s in tr.steps[:-1]]          # the last step ends the sentence
    return tr, int(np.argmin(sure[1:])) + 1 if len(sure) > 1 else 0


def next_word_before(model, options) -> Before:
    tr, step = _writing(model, options)
    written = tr.text(tr.steps[step].hyps[0].tokens)
    return Before(f"**English:** {md_escape(tr.src)}  \n**The model has written:** *{md_escape(written)} …*")


def next_word_answer(model, options) -> Answer:
    tr, step = _writing(model, options)
    h = tr.steps[step].hyps[0]
    fig = decoding.candidates_figure(tr, step, 0, title="Which word comes next?")
    best = [f"**{md_escape(decoding.piece_label(p))}** {c.prob:.0%}" if i == 0 else
            f"{md_escape(decoding.piece_label(p))} {c.prob:.0%}"
            for i, (p, c) in enumerate(zip(tr.pieces([c.token for c in h.candidates[:4]]), h.candidates[:4]))]
    top = h.candidates[:8]
    labels = [decoding.piece_label(p) for p in tr.pieces([c.token for c in top])]
    return Answer(fig, f"The model's probabilities for the next piece: {', '.join(best)}; every other piece "
                       f"together {h.other:.0%}. Greedy decoding writes the first.",
                  {"labels": labels, "probs": [float(c.prob) for c in top]})


def _first_difference(greedy: list, beam: list) -> int:
    """The first step at which two translations' pieces differ (the shorter's length if one starts the other)."""
    return next((i for i, (a, b) in enumerate(zip(greedy, beam)) if a != b), min(len(greedy), len(beam)))


# an untrained model writes to the length limit, in pieces with no space to wrap at: the lesson's narrow text
# column on a projector has room for two lines of that (the whole sentence is on the How it writes page)
SHOWN_CHARS = 60


def greedy_beam_before(model, options) -> Before:
    greedy, _ = _writing(model, {**options, "after": None}, beam=1)
    shown = _short(greedy.translation, SHOWN_CHARS)
    return Before(f"**English:** {md_escape(greedy.src)}  \n**Greedy:** *{md_escape(shown)}*")


def greedy_beam_answer(model, options) -> Answer:
    beam = int(options["beam"])
    if beam < 2:
        raise ValueError(f"the option 'beam' must be 2 or more (it is {beam}): beam search against greedy")
    greedy, _ = _writing(model, {**options, "after": None}, beam=1)
    searched, _ = _writing(model, {**options, "after": None}, beam=beam)
    split = _first_difference(greedy.tokens, searched.tokens)
    fig = decoding.beam_tree_figure(searched, step=min(split, len(searched.steps) - 1), window=7,
                                    title=f"Beam search, {beam} beams")
    if greedy.tokens == searched.tokens:
        fact = (f"The same translation (log P {searched.logprob:.2f}, score {searched.score:.2f}): here the most "
                "probable piece at each step also made the best sentence.")
    else:
        ending = _short(searched.text(searched.tokens[split:]), SHOWN_CHARS)
        fact = (f"From step {split + 1} beam search wrote *…{md_escape(ending)}*: log P {searched.logprob:.2f} "
                f"(greedy {greedy.logprob:.2f}), score {searched.score:.2f} (greedy {greedy.score:.2f}).")
    return Answer(fig, fact)


# ---- what decided the model's word (How it writes' and Which pronoun?'s "why this and not that?") ----

def _why(model, options):
    """(the contrast, the mean attention row over the source words) of the `sentence` (the paper's Figure 4 one) at
    the step after the German words `after`: the model's likelier of `form` and `other` against the other one,
    explained by `method` (core.attribution.METHODS)."""
    sentence = options.get("sentence") or pf.FIGURES[4][1]
    if options["method"] not in contrast_figs.METHOD_LABELS:
        raise ValueError(f"method: one of {', '.join(contrast_figs.METHOD_LABELS)}, not {options['method']!r}")
    first, second = options["form"], options["other"]
    c = model.contrast(sentence, options["after"], first, second, method="erasure")
    if c.log_odds < 0:                                                  # the model prefers the second form
        first, second = second, first
    c = model.contrast(sentence, options["after"], first, second, method=options["method"])
    return c, c.cross.mean((0, 1))


def why_before(model, options) -> Before:
    c, look = _why(model, options)
    at = int(np.argmax(look))
    return Before(f"**English:** {md_escape(c.src)}  \n*{md_escape(c.prefix)}* → **{md_escape(c.chosen)}** (not "
                  f"*{md_escape(c.other)}*); attention looks most at **{md_escape(c.src_words[at])}** "
                  f"({look[at]:.2f}).")


def why_answer(model, options) -> Answer:
    c, look = _why(model, options)
    method = contrast_figs.METHOD_LABELS[options["method"]]
    fig = contrast_figs.contrast_figure(c.src_words, c.src_scores, look, c.chosen, c.other, options["method"],
                                        "where it looked (attention)", title=f"Why '{c.chosen}', not '{c.other}'?",
                                        numbers=False)
    top, at = c.ranking()[0], int(np.argmax(look))
    push = np.clip(c.src_scores, 0, None)
    weights = (push / push.max() if push.max() > 0 else push).tolist()
    return Answer(fig, f"Attention looks most at **{md_escape(c.src_words[at])}** ({look[at]:.2f}); "
                       f"{method} says **{md_escape(c.src_words[top])}** pushed most towards '{md_escape(c.chosen)}' "
                       f"({c.src_scores[top]:+.2f} of a log-odds of {c.log_odds:+.2f}).",
                  {"words": list(c.src_words), "weights": weights, "head": method})


# ---- a tiny Transformer learns to reverse digits (the "Watch it learn" page) ----

def toy_config(options) -> toy_task.ToyConfig:
    return toy_task.ToyConfig(task=options["task"], example=options["digits"])


def toy_before(model, options) -> Before:
    cfg = toy_config(options)
    cross, _ = toy_task.look(toy_task.build_model(cfg), cfg.task, cfg.example)        # the weights before step 1
    hits = toy_task.alignment_hits(cross, cfg.task, len(cfg.example))
    fig = toy.cross_grid(cross, cfg.task, cfg.example, hits, "Before training: where each step looks")
    return Before(f"**Task:** {cfg.example} → {toy_task.target_digits(cfg.task, cfg.example)}. Rows: the digits it "
                  "writes; columns: the digits it reads.", fig)


def toy_trained(cfg: toy_task.ToyConfig, result: toy_task.ToyResult) -> Answer:
    """The answer from a finished run of cfg (the app trains it in the background: app.lesson.cache.toy_run)."""
    last = result.snapshots[-1]
    fig = toy.cross_grid(last.cross, cfg.task, cfg.example, last.hits,
                         f"After {result.steps} training steps: where each step looks")
    layer, head = toy_task.best_head(last.hits)
    n = len(cfg.example)
    return Answer(fig, f"{toy.guess_text(cfg.task, cfg.example, last.guess)}. Clearest head: layer {layer + 1}, "
                       f"head {head + 1}, {round(last.hits[layer, head] * n)} of {n} rows on the red squares "
                       f"({result.seconds:.0f} s of training).")


def toy_answer(model, options) -> Answer:
    """Trains the tiny model here and now (seconds to a minute): the Watch it learn page's run, at full speed."""
    cfg = toy_config(options)
    return toy_trained(cfg, toy_task.train(cfg))


FIGURES = {
    "alignment": LessonFigure("alignment.py", "app.figures.alignment.alignment_figure",
                              "the model's translation, and where each German word looked",
                              alignment_before, alignment_answer, {"sentence": None}),
    "attention_steps": LessonFigure("scaled_attention.py", "app.figures.sdpa.matrix_figure",
                                    "softmax(Q Kᵀ / √d_k) on three small keys", sdpa_before, sdpa_answer,
                                    {"query": 1}, depends="nothing"),
    "scaling": LessonFigure("scaled_attention.py", "app.figures.sdpa.weights_chart",
                            "one random query's weights, with and without ÷ √d_k", scaling_before, scaling_answer,
                            {"d_k": 64, "seed": 0}, depends="config"),      # config: T5 does not divide
    "positional": LessonFigure("positional_encoding.py", "app.figures.positional.dot_heatmap",
                               "the dot products of every two positions' encodings", positional_before,
                               positional_answer, {"positions": 100, "first": 10, "second": 50, "distance": 10},
                               depends="config"),
    "all_heads": LessonFigure("explorer.py", "app.figures.attention.model_view_figure",
                              "every encoder head's map of one sentence", heads_before, heads_answer,
                              {"sentence": None}),
    "figure3": LessonFigure("paper_figures.py", "app.figures.paper.figure_set",
                            "the paper's Figure 3: where 'making' looks", paper_before(3), paper_answer(3),
                            {"sentence": None}),
    "figure4": LessonFigure("paper_figures.py", "app.figures.paper.figure_set",
                            "the paper's Figure 4: where 'its' looks", paper_before(4), paper_answer(4),
                            {"sentence": None}),
    "pronoun": LessonFigure("pronouns.py", "app.figures.pronouns.form_figure",
                            "the model's probability of each German form of 'its'", pronoun_before, pronoun_answer,
                            {"item": 1}),
    "next_word": LessonFigure("how_it_writes.py", "app.figures.decoding.candidates_figure",
                              "the model's probability of each next piece, at one step of its translation",
                              next_word_before, next_word_answer, {"sentence": None, "after": None}),
    "why": LessonFigure("how_it_writes.py", "app.figures.contrast.contrast_figure",
                        "what each English word pushed towards the model's word or another, beside where it looked",
                        why_before, why_answer,
                        {"sentence": None, "after": "Das Gesetz wird niemals perfekt sein, aber", "form": "seine",
                         "other": "ihre", "method": "erasure"}),
    "greedy_or_beam": LessonFigure("how_it_writes.py", "app.figures.decoding.beam_tree_figure",
                                   "greedy decoding and beam search side by side, the beam as a tree",
                                   greedy_beam_before, greedy_beam_answer, {"sentence": None, "beam": 4}),
    "watch_it_learn": LessonFigure("watch_it_learn.py", "app.figures.toy.cross_grid",
                                   "a tiny Transformer's cross-attention before and after it learns", toy_before,
                                   toy_answer, {"task": "reverse", "digits": "31859264"}, depends="nothing",
                                   small_multiples=True),
    **figures_gpt.FIGURES,             # a GPT's: app/lesson/figures_gpt.py
}

