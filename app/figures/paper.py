"""The paper's Figures 3-5 in its own style, and every head's score as a layer x head grid.

Pure builders shared by app/screens/paper_figures.py, scripts/export_figures.py and the tests.
Layers and heads are shown counting from 1, as the paper does; the arrays are indexed from 0.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from app.figures.attention import head_view_figure
from app.figures.heads import one_based
from app.figures.tokens import safe
from core.studies import long_arcs as la
from core.studies import paper_figures as pf
from core.views import AttentionView, sentence_only


def find_heads(number: int, result, sentence: str, words: bool = True) -> tuple[pf.FigureHeads, AttentionView]:
    """(the heads of paper Figure `number` found in an AttendResult of `sentence`, the encoder view to draw them
    on: words or pieces). The word view is computed once, and serves both the scores and the drawing."""
    finder, _ = pf.FIGURES[number]
    result = sentence_only(result)                                      # the paper's sentence: no prompt (T5)
    word = result.view("enc_self", words=True)
    found = finder(result.enc_self, result.src_tokens, sentence, view=word)
    return found, word if words else result.view("enc_self")


def paper_figure(view: AttentionView, layer: int, heads: list[int], focus: str | None = None, title: str = "",
                 layout: str = "rows") -> go.Figure:
    """One encoder layer of an encoder self-attention view (words or pieces, core.views) in the paper's style:
    the sentence twice, a line per weight, one colour per head.

    focus: a word of the sentence whose attentions alone are drawn (ValueError if it is not there).
    """
    focus_at = None
    if focus is not None:
        focus_at = (pf.find_words(view.rows, focus) if view.level == "words" else pf.find_pieces(view.rows, focus))[0]
    return head_view_figure(view.rows, view.cols, view.maps[layer], heads=heads, focus=focus_at, title=title,
                            layout=layout)


def figure_set(number: int, view: AttentionView, layer: int, heads: list[int], label: str = "") -> dict[str, go.Figure]:
    """The pictures of paper Figure 3, 4 or 5 for one layer and chosen heads of an encoder view, by file name.

    3: the attentions of 'making', the chosen heads (best first: the page starts with one). 4: full
    attentions of the first head, then those of 'its' for all chosen heads. 5: full attentions of each
    chosen head. label: prefixed to every title. Titles stay short: a file has no page to explain it.
    """
    heads = [int(h) for h in heads]
    if not heads:
        return {}
    pre, L = (f"{label}: " if label else ""), f"layer {layer + 1}"
    def draw(hs, focus, title):
        return paper_figure(view, layer, hs, focus, pre + title)
    names = " and ".join(f"head {h + 1}" for h in heads)
    if number == 3:
        return {"figure3": draw(heads, "making", f"Figure 3, {L}: 'making', {heads_phrase(heads)}")}
    if number == 4:
        return {"figure4_full": draw(heads[:1], None, f"Figure 4, {L}: full attentions of head {heads[0] + 1}"),
                "figure4_its": draw(heads, "its", f"Figure 4, {L}: only the attentions of 'its', {names}")}
    if number == 5:
        return {f"figure5_head{h + 1}": draw([h], None, f"Figure 5, {L}, head {h + 1}") for h in heads}
    raise ValueError(f"the paper's attention figures are 3, 4 and 5, not {number}")


def heads_phrase(heads: list[int]) -> str:
    """'head 3' or 'heads 3, 1 and 7' (1-based, in the given order)."""
    shown = [str(h + 1) for h in heads]
    if len(shown) == 1:
        return f"head {shown[0]}"
    return f"heads {', '.join(shown[:-1])} and {shown[-1]}"


def score_grid_figure(table: pd.DataFrame, value: str = "score", title: str = "",
                      chosen: tuple[int, list[int]] | None = None) -> go.Figure:
    """Every head's score as a heatmap, layers down and heads across (1-based labels); chosen heads boxed."""
    grid = table.pivot(index="layer", columns="head", values=value).sort_index().sort_index(axis=1)
    z = grid.to_numpy(dtype=float)
    layers, heads = [int(i) + 1 for i in grid.index], [int(h) + 1 for h in grid.columns]
    fig = go.Figure(go.Heatmap(
        z=z, x=heads, y=layers, colorscale="Blues", zmin=0.0, zmax=max(float(np.nanmax(z)), 1e-6),
        text=np.round(z, 2), texttemplate="%{text:.2f}", colorbar=dict(title=safe(value), thickness=12),
        hovertemplate="layer %{y}, head %{x}<br>" + safe(value) + " %{z:.3f}<extra></extra>"))
    if chosen is not None:
        layer, chosen_heads = chosen
        for h in chosen_heads:
            fig.add_shape(type="rect", x0=h + 0.5, x1=h + 1.5, y0=layer + 0.5, y1=layer + 1.5,
                          line=dict(color="crimson", width=3))
    fig.update_xaxes(title="head", tickmode="array", tickvals=heads, showgrid=False)
    fig.update_yaxes(title="layer", tickmode="array", tickvals=layers, autorange="reversed", showgrid=False)
    fig.update_layout(title=dict(text=safe(title), x=0.0), height=140 + 34 * len(layers),
                      width=max(380, 60 * len(heads) + 160), margin=dict(l=70, r=10, t=50, b=50),
                      plot_bgcolor="white")
    return fig


LINKS = {3: ("making", "more difficult"), 4: ("its", "Law")}   # the words a figure's score links


def describe_link(found) -> str:
    """In plain words: does any head link Figure 3's or 4's words (core.studies.paper_figures' threshold), and which?

    For Figure 4 the best head's share on 'application' and its next-word score are given beside it,
    so that a next-word head cannot pass for an anaphora head. "" for Figure 5 (no threshold).
    """
    if found.threshold is None or found.figure not in LINKS:
        return ""
    src, dst = LINKS[found.figure]
    rule = (f"a link needs at least {found.threshold:.2f} ({pf.LINK_FACTOR:g}x the {found.chance:.2f} of a head "
            f"that spreads its attention evenly, at most {pf.LINK_CAP:g}) and {pf.LINK_SELECTIVE:g}x what the "
            f"sentence's other words give '{dst}'")
    def say(r):
        return f"layer {int(r.layer) + 1}, head {int(r['head']) + 1}"
    if found.linked:
        r = found.linking.iloc[0]
        text = (f"**{say(r)} links '{src}' to '{dst}'**: it puts {r.score:.2f} of the attention of '{src}' on "
                f"'{dst}' (the other words give it {r.others:.2f}; {rule}).")
    else:
        r = found.best
        text = (f"**No head of this model links '{src}' to '{dst}'.** The most any head puts of '{src}' on "
                f"'{dst}' is {r.score:.2f} ({say(r)}; the other words give it {r.others:.2f}); {rule}.")
    if found.figure == 4:
        text += (f" The same head puts {r['→ application']:.2f} of 'its' on 'application', the next word, and "
                 f"gives on average {r['next word']:.2f} of a word's attention to the word after it "
                 f"(a next-word head scores near 1 there and is no anaphora head).")
    return text


def display_table(table: pd.DataFrame) -> pd.DataFrame:
    """The ranked table as users read it: layers and heads counted from 1, scores rounded."""
    return one_based(table).round(3)


def figure5_best(arcs: pd.DataFrame, k: int = 2) -> pd.DataFrame:
    """The k heads that follow the most gold arcs of Figure 5's sentence (core.studies.syntax.figure5_arcs'
    table, best first); ValueError when no head follows any."""
    best = arcs[arcs["followed"] > 0].head(k)
    if best.empty:
        raise ValueError("no head's strongest links follow any gold arc of this sentence")
    return best


def describe_figure5_head(row, words: list[str]) -> str:
    """In plain words: which relation one head of figure5_arcs follows, with an example and its overall score."""
    examples = [f"'{words[q]}' → '{words[p]}'" for q, p, rel, d in row["links"]
                if (rel, d) == (row["relation"], row["direction"])][:3]
    return (f"**Layer {int(row['layer']) + 1}, head {int(row['head']) + 1}** follows {int(row['followed'])} of the "
            f"sentence's {int(row['arcs'])} directed gold arcs ({row['score']:.0%}); most of all "
            f"**{row['relation']} {row['direction']}**: {int(row['relation_followed'])} of its "
            f"{int(row['relation_arcs'])} (" + ", ".join(examples) + ").")


def figure5_layer_note(best: pd.DataFrame, arcs: pd.DataFrame) -> str:
    """Where the best heads sit, against the paper's layer 5 of 6 (0-based pf.PAPER_LAYER)."""
    layers = sorted({int(r) for r in best["layer"]})
    if all(layer == pf.PAPER_LAYER for layer in layers):
        return "Both best heads are in layer 5, as in the paper."
    where = " and ".join(f"layer {layer + 1}" for layer in layers)
    in5 = arcs[arcs["layer"] == pf.PAPER_LAYER]
    text = (f"The best heads are not in layer 5, the paper's: they are in {where}." if pf.PAPER_LAYER not in layers
            else f"Only one of the best heads is in layer 5, the paper's; the other is elsewhere ({where}).")
    if not in5.empty and pf.PAPER_LAYER not in layers:
        r = in5.iloc[0]
        text += (f" Layer 5's best, head {int(r['head']) + 1}, follows {int(r['followed'])} of {int(r['arcs'])} "
                 f"arcs ({r['score']:.0%}).")
    return text


# --------------------------------------------------------------------------- beyond the figure's one sentence

def picked_head(found) -> tuple[int, int]:
    """(layer, head), 0-based, of the head a figure's sentence picks: the best of those that link the words, else
    the best-scoring one (as scripts/figure_links.py records it)."""
    r = found.linking.iloc[0] if found.linked else found.best
    return int(r["layer"]), int(r["head"])


def beyond_figure3(corpus: dict | None, found) -> str | None:
    """Figure 3 over a corpus (card figures.3.corpus) in a sentence a student reads; None without it."""
    return None if not corpus else la.sentence_line(corpus, *picked_head(found))


def beyond_figure4(pronouns: dict | None, found, atlas: dict | None = None) -> str | None:
    """Figure 4 over the anaphora set (card pronouns.anaphora_head, random halvings) in a sentence; None without.
    atlas (core.studies.atlas): adds the picked head's own hit rate on the whole set."""
    a = (pronouns or {}).get("anaphora_head") or {}
    h = a.get("random_halvings") or {}
    if not a or not h:
        return None
    layer, head = picked_head(found)
    if (layer + 1, head + 1) == (a["layer"], a["head"]):
        mine = "is that head."
    else:
        entry = next((e for e in (atlas or {}).get("heads", {}).get("enc_self", [])
                      if (e["layer"], e["head"]) == (layer + 1, head + 1) and "anaphora" in e["scores"]), None)
        mine = ("is another head" + (f": it does so in {entry['scores']['anaphora'][0]:.0f}% of the whole set."
                                     if entry else "."))
    return (f"Over {h['splits']:,} random halvings of the annotated pronoun sentences ({h['sentences_second_half']} "
            f"on each scoring side), the head chosen on one half (layer {a['layer']} head {a['head']} on the fixed "
            f"halving) points from the pronoun to its antecedent in {h['mean']:.0%} of the other half on average "
            f"(5-95%: {h['p05']:.0%}-{h['p95']:.0%}; a random pick: {a['chance']:.0%}); layer {layer + 1} head "
            f"{head + 1}, the one this sentence picks, {mine}")


def beyond_figure5(syntax: dict | None, found) -> str | None:
    """Figure 5 over gold parses (card syntax, scripts/evaluate_syntax.py) in a sentence; None without it."""
    if not syntax:
        return None
    layer, head = int(found.best["layer"]) + 1, int(found.best["head"]) + 1
    rows = syntax.get("syntactic", [])
    layers = ", ".join(f"layer {k}: {len(v)}" for k, v in syntax.get("layers", {}).items())
    own = [f"{r['relation']} {r['direction']} ({r['accuracy']:.0f}% vs {r['baseline']:.0f}%)" for r in rows
           if (r["layer"], r["head"]) == (layer, head)]
    return (f"Over {syntax['halves']['second']:,} held-out gold-parsed sentences, {len(rows)} of "
            f"{syntax['relations_scored']} relations and directions have a syntactic head (10 points or more over "
            f"the best fixed offset; {layers}); layer {layer} head {head}, the one this sentence picks, "
            + (f"is that head for {', '.join(own)}." if own else "is the chosen head for none of them."))


def long_arcs_figure(corpus: dict, picked: tuple[int, int] | None = None) -> go.Figure:
    """Layers x arc lengths: the held-out share of arcs each layer's best head follows (chosen on the other half),
    with the best fixed offset of each length as a last row; picked (0-based) named in the title."""
    lengths = list(corpus["by_layer"])
    z = np.array([corpus["by_layer"][k] for k in lengths], dtype=float).T                # (layers, lengths)
    base = {r["length"]: r["baseline"] for r in corpus["buckets"]}
    z = np.vstack([z, [base.get(k, np.nan) for k in lengths]])
    rows = [f"layer {i + 1}" for i in range(z.shape[0] - 1)] + ["best offset"]
    title = "Dependencies followed, by length (held-out %, each layer's best head)"
    if picked is not None and corpus.get("grid"):
        mine = corpus["grid"][picked[0]][picked[1]]
        title += f"; layer {picked[0] + 1} head {picked[1] + 1}: {mine:.1f}% at {corpus['length']}"
    fig = go.Figure(go.Heatmap(z=z, x=[f"{k} words" for k in lengths], y=rows, colorscale="Blues", zmin=0,
                               text=np.round(z, 1), texttemplate="%{text:.1f}", colorbar=dict(title="%", thickness=12),
                               hovertemplate="%{y}, %{x}: %{z:.1f}%<extra></extra>"))
    fig.update_yaxes(autorange="reversed")
    fig.update_layout(title=dict(text=safe(title), x=0.0), height=120 + 34 * len(rows), plot_bgcolor="white",
                      margin=dict(l=90, r=10, t=50, b=40))
    return fig
