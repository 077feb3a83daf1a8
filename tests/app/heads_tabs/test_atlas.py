"""The Atlas tab of "What heads do": the shipped checkpoints' cached atlases show at once, a head picked shows its
scores and explorer links; a tiny imported model without an atlas computes one on demand (or says what it needs)."""
import pytest
from streamlit.testing.v1 import AppTest

from core.paths import REPO
from core.studies import atlas as core_atlas
from tests.helpers import FIXTURES

PAGE = str(REPO / "app" / "screens" / "heads.py")


def atlas_page(checkpoint: str, timeout: int = 120) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=timeout)
    at.session_state["checkpoint"] = checkpoint
    at.session_state["heads_tab"] = "Atlas"                 # lazy tabs: only this one runs
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.mark.slow
@pytest.mark.parametrize("checkpoint", ["news-small", "multi30k-small"])
def test_the_shipped_atlas_shows_and_a_head_opens_in_the_explorer(checkpoint):
    stored = core_atlas.read_atlas(REPO / "checkpoints" / checkpoint)
    at = atlas_page(checkpoint)
    assert [c.key for c in at.get("plotly_chart")] == ["heads_atlas_chart"]
    assert not [b for b in at.button if b.key == "heads_atlas_go"]             # cached: nothing to compute
    at.selectbox(key="heads_atlas_kind").set_value("cross").run()
    shown = next(e for e in stored["heads"]["cross"] if e.get("examples"))
    at.selectbox(key="heads_atlas_head_cross").set_value((shown["layer"], shown["head"])).run()
    assert not at.exception
    text = " ".join(m.value for m in at.markdown)
    assert f"**Layer {shown['layer']}, head {shown['head']}**" in text
    assert f"](./?checkpoint={checkpoint}&text=" in text
    assert f"&kind=cross&layer={shown['layer']}&head={shown['head']})" in text


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    """checkpoints/ with a tiny FSMT model (en -> de) and a tiny NLLB one (en -> fr), and ../shared moved to the
    hand-made fixtures (never the real evaluation data)."""
    pytest.importorskip("transformers", reason="transformers is not installed")
    from core.checkpoint.pretrained import convert_folder
    from tests.core.checkpoint.pretrained.hf_models import build_fsmt, build_m2m100
    root = tmp_path_factory.mktemp("atlas-imported")
    convert_folder(build_fsmt(root / "wmt19-tiny", max_positions=256), root / "checkpoints" / "fsmt-tiny")
    convert_folder(build_m2m100(root / "nllb-tiny", "nllb", max_positions=256), root / "checkpoints" / "nllb-en-fr",
                   src_lang="eng_Latn", tgt_lang="fra_Latn")
    shared = root / "shared" / "eval"
    (shared / "ud-english-ewt").mkdir(parents=True)
    (shared / "ud-english-ewt" / "en_ewt-ud-dev.conllu").write_bytes((FIXTURES / "syntax" / "mini.conllu").read_bytes())
    (shared / "rwth-deen-alignment").mkdir()
    for name in ("src.en", "tgt.de", "gold.talp"):
        (shared / "rwth-deen-alignment" / name).write_bytes((FIXTURES / "alignment_gold" / name).read_bytes())
    return root


@pytest.mark.slow
def test_an_imported_model_computes_its_atlas_on_demand(imported, monkeypatch):
    monkeypatch.setenv("ATTN_EXPLORER_CHECKPOINTS", str(imported / "checkpoints"))
    monkeypatch.setenv("ATTN_EXPLORER_SHARED", str(imported / "shared"))
    at = atlas_page("fsmt-tiny")
    assert not at.get("plotly_chart") and not at.info                       # English -> German: every role fits
    at.button(key="heads_atlas_go").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert [c.key for c in at.get("plotly_chart")] == ["heads_atlas_chart"]
    assert (imported / "checkpoints" / "fsmt-tiny" / core_atlas.FILE).is_file()   # kept for the next visit
    french = atlas_page("nllb-en-fr")
    notes = [i.value for i in french.info]
    assert len(notes) == 1 and "English -> German" in notes[0]               # the encoder's roles still apply
