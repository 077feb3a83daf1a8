"""scripts/import_hf.py: a Hub id (from a local imitation of the Hub) into the explorer's cache, a folder into OUT,
and a readable error for what it cannot open."""
import pytest

pytest.importorskip("transformers", reason="transformers is not installed (pip install -r requirements-dev.txt)")

from core import load_checkpoint  # noqa: E402
from core.checkpoint.pretrained import converted_models  # noqa: E402
from scripts.import_hf import main  # noqa: E402
from tests.core.checkpoint.pretrained.fake_hub import serving  # noqa: E402
from tests.core.checkpoint.pretrained.hf_models import build_fsmt  # noqa: E402


def test_a_hub_id_goes_into_the_cache_and_a_folder_into_out(tmp_path, monkeypatch, capsys):
    folder = build_fsmt(tmp_path / "wmt19-tiny")
    with serving({"facebook/wmt19-tiny": folder}, monkeypatch, tmp_path):
        main(["facebook/wmt19-tiny"])
    assert [p.name for p in converted_models()] == ["facebook--wmt19-tiny"]
    assert "imported facebook/wmt19-tiny -> " in capsys.readouterr().out
    main([str(folder), str(tmp_path / "out"), "--fp32"])
    assert load_checkpoint(tmp_path / "out").cfg.pe_layout == "fairseq"
    with pytest.raises(SystemExit, match="error: 'no such thing' is neither a folder"):
        main(["no such thing"])
