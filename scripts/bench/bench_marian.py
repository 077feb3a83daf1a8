#!/usr/bin/env python
"""Time attend() on an imported Marian model against transformers' eager forward with output_attentions.

    python scripts/bench/bench_marian.py [--repeats 20] [--threads 1]

Builds a random base-size MarianMTModel here (d_model 512, 6+6 layers, 8 heads, vocab 8000; nothing is
downloaded), converts it with core.checkpoint.pretrained and times on the same sentence pair, median of --repeats:
  ours:    TranslationModel.attend(src, tgt): tokenising, the forward pass, every map as numpy
  ours/fw: our forward pass with need_weights=True only
  theirs:  MarianMTModel(input_ids, decoder_input_ids, output_attentions=True), eager attention, tokens given
Needs `pip install transformers`.
"""
from __future__ import annotations

import io
import json
import statistics
import tempfile
import time
import warnings
from pathlib import Path

import torch

from core import load_checkpoint
from core.checkpoint.pretrained import convert_folder
from scripts import cli

SRC = ("The committee said on Tuesday that the new rules would make it easier for small companies "
       "to hire young workers, although several members warned that the costs were still unclear.")
TGT = ("Der Ausschuss erklärte am Dienstag, die neuen Regeln würden es kleinen Firmen erleichtern, "
       "junge Arbeitskräfte einzustellen, obwohl mehrere Mitglieder warnten, die Kosten seien noch unklar.")


def build_marian(folder: Path, vocab_size: int) -> Path:
    """A random base-size MarianMTModel with tiny SentencePiece models; vocab.json padded to vocab_size."""
    import sentencepiece as spm
    from transformers import MarianConfig, MarianMTModel
    protos = []
    for text in (SRC, TGT):
        buf = io.BytesIO()
        spm.SentencePieceTrainer.train(sentence_iterator=iter([text] * 50), model_writer=buf, vocab_size=200,
                                       model_type="bpe", hard_vocab_limit=False, minloglevel=2)
        protos.append(buf.getvalue())
    pieces = []
    for proto in protos:
        sp = spm.SentencePieceProcessor(model_proto=proto)
        pieces += [sp.id_to_piece(i) for i in range(sp.get_piece_size()) if not sp.is_control(i)
                   and not sp.is_unknown(i) and sp.id_to_piece(i) not in pieces]
    pieces += [f"<extra_{i}>" for i in range(vocab_size - 3 - len(pieces))]     # never produced: fills the vocab
    vocab = {"</s>": 0, "<unk>": 1, **{p: i + 2 for i, p in enumerate(pieces)}, "<pad>": vocab_size - 1}
    pad = vocab_size - 1
    config = MarianConfig(vocab_size=vocab_size, d_model=512, encoder_layers=6, decoder_layers=6,
                          encoder_attention_heads=8, decoder_attention_heads=8, encoder_ffn_dim=2048,
                          decoder_ffn_dim=2048, max_position_embeddings=512, activation_function="swish",
                          scale_embedding=True, pad_token_id=pad, decoder_start_token_id=pad, eos_token_id=0,
                          forced_eos_token_id=0)
    torch.manual_seed(0)
    MarianMTModel(config).save_pretrained(folder)
    (folder / "source.spm").write_bytes(protos[0])
    (folder / "target.spm").write_bytes(protos[1])
    (folder / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    return folder


def median_ms(fns: dict, repeats: int, warmup: int = 2) -> dict:
    """{name: fn} -> {name: median milliseconds}; the functions take turns, so a load change hits all alike."""
    times = {name: [] for name in fns}
    for i in range(warmup + repeats):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            if i >= warmup:
                times[name].append(time.perf_counter() - t0)
    return {name: 1000 * statistics.median(t) for name, t in times.items()}


def main(argv=None):
    p = cli.parser(__doc__)
    p.add_argument("--repeats", type=int, default=20)
    cli.add_threads(p, default=1, help="torch threads (default 1: the machine may be busy)")
    p.add_argument("--vocab", type=int, default=8000)
    args = p.parse_args(argv)
    cli.set_threads(args.threads)
    from transformers import MarianMTModel
    with tempfile.TemporaryDirectory() as tmp:
        hf_dir = build_marian(Path(tmp) / "opus-mt-random", args.vocab)
        theirs = MarianMTModel.from_pretrained(hf_dir, attn_implementation="eager").eval()
        ours = load_checkpoint(convert_folder(hf_dir, Path(tmp) / "ckpt", dtype=torch.float32))
    r = ours.attend(SRC, TGT)
    src = torch.tensor([[ours.tokenizer.vocab[t] for t in r.src_tokens]])
    tgt = torch.tensor([[ours.tokenizer.vocab[t] for t in r.tgt_tokens]])
    with torch.no_grad():
        out = theirs(input_ids=src, decoder_input_ids=tgt, output_attentions=True)
    diff = max((torch.cat(t, 0).numpy() - o).__abs__().max()
               for t, o in [(out.encoder_attentions, r.enc_self), (out.decoder_attentions, r.dec_self),
                            (out.cross_attentions, r.cross)])

    def run_theirs():
        with torch.no_grad():
            theirs(input_ids=src, decoder_input_ids=tgt, output_attentions=True)

    def run_ours_forward():
        with torch.no_grad():
            ours.model(src, tgt, need_weights=True)

    timings = median_ms({"ours: attend()": lambda: ours.attend(SRC, TGT),
                         "ours: forward, need_weights": run_ours_forward,
                         "transformers: eager forward, output_attentions": run_theirs}, args.repeats)
    print(f"random Marian base (d_model 512, 6+6 layers, 8 heads, vocab {args.vocab}), torch {torch.__version__}, "
          f"{args.threads} thread(s); source {src.size(1)} tokens, target {tgt.size(1)} tokens; "
          f"median of {args.repeats}; max |attention difference| {diff:.1e}")
    for name, ms in timings.items():
        print(f"  {name:50s} {ms:8.1f} ms")
    ratio = timings["ours: attend()"] / timings["transformers: eager forward, output_attentions"]
    print(f"  attend() / transformers: {ratio:.2f}x  ({'ours no slower' if ratio <= 1.0 else 'ours slower'})")


if __name__ == "__main__":
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        main()
