"""What every page shares: the checkpoint picker in the sidebar, the cached model and cached attention."""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from core import CheckpointError, Transformer, TranslationModel, load_checkpoint, preset

ROOT = Path(__file__).resolve().parents[1]
CHECKPOINTS = ROOT / "checkpoints"
UNTRAINED = "(untrained model)"


def checkpoint_names() -> list[str]:
    """Folders of checkpoints/ that look like checkpoints, then the untrained fallback."""
    names = sorted(p.name for p in CHECKPOINTS.glob("*") if (p / "config.json").exists())
    return names + [UNTRAINED]


@st.cache_resource(show_spinner="Loading the model…")
def get_model(name: str) -> TranslationModel:
    """The model, loaded once per process; raises CheckpointError for a broken folder."""
    if name == UNTRAINED:
        return untrained_model()
    return load_checkpoint(CHECKPOINTS / name)


def untrained_model() -> TranslationModel:
    """A freshly initialised small model with a byte-level tokenizer, for when no checkpoint exists."""
    from app.fallback_tokenizer import fallback_tokenizer
    tok = fallback_tokenizer()
    cfg = preset("small", vocab_size=len(tok), dropout=0.0)
    return TranslationModel(Transformer(cfg), tok, {"name": UNTRAINED, "trained_here": False,
                                                     "note": "freshly initialised: its attention is noise"})


@st.cache_data(max_entries=64, show_spinner="Translating and collecting every attention map…")
def get_attention(name: str, src: str, tgt: str | None = None, beam: int = 1):
    """AttendResult for (checkpoint, sentence, target, beam): switching layer or head reuses it."""
    return get_model(name).attend(src, tgt=tgt, beam=beam)


def current_model_name() -> str:
    return st.session_state.get("checkpoint", checkpoint_names()[0])


def sidebar() -> None:
    """Checkpoint picker and its card; a broken checkpoint shows a message and the others stay pickable."""
    names = checkpoint_names()
    with st.sidebar:
        name = st.selectbox("Checkpoint", names, key="checkpoint",
                            help="Models in the checkpoints/ folder. Pick another if one fails to load.")
        try:
            model = get_model(name)
        except CheckpointError as e:
            st.error(f"This checkpoint cannot be loaded: {e}\n\nPick another one above.")
            return
        card = model.card
        if name == UNTRAINED:
            st.warning("No trained checkpoint is loaded: this model is freshly initialised, "
                       "so its attention patterns are random.")
        elif not card.get("trained_here", True):
            st.info(f"Imported, not trained here: {card.get('source', 'see its card')}.")
        cfg = model.cfg
        st.caption(f"N={cfg.N} encoder / {cfg.n_dec} decoder layers, h={cfg.h} heads, d_model={cfg.d_model}")
        if card.get("test"):
            st.caption("Test: " + ", ".join(f"{k} {v}" for k, v in card["test"].items() if isinstance(v, (int, float))))


def model_or_stop() -> tuple[str, TranslationModel]:
    """For pages: the current checkpoint name and model, or a message and st.stop()."""
    name = current_model_name()
    try:
        return name, get_model(name)
    except CheckpointError as e:
        st.error(f"The checkpoint '{name}' cannot be loaded: {e}. Pick another in the sidebar.")
        st.stop()


def show_figure(fig, name: str, key: str | None = None) -> None:
    """Draw a Plotly or Altair figure with PNG and SVG downloads (owner: explorer page engineer; keep this signature)."""
    if hasattr(fig, "to_plotly_json"):
        st.plotly_chart(fig, key=key, config={"displaylogo": False,
                                              "toImageButtonOptions": {"format": "png", "filename": name}})
    else:
        st.altair_chart(fig, key=key)
