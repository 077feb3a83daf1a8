"""The Atlas tab of What heads do on language models: the planted induction model (core.studies.planted_induction)
computes its atlas on demand, names its induction and previous-token heads, saves atlas.json and links a head's
example sentences to the explorer; an encoder-only model (a tiny random BERT converted from transformers) gets its
own roles."""
import pytest

from core.studies import atlas as core_atlas
from tests.app.lm_fixtures import planted_checkpoint
from tests.helpers import run_page


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("lm-atlas")
    out = root / "checkpoints"
    planted_checkpoint(out / "planted-induction")
    pytest.importorskip("transformers", reason="transformers is not installed (pip install -r requirements-dev.txt)")
    from core.checkpoint.pretrained import convert_folder
    from tests.core.checkpoint.pretrained.encoder_models import build_encoder
    convert_folder(build_encoder(root / "hf-bert", "bert"), out / "bert-tiny")
    return out


def computed(folder, monkeypatch, name):
    at = run_page("heads", name, folder, monkeypatch, heads_tab="Atlas")
    assert not [i for i in at.info if "needs a translation model" in i.value]
    (go,) = [b for b in at.button if b.key == "heads_atlas_go"]
    go.click().run(timeout=240)
    assert not at.exception, [e.value for e in at.exception]
    assert [c.key for c in at.get("plotly_chart")] == ["heads_atlas_chart"]
    return at


def test_the_planted_model_computes_its_atlas_and_a_head_opens_in_the_explorer(folder, monkeypatch):
    at = computed(folder, monkeypatch, "planted-induction")
    stored = core_atlas.read_atlas(folder / "planted-induction")
    roles = {(e["layer"], e["head"]): e["role"] for e in stored["heads"]["self"]}
    assert roles[(2, 1)] == "induction" and roles[(1, 1)] == "previous"
    kind = at.selectbox(key="heads_atlas_kind")
    assert kind.options == ["Masked self-attention"]
    at.selectbox(key="heads_atlas_head_self").set_value((1, 1)).run()
    text = " ".join(m.value for m in at.markdown)
    assert "**Layer 1, head 1** looks at the previous token" in text
    assert "](./?checkpoint=planted-induction&text=" in text and "&kind=self&layer=1&head=1)" in text
    again = run_page("heads", "planted-induction", folder, monkeypatch, heads_tab="Atlas")
    assert not [b for b in again.button if b.key == "heads_atlas_go"]          # saved: shown at once
    assert [c.key for c in again.get("plotly_chart")] == ["heads_atlas_chart"]


def test_an_encoder_only_model_gets_its_own_roles(folder, monkeypatch):
    at = computed(folder, monkeypatch, "bert-tiny")
    assert at.selectbox(key="heads_atlas_kind").options == ["Self-attention"]
    stored = core_atlas.read_atlas(folder / "bert-tiny")
    assert set(stored["heads"]["self"][0]["scores"]) == {"previous", "next", "sink"}
    assert stored["corpus"]["self"].endswith("English probe sentences")
