"""The Atlas tab of "What heads do": every head of every kind coloured by its strongest role over a corpus
(core.studies.atlas; a language model's self-attention: core.studies.lm_atlas, for app/lm/heads.py), read from the
checkpoint's atlas.json (scripts/compute_atlas.py) or computed here on demand; click a head (or pick it) for its
scores and the corpus sentences where it does its role most, each a link to the explorer."""
from pathlib import Path

import streamlit as st

from app.checkpoints import UNTRAINED, is_language_model, languages
from app.data_notice import offer_download
from app.display import clicked_numbers, show_figure
from app.figures import atlas as figs
from app.heads_tabs.common import KEEP
from app.text import md_escape
from core.paths import portable
from core.studies import atlas as core_atlas
from core.studies import lm_atlas


@st.cache_data(show_spinner=False, max_entries=8)
def cached_atlas(path: str, version: float) -> dict | None:
    """A checkpoint's atlas.json, read once per version of the file (its modification time)."""
    return core_atlas.read_atlas(Path(path).parent)


def stored_atlas(folder) -> dict | None:
    """The atlas in a checkpoint folder, None if it has none."""
    path = Path(folder) / core_atlas.FILE if folder else None
    if path is None or not path.is_file():
        return None
    return cached_atlas(str(path), path.stat().st_mtime)


def compute_here(ckpt, model) -> dict | None:
    """The atlas of a model without one: what it needs, a button, a progress bar; written into its folder when it
    can be (else kept for this visit). None until computed."""
    saved = st.session_state.get("heads_atlas")
    if saved and saved[0] == ckpt:
        return saved[1]
    if is_language_model(model):                 # the probe sentences ship with the code: nothing to fetch
        def compute(progress):
            return lm_atlas.compute_lm_atlas(model, name=ckpt.name, progress=progress)
    else:
        sentences, pairs, notes = core_atlas.load_corpora(languages(model.card))
        for note in notes:
            st.info(note)
        if any("get_data.py" in note for note in notes):
            offer_download("eval", "heads_atlas_fetch")
        if not sentences and not pairs:
            st.warning("No corpus fits this model, so there is no atlas to draw.")
            return None
        def compute(progress):
            return core_atlas.compute_atlas(model, sentences, pairs, ckpt.name, progress=progress)
    if model.folder and ckpt.name != UNTRAINED:
        st.caption(f"Computed once, it is saved as {core_atlas.FILE} in the checkpoint's folder: "
                   f"`python scripts/compute_atlas.py {portable(model.folder)}` does the same.")
    if not st.button("Compute the atlas (a minute or a few on a laptop)", key="heads_atlas_go"):
        return None
    bar = st.progress(0.0, text="Starting…")
    result = compute(lambda done, total, text: bar.progress(min(done / total, 1.0), text=text))
    bar.empty()
    try:
        if model.folder and ckpt.name != UNTRAINED:
            core_atlas.write_atlas(model.folder, result)
    except OSError as e:
        st.info(f"The atlas could not be saved in the checkpoint's folder ({e}); it is kept for this visit.")
    st.session_state.heads_atlas = (ckpt, result)
    return result


def pick_head(atlas: dict, chart) -> tuple[str, dict]:
    """(kind, head entry) picked by a click on the figure or by the selectors below it."""
    kinds = figs.kinds_of(atlas)
    picked = clicked_numbers(chart, 3)
    if picked and picked != st.session_state.get("heads_atlas_clicked"):      # a new click, not the last one kept
        st.session_state.heads_atlas_clicked = picked
        kind = core_atlas.EVERY_KIND[int(picked[0])]
        st.session_state.heads_atlas_kind = kind
        st.session_state[f"heads_atlas_head_{kind}"] = (int(picked[1]), int(picked[2]))
    c1, c2 = st.columns([1, 2])
    kind = c1.selectbox("Attention", kinds, format_func=lambda k: figs.kind_name(atlas, k), key="heads_atlas_kind",
                        persist_state=KEEP)
    entries = {(e["layer"], e["head"]): e for e in atlas["heads"][kind]}
    layer_head = c2.selectbox("Head", list(entries), key=f"heads_atlas_head_{kind}", persist_state=KEEP,
                              format_func=lambda lh: f"layer {lh[0]}, head {lh[1]}: "
                                                     f"{figs.role_name(entries[lh]['role'])}")
    return kind, entries[layer_head]


def head_details(ckpt, atlas: dict, kind: str, entry: dict) -> None:
    """One head: its role in words, its scores against their baselines, its example sentences as explorer links."""
    role = entry["role"]
    what = figs.role_name(role) + (f" ({entry['detail']})" if entry.get("detail") else "")
    if role is None:
        st.markdown(f"**Layer {entry['layer']}, head {entry['head']}** has no role above its baseline: none of "
                    f"the roles below beats its baseline by {atlas['margin']:g} points.")
    else:
        score, base = entry["scores"][role]
        st.markdown(f"**Layer {entry['layer']}, head {entry['head']}** {md_escape(what)}: {score:.1f}% against a "
                    f"baseline of {base:.1f}%.")
    st.dataframe(figs.head_table(entry), hide_index=True)
    examples = entry.get("examples", [])
    if examples:
        st.markdown("Sentences of the corpus where it does so most (each opens in the explorer on this head):")
    for i in examples:
        src, tgt = atlas["sentences"][i]
        link = figs.explorer_link(ckpt.name, kind, entry["layer"], entry["head"], src, tgt)
        st.markdown(f"- [{md_escape(src)}]({link})" + (f" → *{md_escape(tgt)}*" if tgt else ""))


def atlas_tab(ckpt, model) -> None:
    """Tab: the atlas figure, then the picked head's scores and sentences."""
    atlas = stored_atlas(model.folder) or compute_here(ckpt, model)
    if atlas is None:
        return
    chart = show_figure(figs.atlas_figure(atlas), f"atlas_{ckpt.name}", key="heads_atlas_chart",
                        on_select="rerun", selection_mode="points")
    corpus = "; ".join(f"{figs.kind_name(atlas, k)}: {c}" for k, c in atlas["corpus"].items())
    baselines = ("a random pick among the tokens a row sees" if "family" in atlas
                 else "a random pick, the best fixed offset, the diagonal alignment")
    st.caption(f"Each head's strongest role: how often its strongest link is the one the role names, against that "
               f"role's baseline ({baselines}); a role counts at {atlas['margin']:g} points or more over it; "
               f"resting (a sink) only for a head with no other role. Measured on {corpus}, {atlas['date']}. "
               "Click a head, or pick it below.")
    kind, entry = pick_head(atlas, chart)
    head_details(ckpt, atlas, kind, entry)
