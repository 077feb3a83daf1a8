#!/usr/bin/env bash
# Is news-small short of capacity? On 2026-12-02 the shipped news-small (step 34000, commit bd2e677) was grown as it
# was warm-started: the FFNs' hidden units doubled from 1024 to 2048 (train.py --grow, core/model/grow.py: the new
# units start silent, so the first step's loss is the checkpoint's), 14.6M parameters in place of 9.9M, trained with
# the warm-start recipe of compare-dropout-warm-start.sh. Its control is that script's dropout-0.1 arm, the same
# recipe without the widening. docs/experiments.md ("Wider or deeper?") gives what they showed. Needs data/wmt-en-de
# (the first command of scripts/recipes/news-small.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p runs/base-34000                 # the step-34000 weights it starts from
git archive bd2e677 checkpoints/news-small | tar -x --strip-components=2 -C runs/base-34000
W=(--data data/wmt-en-de --run runs/news-wide --out runs/news-wide-out
   --init-from runs/base-34000 --grow --rewarm 200 --preset small --set norm=pre d_ff=2048 --clip 1.0
   --threads 2 --max-tokens 3500 --warmup 600 --lr-scale 0.4 --precision bf16 --valid-every 500 --bleu-sentences 500
   --valid-sentences 500 --probe-every 500 --no-progress --save-every-steps 400)
# As run, it was started with --max-steps 41000 and, to fit the time the machine was free, stopped by SIGTERM at step
# 34557 and resumed with an earlier end (the learning rate before the cool-down does not depend on --max-steps):
python scripts/train.py "${W[@]}" --max-steps 40300 --cooldown 3000
python scripts/compare_runs.py runs/news-drop01 runs/news-wide --since-warm-start --every 10
python scripts/evaluate.py runs/news-wide-out --split test    # 15.05 / chrF 44.97: +0.33, not shipped
