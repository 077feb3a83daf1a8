"""How long the atlas of every head takes on a checkpoint (target: <= 3 minutes for ~1,000 sentences on a 2-core
CPU), and how long the Atlas tab's first view of a cached atlas takes (target: <= 1 s).

    python scripts/bench/bench_atlas.py [--checkpoint checkpoints/news-small] [--sentences 1000] [--threads 2]

The atlas: the first --sentences gold-parsed sentences of UD English EWT dev (encoder roles) and the RWTH gold
alignment pairs (decoder and cross-attention roles), as scripts/compute_atlas.py runs it, written nowhere. The first
view: the What heads do page opened on its Atlas tab (streamlit's AppTest, the model already loaded, as a student
finds it after any other page), and, inside it, what the tab itself does (read atlas.json, build the figure, turn it
into the JSON a browser gets). Prints numbers; asserts nothing. Needs ../shared/eval (evaluation data).
"""
from __future__ import annotations

import os
import time
from pathlib import Path

import torch

from core import load_checkpoint
from core.paths import REPO
from core.studies import atlas
from scripts import cli


def time_atlas(checkpoint: Path, n: int) -> None:
    """Compute the atlas on n parsed sentences and every gold pair; print wall clock, CPU time and roles."""
    from app.checkpoints import languages
    tm = load_checkpoint(checkpoint)
    sentences, pairs, notes = atlas.load_corpora(languages(tm.card))
    for note in notes:
        print(note)
    sentences = sentences[:n] if sentences else sentences
    start, cpu = time.perf_counter(), time.process_time()
    result = atlas.compute_atlas(tm, sentences, pairs, checkpoint.name)
    wall = time.perf_counter() - start
    print(f"atlas of {checkpoint.name}: {wall:.1f} s wall clock, {time.process_time() - cpu:.1f} s CPU, "
          f"{len(sentences or [])} parsed sentences + {len(pairs or [])} gold pairs; {torch.get_num_threads()} "
          f"thread(s); load average {os.getloadavg()[0]:.1f}")
    for kind, text in result["corpus"].items():
        print(f"  {kind}: {text}")


def time_first_view(checkpoint: Path) -> None:
    """The Atlas tab's first view of a cached atlas: the whole page (model loaded) and the tab's own work."""
    import plotly.io as pio
    from streamlit.testing.v1 import AppTest

    from app.figures.atlas import atlas_figure
    start = time.perf_counter()
    found = atlas.read_atlas(checkpoint)
    if found is None:
        print(f"{checkpoint} has no {atlas.FILE}: run scripts/compute_atlas.py first")
        return
    pio.to_json(atlas_figure(found))
    tab = time.perf_counter() - start
    times = []
    for _ in range(2):                                  # the first run loads the model, the second finds it loaded
        at = AppTest.from_file(str(REPO / "app" / "screens" / "heads.py"), default_timeout=300)
        at.session_state["checkpoint"] = checkpoint.name
        at.session_state["heads_tab"] = "Atlas"
        start = time.perf_counter()
        at.run()
        times.append(time.perf_counter() - start)
        if at.exception:
            print("the page failed:", [e.value for e in at.exception])
            return
    print(f"first view of the cached atlas: the tab's own work {tab * 1000:.0f} ms (read {atlas.FILE}, build the "
          f"figure, to JSON); the page {times[1]:.2f} s with the model loaded ({times[0]:.1f} s loading it first)")


def main():
    p = cli.parser(__doc__, summary=True)
    p.add_argument("--checkpoint", type=Path, default=REPO / "checkpoints" / "news-small")
    p.add_argument("--sentences", type=int, default=1000, help="gold-parsed sentences for the encoder's roles")
    cli.add_threads(p, default=torch.get_num_threads(), help=None)
    args = p.parse_args()
    cli.set_threads(args.threads)
    time_atlas(args.checkpoint, args.sentences)
    time_first_view(args.checkpoint)


if __name__ == "__main__":
    main()
