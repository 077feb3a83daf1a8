"""The "Alignment" page, run headless with AppTest on tiny checkpoints and the hand-written gold fixture."""
import json

import pytest
from streamlit.testing.v1 import AppTest

import core
from tests.helpers import FIXTURES, tiny_model
from core.studies import alignment as al
from core.studies import alignment_gold as ag
from scripts import evaluate_alignment as script
from core.paths import REPO

PAGE = str(REPO / "app" / "screens" / "alignment.py")
GOLD = FIXTURES / "alignment_gold"


@pytest.fixture(scope="module")
def ckpts(tmp_path_factory, tokenizer):
    """Two tiny random checkpoints: "plain" without alignment scores, "scored" with the script's."""
    root = tmp_path_factory.mktemp("ckpts")
    for name in ("plain", "scored"):
        core.save_checkpoint(root / name, tiny_model(len(tokenizer), seed=1), tokenizer, {"name": name})
    assert script.main([str(root / "scored"), "--gold", str(GOLD), "--no-progress"]) == 0
    return root


@pytest.fixture
def env(ckpts, monkeypatch):
    monkeypatch.setenv("ATTN_EXPLORER_CHECKPOINTS", str(ckpts))
    monkeypatch.setenv("ATTN_EXPLORER_ALIGNMENT_GOLD", str(GOLD))
    return ckpts


def page(name: str) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.session_state["checkpoint"] = name
    return ok(at.run())


def ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    return at


def charts(at) -> dict:
    """Plotly figures on the page by their title."""
    out = {}
    for c in at.get("plotly_chart"):
        spec = json.loads(c.proto.spec)
        out[spec["layout"]["title"]["text"]] = spec
    return out


def pair_aer(ckpts, line: int, layer, head, shift) -> str:
    """The page's per-pair AER, computed here from core alone."""
    tm = core.load_checkpoint(ckpts / "plain")
    pair = ag.read_gold(GOLD)[line - 1]
    src, tgt = ag.model_text(pair)
    res = tm.attend(src, tgt=tgt)
    A = al.select(al.word_maps(res, shift, *al.gold_slots(res, pair)), layer, head)
    links = {(t, int(row.argmax())) for t, row in enumerate(A)}
    aer = 1 - (len(links & pair.sure) + len(links & pair.possible)) / (len(links) + len(pair.sure))
    return f"{100 * aer:.1f}%"


@pytest.mark.slow
def test_gold_pair_links_and_scoring_every_head(env):
    at = page("plain")
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["AER of this pair"] == pair_aer(env, 1, 1, 1, "read")      # defaults: layer 1, head 1, read
    names = {t.get("name") for t in charts(at)["layer 1, head 1, shift 'read', argmax"]["data"]}
    assert "gold: sure" in names and "gold: possible only" not in names     # pair 1 has sure links only
    assert any("no alignment scores yet" in i.value for i in at.info)
    at.number_input(key="al_pair").set_value(2).run()
    at.radio(key="al_shift").set_value("produced").run()
    at.selectbox(key="al_head").set_value(3).run()
    ok(at)
    assert {m.label: m.value for m in at.metric}["AER of this pair"] == pair_aer(env, 2, 1, 3, "produced")
    names = {t.get("name") for t in charts(at)["layer 1, head 3, shift 'produced', argmax"]["data"]}
    assert "gold: possible only" in names
    at.button(key="al_live_go").click().run()
    ok(at)
    grid = [spec for title, spec in charts(at).items() if title.startswith("AER of every head")]
    assert grid and len(grid[0]["data"]) == 2                                  # one panel per shift
    assert any("Chosen on the first" in m.value for m in at.markdown)


@pytest.mark.slow
def test_scored_card_shows_the_grid_and_starts_on_the_chosen_head(env):
    card = json.loads((env / "scored" / "card.json").read_text())["alignment"]
    at = page("scored")
    s = card["selected"]
    assert (at.session_state["al_layer"], at.session_state["al_head"], at.session_state["al_shift"]) == \
        (s["layer"], s["head"], s["shift"])
    assert all(b.key.startswith("download:") for b in at.button)          # only the figures' downloads: no "score"
    assert any(t.startswith("AER of every head on 4 pairs") for t in charts(at))


@pytest.mark.slow
def test_own_sentence_without_gold(env, tmp_path, monkeypatch):
    monkeypatch.setenv("ATTN_EXPLORER_ALIGNMENT_GOLD", str(tmp_path))      # no gold here
    at = page("plain")
    assert any("No gold alignments found" in i.value for i in at.info)
    assert not at.metric
    figure = next(iter(charts(at).values()))
    assert {t.get("name") for t in figure["data"]} == {None, "link of this head"}
    assert any("The model's translation" in m.value for m in at.markdown)
    at.text_input(key="al_tgt").set_value("die Kommission").run()
    assert ok(at) and charts(at)
    at.text_input(key="al_src").set_value("   ").run()
    assert any("cannot be aligned" in w.value for w in ok(at).warning)


def in_page_order(node):
    """Every element under node, in the order the page shows them."""
    yield node
    for key in sorted(getattr(node, "children", {}) or {}):
        yield from in_page_order(node.children[key])


@pytest.mark.slow
def test_the_map_comes_before_its_scores_and_the_aer_explanation(env):
    # so that the map starts on the first screen of a 1280 x 720 projector (it was at 793 px, now ~610)
    shown = [(e.type, str(getattr(e, "value", ""))) for e in in_page_order(page("plain").main)]
    kinds = [kind for kind, _ in shown]
    aer = next(i for i, (kind, text) in enumerate(shown) if kind == "markdown" and "alignment error rate" in text)
    assert kinds.index("plotly_chart") < kinds.index("metric") and kinds.index("plotly_chart") < aer
