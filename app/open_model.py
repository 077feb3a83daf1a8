"""The sidebar's "Open a Hugging Face model": a Hub id (and, for a many-to-many model, a direction) downloaded and
converted once by core.checkpoint.pretrained, in a thread of its own with a progress bar. The session that asked
waits for it; every other session of the server keeps working, and one that asks for the same model meanwhile
waits for the same download. What may be downloaded is the server's choice (app.checkpoints.hub_refusal and
hub_limits: ATTN_EXPLORER_HUB, ATTN_EXPLORER_HUB_MAX_GB); the memory guard applies when the model is loaded.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import streamlit as st

from app.checkpoints import hub_allowed, hub_limits, hub_refusal
from core.checkpoint.pretrained import HFImportError, pretrained_checkpoint
from core.checkpoint.pretrained.hub import hub_id, looks_like_repo_id

OPENED = "_opened_checkpoint"     # session state: a model just opened, to be picked in the sidebar on the rerun
EXAMPLE = "Helsinki-NLP/opus-mt-en-de"


@dataclass
class Opening:
    """One download and conversion, under way or done: how far it is, and its checkpoint folder or its error."""
    fraction: float = 0.0
    text: str = "Asking the Hugging Face Hub…"
    folder: Path | None = None
    error: str | None = None
    thread: threading.Thread | None = field(default=None, repr=False)

    def report(self, fraction: float, text: str) -> None:
        self.fraction, self.text = fraction, text

    def run(self, model_id: str, src_lang: str | None, tgt_lang: str | None) -> None:
        try:
            self.folder = pretrained_checkpoint(model_id, None, src_lang, tgt_lang, limits=hub_limits(),
                                                progress=self.report)
        except HFImportError as e:
            self.error = str(e)
        except Exception as e:       # a thread's error would otherwise vanish: the student sees it
            self.error = f"Opening '{model_id}' failed unexpectedly ({type(e).__name__}: {e})."


_OPENINGS: dict[tuple, Opening] = {}      # one per model and direction, shared by the server's sessions
_GUARD = threading.Lock()


def start_opening(model_id: str, src_lang: str | None = None, tgt_lang: str | None = None) -> Opening:
    """The Opening of this model and direction: the one under way, else a new one started in its own thread."""
    key = (model_id, src_lang, tgt_lang)
    with _GUARD:
        opening = _OPENINGS.get(key)
        if opening is None or not opening.thread.is_alive():
            opening = Opening()
            opening.thread = threading.Thread(target=opening.run, args=key, daemon=True,
                                              name=f"open {model_id}")
            _OPENINGS[key] = opening
            opening.thread.start()
        return opening


def wait_with_bar(opening: Opening) -> None:
    """Show the opening's progress until it is done (a few times a second), then empty the bar."""
    bar = st.progress(0.0, text=opening.text)
    while opening.thread.is_alive():
        bar.progress(min(max(opening.fraction, 0.0), 1.0), text=opening.text)
        time.sleep(0.25)
    bar.empty()


def open_model_form() -> None:
    """The sidebar's form: a model id, a direction where one is needed, and Open."""
    allowed = hub_allowed()
    with st.sidebar.expander("Open a Hugging Face model"):
        if allowed is False:
            st.caption("Opening models from Hugging Face is turned off on this server.")
            return
        model_id = st.text_input("Model id", key="hub_model_id", placeholder=EXAMPLE,
                                 help="A model on huggingface.co. A translation model: Marian "
                                      "(Helsinki-NLP/opus-mt-*), NLLB-200, M2M100, mBART-50, FSMT "
                                      "(facebook/wmt19-*) or T5, mT5, Flan-T5 (google-t5/t5-small). A language "
                                      "model: GPT-2 (openai-community/gpt2), Llama (HuggingFaceTB/SmolLM2-135M), "
                                      "Qwen2 (Qwen/Qwen2.5-0.5B), Pythia (EleutherAI/pythia-70m), BERT, RoBERTa "
                                      "or DistilBERT. Downloaded and converted once, then listed with the "
                                      "checkpoints.")
        if allowed is not True:
            st.caption("This server opens: " + ", ".join(sorted(allowed)))
        left, right = st.columns(2)
        src = left.text_input("From", key="hub_src_lang", placeholder="en_XX",
                              help="Many-to-many models and T5 only (a language model needs none): the source "
                                   "language (NLLB eng_Latn, M2M100 en, mBART-50 en_XX; T5's prompt: en or English). "
                                   "Empty: English.")
        tgt = right.text_input("To", key="hub_tgt_lang", placeholder="de_DE",
                               help="Many-to-many models and T5 only: the target language (NLLB deu_Latn, M2M100 "
                                    "de, mBART-50 de_DE; T5's prompt: de or German). Empty: German.")
        if not st.button("Open", key="hub_open"):
            return
        model_id = hub_id(model_id)                 # 't5-small' is google-t5/t5-small
        if not looks_like_repo_id(model_id):
            st.error(f"'{model_id}' is not a Hugging Face model id: it is owner/name, e.g. {EXAMPLE}.")
            return
        if refusal := hub_refusal(model_id):
            st.error(refusal)
            return
        opening = start_opening(model_id, src.strip() or None, tgt.strip() or None)
        wait_with_bar(opening)
    if opening.error:
        st.sidebar.error(opening.error)
        return
    st.session_state[OPENED] = opening.folder.name
    st.rerun()


def pick_opened(names: list[str]) -> None:
    """Before the checkpoint picker is drawn: a model opened on the last run becomes the picked checkpoint."""
    opened = st.session_state.pop(OPENED, None)
    if opened in names:
        st.session_state.checkpoint = opened
        st.session_state.checkpoint_picked = True
