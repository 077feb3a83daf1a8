"""A fresh machine: the data folder is empty and the model is an imported one (no atlas, no sample of sentences, no
measured card). Every page renders without a traceback; the pages that need data name the one command that fetches
it, never a folder of the machines the project was made on; the data button appears only where the server allows."""
import pytest
from streamlit.testing.v1 import AppTest

from core import datasets as ds
from core.paths import REPO

pytest.importorskip("transformers", reason="transformers is not installed (pip install -r requirements-dev.txt)")
from tests.app.screens.test_imported_pages import imported  # noqa: E402,F401  (the module's imported models)

PAGES = REPO / "app" / "screens"
KINDS = ("title", "header", "subheader", "markdown", "caption", "info", "warning", "error", "success", "text", "code")
NEEDS_DATA = {("heads", "Syntax"): "eval", ("heads", "Atlas"): "eval", ("alignment", None): "eval",
              ("paper_figures", "Figure 5: structure"): "eval", ("qk", None): "newstest"}


@pytest.fixture
def fresh(tmp_path, monkeypatch, imported):  # noqa: F811
    """An empty data folder, the imported models as the only checkpoints, and no gold override."""
    monkeypatch.setenv("ATTN_EXPLORER_SHARED", str(tmp_path / "empty"))
    monkeypatch.setenv("ATTN_EXPLORER_CHECKPOINTS", str(imported))
    monkeypatch.delenv("ATTN_EXPLORER_ALIGNMENT_GOLD", raising=False)
    monkeypatch.delenv("ATTN_EXPLORER_DATA_DOWNLOADS", raising=False)
    return tmp_path / "empty"


def run(page: str, tab: str | None = None) -> AppTest:
    at = AppTest.from_file(str(REPO / "app" / "main.py"), default_timeout=180)    # with the sidebar, as served
    at.switch_page(f"screens/{page}.py")
    at.session_state["checkpoint"] = "fsmt-tiny"
    if tab:                                   # the page's tabs, by the key of its st.tabs
        at.session_state[{"heads": "heads_tab", "paper_figures": "pf_tab"}[page]] = tab
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def texts(at: AppTest) -> str:
    return "\n".join(str(e.value) for kind in KINDS for e in at.get(kind))


def machine_paths(empty) -> list[str]:
    """Folders that must not appear on a page: the development machines' shared folder, the empty data folder."""
    return [str(REPO.parent / "shared"), "/work/shared", str(empty)]


@pytest.mark.slow
@pytest.mark.parametrize("page", sorted(p.stem for p in PAGES.glob("*.py") if p.stem != "__init__"))
def test_every_page_renders_with_no_data(fresh, page):
    text = texts(run(page))
    assert not any(path in text for path in machine_paths(fresh)), page


@pytest.mark.slow
@pytest.mark.parametrize("page, tab", list(NEEDS_DATA))
def test_pages_that_need_data_name_the_command(fresh, page, tab):
    at = run(page, tab)
    text = texts(at)
    command = ds.how_to_get(NEEDS_DATA[page, tab])
    assert command in text, text
    assert not any(path in text for path in machine_paths(fresh))
    assert not [b for b in at.button if b.key and b.key.endswith("_fetch")]          # off unless the server allows


@pytest.mark.slow
def test_a_server_that_allows_it_offers_a_button_with_the_licence(fresh, monkeypatch):
    monkeypatch.setenv("ATTN_EXPLORER_DATA_DOWNLOADS", "on")
    at = run("alignment")
    assert [b.label for b in at.button if b.key == "al_fetch"] == [f"Fetch it here ({ds.bundle_size('eval')})"]
    assert "research only" in texts(at)


def german_first(talp: str) -> str:
    """The fixture's links (English index first) as RWTH's file has them, German index first, so that the
    command's conversion has something to turn back."""
    return "".join(" ".join(f"{j}{'-' if '-' in x else 'p'}{i}" for x in line.split()
                            for i, j in [x.replace("p", "-").split("-")]) + " \n" for line in talp.splitlines())


@pytest.mark.slow
def test_after_the_command_the_syntax_tab_alignment_and_the_atlas_work(fresh, tmp_path, monkeypatch, capsys):
    from scripts import get_data
    from tests.file_server import FileServer, serve_stand_ins
    fixtures = REPO / "tests" / "fixtures"
    gold = fixtures / "alignment_gold"
    stand_ins = {"ud-english-ewt": {"dev": (fixtures / "syntax" / "mini.conllu").read_text(), "test": "",
                                    "licence": "CC BY-SA 4.0\n"},
                 "rwth-alignment": {"src": (gold / "src.en").read_text(), "tgt": (gold / "tgt.de").read_text(),
                                    "links": german_first((gold / "gold.talp").read_text())}}
    with FileServer(tmp_path / "mirror") as srv:
        monkeypatch.setattr(ds, "PARTS", serve_stand_ins(srv, stand_ins, tmp_path / "built"))
        assert get_data.main(["eval", "--accept-licence", "--base-url", srv.url, "--no-progress"]) == 0
    assert (fresh / "eval/rwth-deen-alignment/gold.talp").read_text() == (gold / "gold.talp").read_text()
    syntax = texts(run("heads", "Syntax"))
    assert "get_data.py" not in syntax and "of the 4 sentences" in syntax        # the fixture's 4, read in place
    at = run("alignment")
    assert "No gold alignments found" not in texts(at) and at.session_state["al_mode"] == "gold"
    atlas = run("heads", "Atlas")
    assert "get_data.py" not in texts(atlas)
    atlas.button(key="heads_atlas_go").click().run()
    assert not atlas.exception, [e.value for e in atlas.exception]
    assert "Measured on Encoder self-attention: UD English EWT dev" in texts(atlas)      # the atlas, drawn


@pytest.mark.slow
def test_the_button_fetches_the_data_with_a_progress_bar_and_the_page_then_uses_it(fresh, tmp_path, monkeypatch):
    from tests.file_server import FileServer, serve_stand_ins
    gold = REPO / "tests" / "fixtures" / "alignment_gold"
    stand_ins = {"ud-english-ewt": {"dev": "", "test": "", "licence": "CC BY-SA 4.0\n"},
                 "rwth-alignment": {"src": (gold / "src.en").read_text(), "tgt": (gold / "tgt.de").read_text(),
                                    "links": german_first((gold / "gold.talp").read_text())}}
    with FileServer(tmp_path / "mirror") as srv:
        monkeypatch.setattr(ds, "PARTS", serve_stand_ins(srv, stand_ins, tmp_path / "built"))
        monkeypatch.setenv("ATTN_EXPLORER_DATA_DOWNLOADS", "on")
        monkeypatch.setenv("ATTN_EXPLORER_DATA_MIRROR", srv.url)
        at = run("alignment")
        at.button(key="al_fetch").click().run()
        assert not at.exception, [e.value for e in at.exception]
        assert len(srv.log) == 6                                       # every file of `eval`, once
    assert (fresh / "eval/rwth-deen-alignment/gold.talp").read_text() == (gold / "gold.talp").read_text()
    assert "No gold alignments found" not in texts(at) and at.radio(key="al_mode").options == [
        "A pair with human gold links (RWTH German-English)", "Your own sentence"]
    assert not [b for b in at.button if b.key == "al_fetch"]


def test_queries_and_keys_of_an_imported_model_read_the_fetched_dev_set(fresh):
    corpus = fresh / "data" / ds.WMT14
    corpus.mkdir(parents=True)
    (corpus / "valid.en").write_text("the house is small\nthe cat sleeps\n")
    (corpus / "valid.de").write_text("das Haus ist klein\ndie Katze schläft\n")
    text = texts(run("qk"))
    assert "the first 2 sentences of newstest2013" in text and "get_data.py" not in text
