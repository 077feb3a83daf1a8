"""app/main.py's navigation: pages grouped into sidebar sections, every page file listed once, the explorer first
(the default page), and a page file not written yet left out. The pages themselves are not run here."""
import shutil
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

import app.sidebar  # noqa: F401  (the installed package, imported before a copy of main.py runs from elsewhere)
from core.paths import REPO

APP = REPO / "app"


@pytest.fixture
def navigation(monkeypatch, tmp_path):
    """Run a main.py with AppTest; return what it gave st.navigation: {section: [(file name, title)]} and the page
    st.navigation chose. The chosen page is not run (only the navigation is tested: fast)."""
    monkeypatch.setenv("ATTN_EXPLORER_CHECKPOINTS", str(tmp_path / "none"))       # the untrained model only
    real_page, real_navigation, seen = st.Page, st.navigation, {}

    def page(path, **kwargs):
        made = real_page(path, **kwargs)
        seen[id(made)] = Path(path).name
        return made

    def navigation(pages, **kwargs):
        chosen = real_navigation(pages, **kwargs)
        seen["sections"] = {s: [(seen[id(p)], p.title) for p in ps] for s, ps in pages.items()}
        seen["default"] = (seen[id(chosen)], chosen.url_path)
        chosen.run = lambda: None
        return chosen

    monkeypatch.setattr(st, "Page", page)
    monkeypatch.setattr(st, "navigation", navigation)

    def run(main: Path) -> dict:
        at = AppTest.from_file(str(main), default_timeout=300).run()
        assert not at.exception, [e.value for e in at.exception]
        return seen
    return run


def test_pages_are_grouped_into_sections_and_every_page_is_listed_once(navigation):
    seen = navigation(APP / "main.py")
    assert list(seen["sections"]) == ["Explore a model", "The paper"]
    files = [f for pages in seen["sections"].values() for f, _ in pages]
    assert sorted(files) == sorted(p.name for p in (APP / "screens").glob("*.py") if p.name != "__init__.py")
    assert seen["sections"]["Explore a model"][0] == ("explorer.py", "Attention explorer")
    assert seen["default"] == ("explorer.py", "")                     # the first page is the default, at "/"
    assert ("paper_figures.py", "The paper's figures") in seen["sections"]["The paper"]


def test_a_page_file_not_written_yet_is_left_out_and_so_is_an_empty_section(navigation, tmp_path):
    copy = tmp_path / "app"
    (copy / "screens").mkdir(parents=True)
    shutil.copy(APP / "main.py", copy / "main.py")
    (copy / "screens" / "heads.py").write_text("")                      # the only page written
    seen = navigation(copy / "main.py")
    assert seen["sections"] == {"Explore a model": [("heads.py", "What heads do")]}
    assert seen["default"] == ("heads.py", "")
