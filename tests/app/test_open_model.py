"""app/open_model.py: "Open a Hugging Face model" in the sidebar, against a local imitation of the Hub serving a tiny
FSMT model: the model is downloaded, converted, listed and picked; the server's settings turn downloads off, limit
them to a list of ids, or cap their size, each refused with its reason before anything is downloaded."""
import pytest
from streamlit.testing.v1 import AppTest

pytest.importorskip("transformers", reason="transformers is not installed (pip install -r requirements-dev.txt)")
from app.checkpoints import UNTRAINED  # noqa: E402
from app.open_model import start_opening  # noqa: E402
from tests.core.checkpoint.pretrained.fake_hub import serving  # noqa: E402
from tests.core.checkpoint.pretrained.hf_models import build_fsmt  # noqa: E402

REPO = "facebook/wmt19-tiny"


@pytest.fixture(scope="module")
def fsmt_repo(tmp_path_factory):
    return build_fsmt(tmp_path_factory.mktemp("repos") / "wmt19-tiny")


@pytest.fixture
def hub(fsmt_repo, tmp_path, monkeypatch):
    monkeypatch.setenv("ATTN_EXPLORER_CHECKPOINTS", str(tmp_path / "no-checkpoints"))
    with serving({REPO: fsmt_repo}, monkeypatch, tmp_path) as fake:
        yield fake


def show_sidebar():
    from app.sidebar import sidebar
    sidebar()


def open_in_sidebar(model_id: str) -> AppTest:
    at = AppTest.from_function(show_sidebar, default_timeout=120)
    at.run()
    at.text_input(key="hub_model_id").input(model_id)
    at.button(key="hub_open").click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_a_model_opened_by_its_id_is_listed_picked_and_loaded(hub):
    at = open_in_sidebar(REPO)
    assert not at.sidebar.error, [e.value for e in at.sidebar.error]
    assert at.selectbox(key="checkpoint").options == [REPO, UNTRAINED]
    assert at.session_state["checkpoint"] == "facebook--wmt19-tiny"
    assert [i.value for i in at.sidebar.info] == [
        f"Imported, not trained here: {REPO} (FSMT), converted from the Hugging Face format."]
    assert "model.safetensors" in hub.fetched()


@pytest.mark.slow
@pytest.mark.parametrize("setting, value, match", [
    ("ATTN_EXPLORER_HUB", "Helsinki-NLP/opus-mt-en-de, Helsinki-NLP/opus-mt-en-fr",
     "opens only these Hugging Face models: Helsinki-NLP/opus-mt-en-de, Helsinki-NLP/opus-mt-en-fr"),
    ("ATTN_EXPLORER_HUB_MAX_GB", "0.0001", "GB to download; this server allows at most 0.00 GB"),
])
def test_the_servers_settings_refuse_before_downloading(hub, monkeypatch, setting, value, match):
    monkeypatch.setenv(setting, value)
    at = open_in_sidebar(REPO)
    assert len(at.sidebar.error) == 1 and match in at.sidebar.error[0].value
    assert "model.safetensors" not in hub.fetched()
    assert at.selectbox(key="checkpoint").options == [UNTRAINED]


def test_downloads_turned_off_show_no_form(hub, monkeypatch):
    monkeypatch.setenv("ATTN_EXPLORER_HUB", "off")
    at = AppTest.from_function(show_sidebar, default_timeout=120)
    at.run()
    assert not at.text_input and any("turned off on this server" in c.value for c in at.caption)


def test_an_id_that_is_not_one_is_a_readable_error(hub):
    at = open_in_sidebar("opus-mt-en-de")
    assert "is not a Hugging Face model id: it is owner/name" in at.sidebar.error[0].value
    assert not hub.requests


def test_two_askers_share_one_download(hub):
    first, second = start_opening(REPO), start_opening(REPO)
    assert first is second
    first.thread.join(60)
    assert first.error is None and first.folder.name == "facebook--wmt19-tiny" and first.fraction == 1.0


@pytest.mark.slow
def test_other_sessions_keep_working_while_a_model_downloads(hub):
    hub.slow["model.safetensors"] = 3.0
    opening = start_opening(REPO)
    other = AppTest.from_function(show_sidebar, default_timeout=120)
    other.run()                                       # another visitor's page, meanwhile
    assert not other.exception and opening.thread.is_alive()
    opening.thread.join(60)
    assert opening.error is None
