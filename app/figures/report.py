"""One sentence's attention as a single HTML file that opens in any browser, offline and without Python.

The file holds Plotly's JavaScript itself (no CDN: it draws on a school computer with no network), every map of the
sentence (each kind of attention, layer and head, as weights in thousandths: a 30-word sentence's maps take a few
hundred KB beside Plotly's ~4.8 MB), the translation, the checkpoint's name and card summary, and the date. Three
menus switch the kind, the layer and the head, as in the explorer; the map is the explorer's own figure
(app.figures.attention.heatmap_figure, words on top), its weights swapped in by a few lines of JavaScript.

Pure: an AttendResult in, HTML text out (app.notebook.report, scripts/export_report.py and the explorer use it).
"""
from __future__ import annotations

import datetime
import html
import json

import numpy as np
from plotly.offline import get_plotlyjs

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
<p><b>English:</b> {src}<br><b>{tgt_label}:</b> {tgt}</p>
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


def report_kind(view, kind: str) -> dict:
    """One kind of attention for the file: its name, the explorer's figure for its labels (without weights) and every
    layer's and head's map in thousandths, [layer][head][row][col]."""
    frame = heatmap_figure(np.zeros((len(view.rows), len(view.cols)), np.float32), view.rows, view.cols,
                           zmax=1.0, row_title=ROW_TITLES[kind], col_title=COL_TITLES[kind], words_on_top=True)
    return {"name": KINDS[kind], "frame": json.loads(frame.to_json()),
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
    data = {"scale": SCALE, "heads": int(np.asarray(res.enc_self).shape[1]), "kinds": kinds}
    text = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")     # never ends the <script> early
    page = PAGE.format(
        title=html.escape(f"Attention in {checkpoint}: {short(res.src)}"), src=html.escape(res.src),
        tgt_label="German (your translation, read by the decoder)" if res.teacher_forced else "German (the model's)",
        tgt=html.escape(res.tgt or "(empty)"), about=html.escape(about),
        date=(date or datetime.date.today()).isoformat(), size=SIZE_MARK,
        words="Whole words: a word's pieces merged." if words else "The model's pieces, as it reads them.",
        plotly=get_plotlyjs(), data=text)
    size = len(page.encode("utf-8"))
    return page.replace(SIZE_MARK, megabytes(size))
