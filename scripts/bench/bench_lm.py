#!/usr/bin/env python
"""Time every attention map of a GPT-2-small-shaped model against transformers' eager forward, and measure the peak
memory of 1,024 tokens.

    python scripts/bench/bench_lm.py [--rounds 7] [--threads 2] [--tokens 256] [--long 1024]

Builds a random 124M-parameter GPT-2 here (transformers' GPT2Config(): 12 layers of 12 heads, d_model 768, 1,024
positions, vocabulary 50,257; nothing is downloaded), converts it with core.checkpoint.pretrained (float32) and, on
the same --tokens random ids, takes turns for --rounds rounds (after one warm-up each):
  ours:    DecoderOnly(ids, need_weights=True) and all 144 maps copied out as one float32 numpy array (as attend does)
  theirs:  GPT2LMHeadModel(ids, output_attentions=True), eager attention, the maps left as torch tensors
printing the min and median of each, their ratio, and the largest difference of the logits and of the maps. Then,
each in a fresh process, the peak resident memory (Linux's VmHWM in /proc/self/status: the whole process, model
included; not getrusage's ru_maxrss, which a child keeps from the parent it was forked from) of loading the model
and of one pass with every map over --long tokens. Last, the explorer's head switch on the --tokens maps: what the
server does when a student picks another head (the pass, the view and the styled frame are cached by then:
app.lm.cache, app.cache.heatmap_frame), i.e. app.figures.attention.heatmap_from_frame for that head's map and
Plotly's JSON of the figure as st.plotly_chart sends it, over every head in turn; target at most 100 ms. Needs
`pip install transformers`.
"""
from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import torch

from scripts import cli

MEASURE = """
import json, sys, warnings
warnings.simplefilter("ignore")
import torch
torch.set_num_threads(int(sys.argv[4]))
which, folder, T = sys.argv[1], sys.argv[2], int(sys.argv[3])
if which == "ours":
    from core.checkpoint.folder import load_model
    model = load_model(folder)
else:
    from transformers import GPT2LMHeadModel
    model = GPT2LMHeadModel.from_pretrained(folder, attn_implementation="eager").eval()


def kb(field):
    return int(next(line for line in open("/proc/self/status") if line.startswith(field)).split()[1])


rss, loaded = kb("VmRSS:"), kb("VmHWM:")
ids = torch.randint(0, 50257, (1, T), generator=torch.Generator().manual_seed(0))
with torch.no_grad():
    if which == "ours":
        logits, attns = model(ids, need_weights=True)
        maps = torch.cat(attns).numpy()
    else:
        maps = model(input_ids=ids, output_attentions=True).attentions
print(json.dumps({"rss_mb": rss / 1024, "loaded_mb": loaded / 1024, "peak_mb": kb("VmHWM:") / 1024,
                  "maps": len(maps)}))
"""


def build_gpt2(folder: Path) -> Path:
    """A random GPT2LMHeadModel of GPT2Config()'s sizes, with a tiny byte-level BPE tokenizer.json (the model's
    vocabulary beyond it is padding to the converter)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel
    folder.mkdir(parents=True)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer, tok.decoder = pre_tokenizers.ByteLevel(add_prefix_space=False), decoders.ByteLevel()
    tok.train_from_iterator(["the quick brown fox jumps over the lazy dog"] * 20,
                            trainers.BpeTrainer(vocab_size=300, special_tokens=["<|endoftext|>"],
                                                initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok.save(str(folder / "tokenizer.json"))
    torch.manual_seed(0)
    GPT2LMHeadModel(GPT2Config()).save_pretrained(folder, safe_serialization=True)
    return folder


def rounds(fns: dict, n: int) -> dict:
    """{name: fn} -> {name: [seconds of each round]}; the functions take turns, after one warm-up each."""
    times = {name: [] for name in fns}
    for i in range(n + 1):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            if i:
                times[name].append(time.perf_counter() - t0)
    return times


def peak_memory(which: str, folder: Path, T: int, threads: int) -> dict:
    """{"rss_mb", "loaded_mb", "peak_mb"} of a fresh process loading `which` model (its resident memory then, and
    the peak so far) and running one pass with every map (the peak after it)."""
    out = subprocess.run([sys.executable, "-c", MEASURE, which, str(folder), str(T), str(threads)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def head_switch(maps: np.ndarray) -> list[float]:
    """Seconds of each head switch of the LM explorer's one-head view on maps (N, h, T, T), every head once: the
    cached frame reused (app.cache.heatmap_frame, built here once first), the head's figure made from it and turned
    into the JSON Streamlit sends (plotly.io.to_json, unvalidated, as st.plotly_chart marshals a figure)."""
    import logging

    import plotly.io as pio
    logging.getLogger("streamlit.runtime.caching").setLevel(logging.ERROR)   # no runtime here: its cache is a dict
    from app.cache import heatmap_frame
    from app.figures.attention import MAP_HEIGHT, heatmap_from_frame
    from app.lm.explorer import MAP_ROW_PX
    from app.lm.views import COL_TITLE, ROW_TITLE
    N, h, T = maps.shape[:3]
    labels = tuple(f"t{i}" for i in range(T))
    frame = heatmap_frame(labels, labels, ROW_TITLE, COL_TITLE, 1.0, False, MAP_ROW_PX, words_on_top=True,
                          max_height=MAP_HEIGHT)
    out = []
    for layer in range(N):
        for head in range(h):
            t0 = time.perf_counter()
            fig = heatmap_from_frame(frame, maps[layer, head], f"Masked self-attention, layer {layer + 1} of {N}, "
                                     f"head {head + 1} of {h}", 1.0)
            pio.to_json(fig, validate=False)
            out.append(time.perf_counter() - t0)
    return out


def main(argv=None):
    p = cli.parser(__doc__)
    p.add_argument("--rounds", type=int, default=7)
    cli.add_threads(p, default=2, help="torch threads (default 2)")
    p.add_argument("--tokens", type=int, default=256, help="tokens of the timed pass (default 256)")
    p.add_argument("--long", type=int, default=1024, help="tokens of the memory measurement (default 1024)")
    args = p.parse_args(argv)
    cli.set_threads(args.threads)
    from transformers import GPT2LMHeadModel
    from core.checkpoint.folder import load_model
    from core.checkpoint.pretrained import convert_folder
    with tempfile.TemporaryDirectory() as tmp:
        hf_dir = build_gpt2(Path(tmp) / "gpt2-random")
        ckpt = convert_folder(hf_dir, Path(tmp) / "ckpt", dtype=torch.float32)
        theirs = GPT2LMHeadModel.from_pretrained(hf_dir, attn_implementation="eager").eval()
        ours = load_model(ckpt)
        n_params = sum(p.numel() for p in ours.parameters())
        ids = torch.randint(0, 50257, (1, args.tokens), generator=torch.Generator().manual_seed(0))
        with torch.no_grad():
            logits, attns = ours(ids, need_weights=True)
            out = theirs(input_ids=ids, output_attentions=True)
        d_logits = (logits - out.logits).abs().max().item()
        d_maps = (torch.cat(attns) - torch.cat(out.attentions)).abs().max().item()

        def run_ours():
            with torch.no_grad():
                _, maps = ours(ids, need_weights=True)
                torch.cat(maps).numpy()

        def run_theirs():
            with torch.no_grad():
                theirs(input_ids=ids, output_attentions=True)

        times = rounds({"ours: forward + all maps as numpy": run_ours,
                        "transformers: eager, output_attentions": run_theirs}, args.rounds)
        memory = {which: peak_memory(which, folder, args.long, args.threads)
                  for which, folder in (("ours", ckpt), ("transformers", hf_dir))}
        switches = head_switch(torch.cat(attns).float().numpy())
    print(f"random GPT-2 small ({n_params / 1e6:.0f}M parameters, {ours_maps(attns)} maps), torch {torch.__version__}, "
          f"{args.threads} thread(s), {args.tokens} tokens, {args.rounds} interleaved rounds; "
          f"max |difference| logits {d_logits:.1e}, maps {d_maps:.1e}")
    for name, t in times.items():
        print(f"  {name:42s} min {min(t):6.3f} s   median {statistics.median(t):6.3f} s")
    ours_t, theirs_t = (statistics.median(t) for t in times.values())
    print(f"  ours / transformers (medians): {ours_t / theirs_t:.2f}x")
    print(f"peak resident memory (VmHWM, a fresh process each), {args.long} tokens with every map:")
    for which, m in memory.items():
        print(f"  {which:13s} loaded: resident {m['rss_mb']:6.0f} MB (peak {m['loaded_mb']:6.0f} MB); "
              f"peak with the pass {m['peak_mb']:6.0f} MB")
    ms = [1000 * t for t in switches]
    print(f"explorer head switch, server side ({args.tokens} tokens, {len(ms)} heads in turn, pass and frame cached): "
          f"median {statistics.median(ms):.1f} ms, max {max(ms):.1f} ms (target <= 100 ms: "
          f"{'met' if max(ms) <= 100 else 'NOT met'})")


def ours_maps(attns) -> int:
    """How many (layer, head) maps one pass gave."""
    return sum(a.shape[1] for a in attns)


if __name__ == "__main__":
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        main()
