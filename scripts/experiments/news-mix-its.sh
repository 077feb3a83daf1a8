#!/usr/bin/env bash
# The news model on nine times the data (2026-12-04): the shipped news-small (step 34000: N=6, N_dec=3, d_model 256,
# d_ff 1024, h=8, 9.9M parameters) warm-started on the news mix (wmt-en-de's 86k pairs + en-de-extra's 802k, its
# pieces kept) with the 'its' pairs balanced (balance_its_pairs.py --factor 3: 931,481 pairs), the paper's dropout
# (residual and embedding only), both threads. Chosen by the arms of news-mix-arms.sh; docs/experiments.md ("Nine
# times the data: which recipe?") gives the numbers. The run goes on over days: each segment is a --resume of the
# same run folder; the one meant to be shipped ends with a cool-down (SIGTERM, then --resume with --max-steps and
# --cooldown: before a cool-down the learning rate does not depend on --max-steps).
set -euo pipefail
cd "$(dirname "$0")/../.."
SHARED=${ATTN_EXPLORER_SHARED:-../shared}
[ -d data/news-mix ] || python scripts/prepare_data.py --corpus "$SHARED/data/wmt-en-de" \
    --extra "$SHARED/data/en-de-extra" --spm-model checkpoints/news-small/spm.model --out data/news-mix --no-progress
[ -d data/news-mix-its ] || python scripts/balance_its_pairs.py --data data/news-mix --out data/news-mix-its --factor 3
[ -d runs/news-mix-its-out ] || cp -r checkpoints/news-small runs/news-mix-its-out   # card notes, snapshots carry on
R=(--data data/news-mix-its --run runs/news-mix-its --out runs/news-mix-its-out
   --init-from checkpoints/news-small --rewarm 200 --preset small --set norm=pre attn_dropout=0 ffn_dropout=0
   --clip 1.0 --threads 2 --max-tokens 3500 --warmup 600 --lr-scale 0.4 --precision bf16
   --valid-every 500 --valid-sentences 500 --bleu-sentences 500 --probe-every 500 --save-every-steps 500
   --no-progress)
# 2026-12-04, the first segment: 11:07-12:16, stopped by SIGTERM at step 37110 and evaluated
# (python scripts/evaluate_candidate.py runs/news-mix-its-out: 16.28 / chrF 46.95, +1.56; Figure 3 not linked)
timeout -s TERM 69m python scripts/train.py "${R[@]}" --max-steps 200000 || true
# then resumed at 12:47 until the machine was handed back (its last save every 500 steps is where it goes on from),
# and on 2026-12-04 at 13:16 from the save at step 37500, until SIGTERM at step 39329:
timeout -s TERM 50m python scripts/train.py "${R[@]}" --max-steps 200000 --resume || true
# A cool-down on a branch, so that the long run goes on un-cooled: the run and out folders copied, then 2,000 steps
# to a learning rate of 0 (evaluated: 17.36 BLEU, +2.64; both figure links lost; docs/experiments.md)
rm -rf runs/news-mix-its-cool runs/news-mix-its-cool-out
cp -r runs/news-mix-its runs/news-mix-its-cool && cp -r runs/news-mix-its-out runs/news-mix-its-cool-out
python scripts/train.py "${R[@]}" --run runs/news-mix-its-cool --out runs/news-mix-its-cool-out \
    --resume --max-steps 41329 --cooldown 2000              # (the last --run and --out are the ones taken)
python scripts/evaluate_candidate.py runs/news-mix-its-cool-out --json runs/news-mix-its-cool-review.json
# The long run goes on from step 39329
python scripts/train.py "${R[@]}" --max-steps 200000 --resume
