#!/usr/bin/env bash
# Which model size for a news model on this project's 2-core CPU: news-small (d_model 256, d_ff 1024, 9.9M
# parameters) against d_model 384 (d_ff 1536, 20.8M), both with the paper's N=6 encoder layers and h=8, the
# news-small recipe otherwise (pre-norm, clipping 1.0, 3,500-token batches, warm-up 600, lr scale 0.4, bf16,
# tensor2tensor's dropouts), from scratch, at EQUAL WALL-CLOCK: both at once, one CPU thread each, for 70 minutes,
# so that a slow minute of the shared machine hits both. Run exactly so on 2026-12-02; docs/experiments.md
# ("Which size?") gives what it showed. Needs data/wmt-en-de (the first command of scripts/recipes/news-small.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
R=(--data data/wmt-en-de --preset small --clip 1.0 --threads 1 --max-tokens 3500 --warmup 600 --lr-scale 0.4
   --precision bf16 --valid-every 500 --valid-sentences 500 --bleu-sentences 500 --no-progress --max-minutes 70
   --seed 1)
mkdir -p runs
python scripts/train.py "${R[@]}" --run runs/cmp-d256 --set norm=pre > runs/cmp-d256.log 2>&1 &
python scripts/train.py "${R[@]}" --run runs/cmp-d384 --set norm=pre d_model=384 d_ff=1536 > runs/cmp-d384.log 2>&1 &
wait
python scripts/compare_runs.py runs/cmp-d256 runs/cmp-d384 --every 10
