#!/usr/bin/env bash
# Does news-small gain from stronger dropout? The paper's big model used P_drop = 0.3 (section 6.1), and for small
# data sets stronger dropout is the usual advice (e.g. fairseq's IWSLT recipe). On 2026-12-02 the shipped news-small
# (step 34000, commit bd2e677) was warm-started twice with its own warm-start recipe (200 steps of re-warm-up, lr scale
# 0.4, a cool-down), once with the residual and embedding dropout at 0.3 (attention and ReLU dropout kept at 0.1, as
# in tensor2tensor's transformer_big), once as it was trained (0.1 everywhere), one after the other on the 2 cores,
# and compared from their common start with `compare_runs.py --since-warm-start`. docs/experiments.md ("Which
# dropout?") gives what they showed. The 0.3 arm was stopped by SIGTERM at step 35990 (dev perplexity rising at
# every validation); the 0.1 arm, cooled down to 0 at step 39500, was a fourth warm start of news-small (not
# shipped: newstest2014 14.77 against 14.72). Needs data/wmt-en-de (the first command of
# scripts/recipes/news-small.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p runs/base-34000                 # the step-34000 weights both arms start from
git archive bd2e677 checkpoints/news-small | tar -x --strip-components=2 -C runs/base-34000
R=(--init-from runs/base-34000 --rewarm 200 --data data/wmt-en-de --preset small --clip 1.0 --threads 2
   --max-tokens 3500 --warmup 600 --lr-scale 0.4 --precision bf16 --valid-every 500 --bleu-sentences 500
   --valid-sentences 500 --probe-every 500 --no-progress --save-every-steps 400)
timeout --preserve-status --signal=TERM 33m python scripts/train.py "${R[@]}" --run runs/news-drop03 \
    --out runs/news-drop03-out --set norm=pre dropout=0.3 attn_dropout=0.1 ffn_dropout=0.1 \
    --max-steps 43000 --cooldown 3500
python scripts/train.py "${R[@]}" --run runs/news-drop01 --out runs/news-drop01-out --set norm=pre \
    --max-steps 39500 --cooldown 3000
python scripts/compare_runs.py runs/news-drop03 runs/news-drop01 --since-warm-start --every 5
