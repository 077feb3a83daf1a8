"""app/lesson/figures.py: each lesson figure is drawn by the builder its full page calls (one builder per figure),
and each answer's numbers are the model's own, on the untrained fallback model and on the shipped checkpoints."""
import ast
import importlib
import inspect
import json
import re

import numpy as np
import pytest

from app import cache
from app.lesson import figures as lesson_figures
from app.checkpoints import untrained_model
from app.lesson.steps import LESSON, load_lesson
from app.lesson.figures import FIGURES
from app.text import md_escape
from core import load_checkpoint
from core.paths import REPO
from core.studies import analysis, toy_task
from core.studies import paper_figures as pf
from core.studies import pronouns as P
from tests.helpers import pe_formula

SCREENS = REPO / "app" / "screens"
SIDE_BY_SIDE = {"decoder_alone"}       # two maps of its page's builder in one figure, each with its own tokens
# the shipped translation models (the Lesson is the paper's story: a language model's page says it needs a translation)
SHIPPED = [p for p in sorted((REPO / "checkpoints").glob("*")) if (p / "config.json").exists()
           and json.loads((p / "config.json").read_text()).get("family", "encoder-decoder") == "encoder-decoder"]


@pytest.fixture(scope="module")
def model():
    return untrained_model()


@pytest.fixture
def short_toy(monkeypatch):
    """The tiny model of "Watch it learn" trained for 20 steps instead of 600 (the same code, seconds)."""
    monkeypatch.setattr(lesson_figures, "toy_config",
                        lambda o: toy_task.ToyConfig(task=o["task"], example=o["digits"], steps=20, every=10))


# ---- one builder per figure: the page's ----

def _imports(tree: ast.Module) -> dict[str, str]:
    """Local name -> the dotted name it stands for, from a module's imports."""
    names = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                names[a.asname or a.name] = f"{node.module}.{a.name}"
        elif isinstance(node, ast.Import):
            for a in node.names:
                names[a.asname or a.name] = a.name
    return names


def _called(node: ast.AST, imports: dict[str, str]) -> set[str]:
    """The dotted names a piece of code refers to: imported names, and attributes of imported modules."""
    found = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and n.id in imports:
            found.add(imports[n.id])
        elif isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in imports:
            found.add(f"{imports[n.value.id]}.{n.attr}")
    return found


def page_builders(page: str) -> set[str]:
    """Every dotted name a page refers to, with those of the app.cache functions it calls (and their cached twins)."""
    tree = ast.parse((SCREENS / page).read_text(encoding="utf-8"))
    found = _called(tree, _imports(tree))
    cache_tree = ast.parse(inspect.getsource(cache))
    cache_imports = _imports(cache_tree)
    for fn in cache_tree.body:
        if isinstance(fn, ast.FunctionDef) and {f"app.cache.{fn.name}", f"app.cache.{fn.name.lstrip('_')}"} & found:
            found |= _called(fn, cache_imports)
    for name in [n for n in found if n.startswith("app.why.")]:       # a section two pages share (app/why.py)
        why_tree = ast.parse((REPO / "app" / "why.py").read_text(encoding="utf-8"))
        found |= {x for fn in why_tree.body if isinstance(fn, ast.FunctionDef) and f"app.why.{fn.name}" == name
                  for x in _called(fn, _imports(why_tree))}
    return found


@pytest.mark.parametrize("kind", list(FIGURES))
def test_the_page_of_each_lesson_figure_calls_its_builder(kind):
    f = FIGURES[kind]
    assert (SCREENS / f.page).exists()
    assert f.builder in page_builders(f.page), f"{f.page} does not call {f.builder}"


def test_the_check_of_builders_can_fail():
    assert "app.figures.toy.cross_grid" in page_builders("watch_it_learn.py")     # through app.cache.toy_figures
    assert "app.figures.toy.cross_grid" not in page_builders("positional_encoding.py")
    assert "app.figures.sdpa.weights_chart" not in page_builders("explorer.py")
    assert "app.figures.contrast.contrast_figure" in page_builders("how_it_writes.py")    # through app.why
    assert "app.figures.contrast.contrast_figure" not in page_builders("explorer.py")


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(FIGURES))
def test_each_lesson_figure_is_drawn_by_its_builder(kind, model, monkeypatch, short_toy):
    f = FIGURES[kind]
    module_name, name = f.builder.rsplit(".", 1)
    module, made = importlib.import_module(module_name), []
    real = getattr(module, name)

    def spy(*args, **kwargs):
        out = real(*args, **kwargs)
        made.append(out)
        return out
    monkeypatch.setattr(module, name, spy)
    answer = f.answer(model, dict(f.options))
    drawn = [fig for out in made for fig in (out.values() if isinstance(out, dict) else [out])]
    if kind in SIDE_BY_SIDE:                # the builder's maps set side by side (app.figures.architecture)
        assert len(answer.fig.data) == len(drawn) >= 2
        for trace, fig in zip(answer.fig.data, drawn):
            np.testing.assert_array_equal(np.asarray(trace.z), np.asarray(fig.data[0].z))
            assert list(trace.y) == list(fig.data[0].y), kind
    else:
        assert any(answer.fig is fig for fig in drawn), f"{kind}: its figure is not {f.builder}'s"
    assert re.search(r"\d", answer.fact)                          # the model's numbers, in words


# ---- the answers are the model's own numbers ----

def test_the_weights_answer_is_the_softmax_of_the_example(model):
    a = FIGURES["attention_steps"].answer(model, {"query": 1})
    weights = np.exp([1, -1, 0] / np.sqrt(2)) / np.exp([1, -1, 0] / np.sqrt(2)).sum()   # q1 = (1, 0) on the keys
    assert "softmax: " + ", ".join(f"{w:.2f}" for w in weights) in a.fact and "**key 1**" in a.fact
    np.testing.assert_allclose(np.asarray(a.fig.data[0].z, dtype=float)[0], weights, atol=1e-9)


def test_the_positional_answer_gives_the_dot_products_of_the_formula(model):
    options = {"positions": 80, "first": 5, "second": 40, "distance": 7}
    a = FIGURES["positional"].answer(model, options)
    pe = pe_formula(80, model.cfg.d_model).numpy()
    assert f"PE(5)·PE(12) = {pe[5] @ pe[12]:.2f}" in a.fact and f"PE(40)·PE(47) = {pe[40] @ pe[47]:.2f}" in a.fact
    with pytest.raises(ValueError, match="must be below 80"):
        FIGURES["positional"].answer(model, {**options, "second": 75})


def test_the_scaling_answer_says_when_the_checkpoint_does_not_divide(model):
    import dataclasses
    import types
    options = {"d_k": 64, "seed": 0}
    assert "does not divide" not in FIGURES["scaling"].answer(model, options).fact
    t5_like = types.SimpleNamespace(cfg=dataclasses.replace(model.cfg, scale_scores=False))
    assert "like T5, does not divide by √d_k" in FIGURES["scaling"].answer(t5_like, options).fact


def test_the_alignment_answer_lists_each_german_words_strongest_english_word(model):
    a = FIGURES["alignment"].answer(model, {"sentence": "We must protect the environment."})
    z = np.asarray(a.fig.data[0].z, dtype=float)
    rows, cols = list(a.fig.data[0].y), list(a.fig.data[0].x)
    t = 0
    assert md_escape(f"{rows[t].split(' (')[0]} → {cols[int(np.argmax(z[t]))].split(' (')[0]}") in a.fact


@pytest.mark.slow
def test_the_heads_answer_names_the_heads_core_scores_highest(model):
    sentence = "The cat sat on the mat."
    a = FIGURES["all_heads"].answer(model, {"sentence": sentence})
    view = model.attend(sentence).view("enc_self", words=True)
    prev = analysis.sentence_scores(view.maps, view.rows)["previous"]
    layer, head = np.unravel_index(int(np.nanargmax(prev)), prev.shape)
    assert f"previous word {prev.max():.2f} (layer {layer + 1}, head {head + 1})" in a.fact


@pytest.mark.slow
@pytest.mark.parametrize("number", [3, 4])
def test_the_paper_answers_give_the_best_heads_share(model, number):
    a = FIGURES[f"figure{number}"].answer(model, {"sentence": None})
    sentence = pf.FIGURES[number][1]
    r = model.attend(sentence)
    best = pf.FIGURES[number][0](r.enc_self, r.src_tokens, sentence).best
    assert f"layer {int(best.layer) + 1}, head {int(best['head']) + 1} puts **{best.score:.2f}**" in a.fact


def test_the_pronoun_answer_is_the_models_most_probable_form(model):
    a = FIGURES["pronoun"].answer(model, {"item": 2})
    item = P.load_pronoun_set()[1]
    choice = P.form_probabilities(model, item["en"], item["de"], item["pronoun"])
    assert f"**{choice.chosen}**" in a.fact and f"{choice.feminine_share:.0%}" in a.fact
    with pytest.raises(ValueError, match="items 1 to"):
        FIGURES["pronoun"].answer(model, {"item": 10_000})


@pytest.mark.slow
def test_the_next_word_answer_is_the_models_distribution_after_the_words_given(model):
    options = {"sentence": "The cat sat on the mat.", "after": "Die Katze"}
    a = FIGURES["next_word"].answer(model, options)
    tr = model.trace(options["sentence"], beam=1, prefix="Die Katze")
    h = tr.steps[tr.forced].hyps[0]
    assert list(a.fig.data[0].x)[:3] == pytest.approx([c.prob for c in h.candidates[:3]])
    assert f"{h.candidates[0].prob:.0%}" in a.fact and "Die Katze" in FIGURES["next_word"].before(model, options).text


@pytest.mark.slow
def test_the_greedy_or_beam_answer_gives_both_searches_scores(model):
    a = FIGURES["greedy_or_beam"].answer(model, {"sentence": "The cat sat on the mat.", "beam": 3})
    greedy, beam = (model.trace("The cat sat on the mat.", beam=b) for b in (1, 3))
    assert f"{greedy.logprob:.2f}" in a.fact and f"log P {beam.logprob:.2f}" in a.fact
    assert a.fig.layout.title.text == "Beam search, 3 beams"
    with pytest.raises(ValueError, match="2 or more"):
        FIGURES["greedy_or_beam"].answer(model, {"sentence": None, "beam": 1})


@pytest.mark.slow
def test_the_toy_answer_shows_before_and_after_training(model, short_toy):
    before = FIGURES["watch_it_learn"].before(model, {"task": "reverse", "digits": "1234"})
    after = FIGURES["watch_it_learn"].answer(model, {"task": "reverse", "digits": "1234"})
    assert "Before training" in before.fig.layout.title.text
    assert "After 20 training steps" in after.fig.layout.title.text
    assert "1234 → 4321" in after.fact and "of 4 rows" in after.fact


@pytest.mark.slow
@pytest.mark.parametrize("folder", [None] + SHIPPED, ids=lambda f: "untrained" if f is None else f.name)
def test_every_step_of_the_shipped_lesson_answers(folder, model, short_toy):
    m = model if folder is None else load_checkpoint(folder)
    for step in load_lesson(LESSON).steps:
        f = FIGURES[step.figure]
        assert f.before(m, step.options).text, step.title
        assert f.answer(m, step.options).fig is not None, step.title


@pytest.mark.slow
def test_the_why_answer_is_the_models_own_contrast(model):
    options = {**FIGURES["why"].options, "sentence": "The bank raised its interest rates.", "after": "Die Bank erhöhte"}
    a = FIGURES["why"].answer(model, options)
    first = model.contrast(options["sentence"], options["after"], options["form"], options["other"])
    chosen, other = (options["form"], options["other"]) if first.log_odds >= 0 else (options["other"], options["form"])
    c = model.contrast(options["sentence"], options["after"], chosen, other)
    top = c.src_words[c.ranking()[0]]
    assert f"**{md_escape(top)}** pushed most towards '{chosen}' ({c.src_scores.max():+.2f}" in a.fact
    np.testing.assert_allclose(np.asarray(a.fig.data[0].z, dtype=float)[0], c.src_scores, atol=1e-9)
    assert a.for_class["words"] == c.src_words and max(a.for_class["weights"]) in (0.0, 1.0)
    assert md_escape(c.src_words[int(c.cross.mean((0, 1)).argmax())]) in FIGURES["why"].before(model, options).text
    with pytest.raises(ValueError, match="method: one of"):
        FIGURES["why"].answer(model, {**options, "method": "lime"})
