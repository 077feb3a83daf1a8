"""Benchmarks of core/: training-step throughput against torch.nn.Transformer, attend() latency and
translate() throughput. Prints figures only.

    python scripts/bench/bench_core.py [--quick] [--threads N] [--device cpu|cuda]

(a) forward + label-smoothed loss + backward + Adam step, target tokens/s, ours vs torch.nn.Transformer
    with the same embedding / positions / tied projection around it, in fp32 and (where the hardware has
    it) bf16 autocast, interleaved, median of repeats.
(b) TranslationModel.attend() latency for a ~30-word sentence: teacher-forced (one forward pass with
    attention capture) and with greedy translation.
(c) TranslationModel.translate() throughput for 64 sentences, greedy and beam 4.
Uses checkpoints/news-small and data/wmt-en-de when present, else random weights and a quick tokenizer.
"""
from __future__ import annotations

import io
import math
import statistics
import time

import torch
from torch import nn

import core
from core.paths import REPO
from scripts import cli


DATA = REPO / "data" / "wmt-en-de"
CKPT = REPO / "checkpoints" / "news-small"

FALLBACK_EN = ("the old man said that the new school in the small town would open next year , and that the "
               "children of the farmers who live near the river could walk there in less than half an hour").split()
FALLBACK_DE = ("der alte Mann sagte , dass die neue Schule in der kleinen Stadt im nächsten Jahr öffnen werde und "
               "dass die Kinder der Bauern am Fluss in weniger als einer halben Stunde dorthin laufen könnten").split()


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


# --- (a) training step ------------------------------------------------------------------------

class TorchReference(nn.Module):
    """torch.nn.Transformer (post-norm, no final LayerNorm) with our embedding, positions and tied projection."""

    def __init__(self, cfg: core.TransformerConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        nn.init.normal_(self.embed.weight, std=cfg.d_model ** -0.5)
        self.register_buffer("pe", core.sinusoidal_table(cfg.max_len, cfg.d_model), persistent=False)
        self.dropout = nn.Dropout(cfg.dropout)
        kw = dict(d_model=cfg.d_model, nhead=cfg.h, dim_feedforward=cfg.d_ff, dropout=cfg.dropout,
                  activation="relu", layer_norm_eps=cfg.layer_norm_eps, batch_first=True, norm_first=False)
        self.transformer = nn.Transformer(
            **kw, custom_encoder=nn.TransformerEncoder(nn.TransformerEncoderLayer(**kw), cfg.N, norm=None,
                                                       enable_nested_tensor=False),
            custom_decoder=nn.TransformerDecoder(nn.TransformerDecoderLayer(**kw), cfg.N_dec, norm=None))
        self.generator = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        self.generator.weight = self.embed.weight

    def _embed(self, tokens):
        return self.dropout(self.embed(tokens) * math.sqrt(self.cfg.d_model) + self.pe[: tokens.size(1)])

    def forward(self, src, tgt_in):
        T = tgt_in.size(1)
        causal = torch.ones(T, T, dtype=torch.bool, device=src.device).triu(1)      # True: masked
        src_pad, tgt_pad = src == self.cfg.pad_id, tgt_in == self.cfg.pad_id
        hidden = self.transformer(self._embed(src), self._embed(tgt_in), tgt_mask=causal,
                                  src_key_padding_mask=src_pad, tgt_key_padding_mask=tgt_pad,
                                  memory_key_padding_mask=src_pad)
        return self.generator(hidden)


def make_batch(B, L, vocab, g, device):
    """Random sentences of L/2..L tokens (+ </s>), padded to L; target: <s> ... </s> padded to L + 1."""
    src = torch.zeros(B, L, dtype=torch.long)
    tgt = torch.zeros(B, L + 1, dtype=torch.long)
    for i in range(B):
        n = int(torch.randint(L // 2, L, (1,), generator=g))
        src[i, :n], src[i, n] = torch.randint(4, vocab, (n,), generator=g), 3
        m = int(torch.randint(L // 2, L, (1,), generator=g))
        tgt[i, 0], tgt[i, 1:m + 1], tgt[i, m + 1] = 2, torch.randint(4, vocab, (m,), generator=g), 3
    return src.to(device), tgt.to(device)


def precisions(device) -> list[str]:
    """fp32 always; bf16 where the hardware does it natively (what train.py --precision auto would pick)."""
    from core.training.precision import cpu_has_bf16
    return ["fp32", "bf16"] if (device.type == "cuda" or cpu_has_bf16()) else ["fp32"]


def bench_train(args, device):
    cfg = core.preset("small", vocab_size=8000)
    B, L = (16, 30) if args.quick else (64, 30)
    repeats = 3 if args.quick else 7
    torch.manual_seed(0)
    models = {"ours": core.Transformer(cfg).to(device).train(),
              "nn.Transformer": TorchReference(cfg).to(device).train()}
    n_params = {k: sum(p.numel() for p in m.parameters()) for k, m in models.items()}
    opts = {k: torch.optim.Adam(m.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9, fused=True)
            for k, m in models.items()}
    g = torch.Generator().manual_seed(0)
    batches = [make_batch(B, L, cfg.vocab_size, g, device) for _ in range(2)]
    n_tgt = int((batches[0][1][:, 1:] != 0).sum())
    runs = [(name, prec) for prec in precisions(device) for name in models]   # e.g. ("ours", "bf16")

    def step(run, batch):
        (name, prec), (src, tgt) = run, batch
        model, opt = models[name], opts[name]
        sync(device)
        t0, c0 = time.perf_counter(), time.process_time()
        # as scripts/train.py does it: bf16 autocast on the forward pass, the weights in fp32, fused Adam; our
        # model fuses its projection into the loss (tgt_out), the reference's logits go to the same chunked loss
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=prec == "bf16"):
            if name == "ours":
                loss, _ = model(src, tgt[:, :-1], tgt_out=tgt[:, 1:])
            else:
                logits = model(src, tgt[:, :-1])
        if name != "ours":
            loss, _ = core.label_smoothed_loss(logits, tgt[:, 1:], cfg.label_smoothing, cfg.pad_id)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sync(device)
        return time.perf_counter() - t0, time.process_time() - c0, int((tgt[:, 1:] != 0).sum())

    for run in runs:                                         # warm-up (allocator, Adam state, autocast)
        step(run, batches[0])
    rates = {run: [] for run in runs}                        # target tokens per second of wall time
    cpu_rates = {run: [] for run in runs}                    # ... per second of this process's CPU time
    for r in range(repeats):
        for run in (runs if r % 2 == 0 else runs[::-1]):     # interleaved, alternating order
            dt, dc, n = step(run, batches[r % 2])
            rates[run].append(n / dt)
            cpu_rates[run].append(n / dc)
    med = {k: statistics.median(v) for k, v in rates.items()}
    cmed = {k: statistics.median(v) for k, v in cpu_rates.items()}
    print(f"(a) training step, preset small (N=6, d_model=256, d_ff=1024, h=8, post-norm), vocab 8000, "
          f"batch {B} x {L} tokens (~{n_tgt} target tokens), {repeats} interleaved repeats")
    print(f"    {'model':15s} {'precision':9s} {'tokens/s':>9s}  {'range':>11s}  {'per CPU-s':>9s}  parameters")
    for run in runs:
        name, prec = run
        print(f"    {name:15s} {prec:9s} {med[run]:9.0f}  {min(rates[run]):5.0f}-{max(rates[run]):<5.0f}  "
              f"{cmed[run]:9.0f}  {n_params[name] / 1e6:.2f} M")
    for prec in precisions(device):
        ours, ref = ("ours", prec), ("nn.Transformer", prec)
        print(f"    {prec}: ours / nn.Transformer {med[ours] / med[ref]:.3f} (wall), {cmed[ours] / cmed[ref]:.3f} "
              f"(CPU time; target >= 1.2)")
    if len(precisions(device)) > 1:
        print(f"    ours bf16 / ours fp32: {med[('ours', 'bf16')] / med[('ours', 'fp32')]:.3f} (wall), "
              f"{cmed[('ours', 'bf16')] / cmed[('ours', 'fp32')]:.3f} (CPU time)")


# --- (b), (c): attend and translate -----------------------------------------------------------

def quick_tokenizer():
    import sentencepiece as spm
    words = FALLBACK_EN + FALLBACK_DE
    g = torch.Generator().manual_seed(0)
    lines = [" ".join(words[int(i)] for i in torch.randint(0, len(words), (20,), generator=g)) for _ in range(2000)]
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_writer=buf, vocab_size=400,
                                   model_type="bpe", pad_id=0, unk_id=1, bos_id=2, eos_id=3, byte_fallback=True,
                                   hard_vocab_limit=False, minloglevel=2)
    return core.Tokenizer(buf.getvalue())


def load_translation_model(device):
    """(TranslationModel, description): the trained news-small checkpoint if it loads, else random weights."""
    if (CKPT / "config.json").exists():
        try:
            return core.load_checkpoint(CKPT, device), f"checkpoint {CKPT.relative_to(REPO)}"
        except core.CheckpointError as e:
            print(f"    note: {e}")
    if (DATA / "spm.model").exists():
        tok, what = core.Tokenizer((DATA / "spm.model").read_bytes()), "data/wmt-en-de/spm.model"
    else:
        tok, what = quick_tokenizer(), "a quickly trained tokenizer"
    torch.manual_seed(0)
    model = core.Transformer(core.preset("small", vocab_size=len(tok))).to(device).eval()
    return core.TranslationModel(model, tok), f"random weights (preset small), {what}"


def sentences(n_words=30, count=64):
    """(~n_words-word English sentence, its German reference, `count` validation sentences)."""
    if (DATA / "valid.en").exists() and (DATA / "valid.de").exists():
        en = (DATA / "valid.en").read_text(encoding="utf-8").splitlines()
        de = (DATA / "valid.de").read_text(encoding="utf-8").splitlines()
        i = min(range(len(en)), key=lambda j: (abs(len(en[j].split()) - n_words), j))
        return en[i], de[i], [s for s in en if s.strip()][:count]
    en, de = " ".join(FALLBACK_EN[:n_words]), " ".join(FALLBACK_DE[:n_words])
    return en, de, [" ".join(FALLBACK_EN[: 10 + i % 20]) for i in range(count)]


CPU_TIMES = []   # the CPU seconds of the last timed() calls, printed next to wall time on a shared machine


def timed(fn, repeats, device):
    """Median wall seconds of fn() over repeats (after one warm-up), and fn's last output."""
    fn()                                                     # warm-up
    times, cpu = [], []
    for _ in range(repeats):
        sync(device)
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        sync(device)
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    CPU_TIMES.append(statistics.median(cpu))
    return statistics.median(times), out


def cpu_note(device, scale=1000.0, unit="ms"):
    return f" [CPU time {scale * CPU_TIMES[-1]:.1f} {unit}]" if device.type == "cpu" else ""


def bench_attend(args, device, tm, what):
    src, tgt, _ = sentences()
    repeats = 5 if args.quick else 20
    print(f"(b) attend() latency, {what}")
    t, r = timed(lambda: tm.attend(src, tgt=tgt), repeats, device)
    print(f"    teacher-forced: {1000 * t:7.1f} ms{cpu_note(device)}  (median of {repeats}; {len(src.split())} words, "
          f"S={len(r.src_tokens)}, T={len(r.tgt_tokens)} pieces; target < 20 ms)")
    with torch.no_grad():
        src_t = tm._batch([tm._source_ids(src)[0]])
        dec_in = tm._batch([[tm.cfg.bos_id] + tm.tokenizer.encode(tgt, "tgt")])
        t_fwd, _ = timed(lambda: tm.model(src_t, dec_in, need_weights=True), repeats, device)
        note_fwd = cpu_note(device)
        t_fused, _ = timed(lambda: tm.model(src_t, dec_in), repeats, device)
    print(f"      of which model forward with capture {1000 * t_fwd:.1f} ms{note_fwd}, without capture (fused) "
          f"{1000 * t_fused:.1f} ms{cpu_note(device)}")
    reps = max(3, repeats // 4)
    t, r = timed(lambda: tm.attend(src), reps, device)
    print(f"    with greedy translation: {1000 * t:7.1f} ms{cpu_note(device)}  (median of {reps}; "
          f"{len(r.out_tokens)} output pieces"
          f"{', random weights decode to the length limit' if 'random' in what else ''})")


def bench_translate(args, device, tm, what):
    _, _, lines = sentences(count=16 if args.quick else 64)
    src = tm._batch([tm._source_ids(s)[0] for s in lines])
    n_src = int((src != 0).sum())
    print(f"(c) translate() throughput, {len(lines)} sentences in one batch ({n_src} source pieces), {what}")
    for beam in (1, 4):
        t, out = timed(lambda beam=beam: tm.translate(lines, beam=beam), 1, device)
        n_out = sum(len(tm.tokenizer.encode(o, "tgt")) for o in out)
        print(f"    beam {beam}: {len(lines) / t:7.2f} sentences/s, {n_out / t:7.0f} output pieces/s "
              f"({t:.2f} s{cpu_note(device, 1.0, 's')}; mean output {n_out / len(lines):.1f} pieces)")
    if "random" in what:
        print("    note: random weights rarely emit </s>, so the above decode to the limit (source length + 50);")
        print("          with outputs capped at source length + 5 (about a trained model's lengths):")
        for beam in (1, 4):
            search = (lambda: core.greedy_search(tm.model, src, max_extra=5)) if beam == 1 else \
                (lambda: core.beam_search(tm.model, src, beam=4, max_extra=5))
            t, hyps = timed(search, 1, device)
            n_out = sum(len(h) for h in hyps)
            print(f"    beam {beam}, capped: {len(lines) / t:7.2f} sentences/s, {n_out / t:7.0f} output pieces/s "
                  f"({t:.2f} s{cpu_note(device, 1.0, 's')})")


def main():
    p = cli.parser(__doc__)
    p.add_argument("--quick", action="store_true", help="smaller batches and fewer repeats")
    cli.add_threads(p, default=1, help="torch CPU threads (default 1: the cores are shared with training runs)")
    cli.add_device(p, default="cpu")
    p.add_argument("--only", choices=["a", "b", "c"], action="append", help="run only these parts")
    args = p.parse_args()
    cli.set_threads(args.threads)
    try:
        device = torch.device(cli.pick_device(args.device))
    except cli.UsageError as e:
        raise SystemExit(f"error: {e}") from None
    parts = set(args.only or ["a", "b", "c"])
    print(f"torch {torch.__version__}, device {device}, {torch.get_num_threads()} thread(s)"
          f"{', quick' if args.quick else ''}")
    if "a" in parts:
        bench_train(args, device)
    if parts & {"b", "c"}:
        tm, what = load_translation_model(device)
        if "b" in parts:
            bench_attend(args, device, tm, what)
        if "c" in parts:
            bench_translate(args, device, tm, what)


if __name__ == "__main__":
    main()
