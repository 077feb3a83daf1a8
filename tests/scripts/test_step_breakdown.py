"""scripts/bench/step_breakdown.py on the tiny corpus: every part of a step is timed, and the parts make up the step."""
import pytest

from scripts.bench import step_breakdown


def test_the_parts_make_up_the_step(corpus, capsys):
    out = step_breakdown.main(["--data", str(corpus[1]), "--preset", "tiny", "--batches", "2", "--passes", "2",
                               "--max-tokens", "64", "--threads", "1", "--precision", "fp32"])
    parts = out["parts_ms"]
    assert list(parts) == ["forward, model", "projection + loss", "backward", "clip", "adam"]
    assert all(v >= 0 for v in parts.values()), parts          # the decoder's output hook fired in every step
    rounding = 0.05 * (len(parts) + 1) + 1e-9                  # every figure is printed to 0.1 ms
    assert 0.8 * out["ms_per_step"] <= sum(parts.values()) <= out["ms_per_step"] + rounding
    modules = out["forward_modules_ms"]
    assert {"MultiHeadAttention", "PositionwiseFeedForward", "Dropout", "LayerNorm"} <= set(modules)
    assert modules["MultiHeadAttention"] <= parts["forward, model"]
    assert out["set"] == ["norm=pre"] and out["batches"] == 2 and out["target_tokens_per_s"] > 0
    assert '"parts_ms"' in capsys.readouterr().out


def test_it_asks_for_prepared_data(tmp_path):
    with pytest.raises(SystemExit):
        step_breakdown.main(["--data", str(tmp_path)])
