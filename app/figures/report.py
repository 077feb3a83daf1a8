"""One sentence's attention as a single HTML file that opens in any browser, offline and without Python.

The file holds Plotly's JavaScript itself (no CDN: it draws on a school computer with no network), every map of the
sentence (each kind of attention, layer and head, as weights in thousandths: a 30-word sentence's maps take a few
hundred KB beside Plotly's ~4.8 MB), the translation, the checkpoint's name and card summary, and the date. Three
menus switch the kind, the layer and the head, as in the explorer; the map is the explorer's own figure
(app.figures.attention.heatmap_figure, words on top), its weights swapped in by a few lines of JavaScript.

A language model's file (lm_report) has its one kind of map, self-attention, the text and what the model makes of it,
and figures below the map (app/lm/report.py: the head finder's grids).

Pure: an AttendResult (or a language model's view) in, HTML text out (app.notebook.report, scripts/export_report.py
and the explorer use it).
"""
from __future__ import annotations

import datetime
import html
import json

import numpy as np
import plotly.graph_objects as go
from plotly.offline import get_plotlyjs
from plotly.utils import PlotlyJSONEncoder

from app.figures.attention import COL_TITLES, ROW_TITLES, heatmap_figure
from core.views import KINDS

SCALE = 1000               # weights are stored as thousandths (integers): a third of the size of decimals in JSON
SIZE_MARK = "@@SIZE@@"     # replaced by the file's own size once it is known

PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: "Source Sans Pro", "Helvetica Neue", Arial, sans-serif; color: #1a1a1a; margin: 1.5rem auto;
       max-width: 960px; padding: 0 1rem; }}
h1 {{ font-size: 1.6rem; margin: 0 0 .5rem; }}
.facts {{ color: #444; font-size: .95rem; }}
.controls {{ display: flex; gap: 1.2rem; flex-wrap: wrap; margin: 1rem 0 .5rem; }}
.controls label {{ font-size: .9rem; color: #444; display: flex; flex-direction: column; gap: .2rem; }}
select {{ font-size: 1rem; padding: .2rem; }}
</style></head><body>
<h1>{title}</h1>
<p>{texts}</p>
<p class="facts">{about}<br>Made by Attention Explorer on {date}. This file: {size} (everything is inside it: it
opens in a browser with no network).</p>
<div class="controls">
 <label>Attention <select id="kind"></select></label>
 <label>Layer <select id="layer"></select></label>
 <label>Head <select id="head"></select></label>
</div>
<div id="map"></div>
<p class="facts">Rows attend, columns are attended; each row's weights add up to 1. {words}</p>
<script>{plotly}</script>
{extras}
<script id="report-data" type="application/json">{data}</script>
<script>
const R = JSON.parse(document.getElementById("report-data").textContent);
const pick = id => document.getElementById(id);
function fill(select, labels, keep) {{
  const old = select.value;
  select.innerHTML = labels.map((t, i) => `<option value="${{i}}">${{t}}</option>`).join("");
  if (keep && old !== "" && +old < labels.length) select.value = old;
}}
function draw() {{
  const kind = R.kinds[pick("kind").value], layer = +pick("layer").value, head = +pick("head").value;
  const z = kind.maps[layer][head].map(row => row.map(w => w / R.scale));
  const layout = Object.assign({{}}, kind.frame.layout, {{title: Object.assign({{}}, kind.frame.layout.title,
    {{text: `${{kind.name}}, layer ${{layer + 1}} of ${{kind.maps.length}}, head ${{head + 1}} of ${{R.heads}}`}})}});
  Plotly.react("map", [Object.assign({{}}, kind.frame.data[0], {{z: z}})], layout, {{displaylogo: false}});
}}
function kindChanged() {{
  const kind = R.kinds[pick("kind").value];
  fill(pick("layer"), kind.maps.map((_, i) => `${{i + 1}} of ${{kind.maps.length}}`), true);
  draw();
}}
pick("kind").innerHTML = Object.entries(R.kinds)
  .map(([k, v]) => `<option value="${{k}}">${{v.name}}</option>`).join("");
fill(pick("head"), Array.from({{length: R.heads}}, (_, i) => `${{i + 1}} of ${{R.heads}}`), false);
pick("kind").onchange = kindChanged;
pick("layer").onchange = draw;
pick("head").onchange = draw;
kindChanged();
</script></body></html>
"""


def report_kind(view, kind: str, titles: tuple[str, str, str] | None = None) -> dict:
    """One kind of attention for the file: its name, the explorer's figure for its labels (without weights) and every
    layer's and head's map in thousandths, [layer][head][row][col]. titles: (name, row title, column title) of a
    kind core.views does not name (a language model's self-attention)."""
    name, row_title, col_title = titles or (KINDS[kind], ROW_TITLES[kind], COL_TITLES[kind])
    frame = heatmap_figure(np.zeros((len(view.rows), len(view.cols)), np.float32), view.rows, view.cols,
                           zmax=1.0, row_title=row_title, col_title=col_title, words_on_top=True)
    return {"name": name, "frame": json.loads(frame.to_json()),
            "maps": np.rint(np.asarray(view.maps, dtype=np.float32) * SCALE).astype(np.int16).tolist()}


def short(sentence: str, chars: int = 60) -> str:
    """The sentence's start for a title, cut at a word, with an ellipsis when cut."""
    if len(sentence) <= chars:
        return sentence
    return sentence[:chars].rsplit(" ", 1)[0] + "…"


def megabytes(n_bytes: int) -> str:
    return f"{n_bytes / 1e6:.1f} MB"


def sentence_report(res, checkpoint: str, about: str, words: bool = True, date: datetime.date | None = None) -> str:
    """The HTML file (text) of one sentence's AttendResult: every kind, layer and head, switchable; `about`: a line
    on the checkpoint (its card's summary); words: pieces merged into words, as the explorer shows them."""
    kinds = {kind: report_kind(res.view(kind, words=words), kind) for kind in KINDS
             if getattr(res, kind, None) is not None}
    tgt_label = "German (your translation, read by the decoder)" if res.teacher_forced else "German (the model's)"
    texts = [("English", res.src), (tgt_label, res.tgt or "(empty)")]
    return html_page(f"Attention in {checkpoint}: {short(res.src)}", texts, about, kinds,
                     int(np.asarray(res.enc_self).shape[1]),
                     "Whole words: a word's pieces merged." if words else "The model's pieces, as it reads them.",
                     date=date)


def lm_report(view, titles: tuple[str, str, str], texts: list[tuple[str, str]], checkpoint: str, about: str,
              figures: list[tuple[go.Figure, str]] = (), date: datetime.date | None = None) -> str:
    """The HTML file of a language model's text: its one kind of map (an AttentionView, every layer and head;
    titles: its name, row and column titles), lines of (label, text) above it, and (figure, caption) pairs below."""
    kinds = {view.kind: report_kind(view, view.kind, titles)}
    return html_page(f"Attention in {checkpoint}: {short(texts[0][1])}", texts, about, kinds,
                     int(np.asarray(view.maps).shape[1]), "The model's tokens, as it reads them.", figures, date)


def html_page(title: str, texts: list[tuple[str, str]], about: str, kinds: dict, heads: int, words: str,
              figures: list[tuple[go.Figure, str]] = (), date: datetime.date | None = None) -> str:
    """The file itself: the texts as (label, text) lines, the kinds' maps behind the menus, then the figures, each
    drawn from its JSON by the Plotly inside the file, with its caption; its size written in it."""
    data = {"scale": SCALE, "heads": heads, "kinds": kinds}
    extras = "".join(
        f'<div id="figure{i}"></div><p class="facts">{html.escape(caption)}</p>'
        f'<script>(() => {{ const f = {safe_json(fig.to_plotly_json())}; '
        f'Plotly.newPlot("figure{i}", f.data, f.layout, {{displaylogo: false}}); }})();</script>'
        for i, (fig, caption) in enumerate(figures))
    page = PAGE.format(
        title=html.escape(title), texts="<br>".join(f"<b>{html.escape(k)}:</b> {html.escape(v)}" for k, v in texts),
        about=html.escape(about), date=(date or datetime.date.today()).isoformat(), size=SIZE_MARK, words=words,
        plotly=get_plotlyjs(), data=safe_json(data), extras=extras)
    size = len(page.encode("utf-8"))
    return page.replace(SIZE_MARK, megabytes(size))


def safe_json(value) -> str:
    """JSON text that never ends a <script> early."""
    return json.dumps(value, separators=(",", ":"), cls=PlotlyJSONEncoder).replace("</", "<\\/")
