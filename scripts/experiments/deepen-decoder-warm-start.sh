#!/usr/bin/env bash
# Is news-small's 3-layer decoder what holds it back? The paper's decoder has N=6 layers; news-small was given 3 to
# train faster on 2 cores. On 2026-12-03 the shipped news-small (step 34000, commit bd2e677) was grown as it was
# warm-started: three more decoder layers on top (train.py --grow --set N_dec=6, core/model/grow.py: each new pre-norm
# layer starts with zero output projections, so it passes its input through and the first step's loss is the
# checkpoint's), 13.1M parameters in place of 9.9M, trained with the warm-start recipe of
# compare-dropout-warm-start.sh. Its controls are that script's dropout-0.1 arm (the same recipe, not grown) and the
# widened FFNs (widen-ffn-warm-start.sh). docs/experiments.md ("Wider or deeper?") gives what they showed. Needs
# data/wmt-en-de (the first command of scripts/recipes/news-small.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p runs/base-34000                 # the step-34000 weights it starts from
git archive bd2e677 checkpoints/news-small | tar -x --strip-components=2 -C runs/base-34000
cp -r runs/base-34000 runs/news-deep-out   # the candidate starts as a copy: notes, demo, snapshots carry on
D=(--data data/wmt-en-de --run runs/news-deep --out runs/news-deep-out
   --init-from runs/base-34000 --grow --rewarm 200 --preset small --set norm=pre N_dec=6 --clip 1.0
   --threads 2 --max-tokens 3500 --warmup 600 --lr-scale 0.4 --precision bf16 --valid-every 500 --bleu-sentences 500
   --valid-sentences 500 --probe-every 500 --no-progress --save-every-steps 400)
# As run, it was started with --max-steps 40300 --cooldown 3000 and, to fit the time the machine was free, stopped by
# SIGTERM at step 35199 and resumed with an earlier end (the learning rate before the cool-down does not depend on
# --max-steps):
python scripts/train.py "${D[@]}" --max-steps 40000 --cooldown 3000
python scripts/evaluate.py runs/news-deep-out --split test        # 14.91 / chrF 44.94: +0.19, not shipped
python scripts/evaluate_pronouns.py runs/news-deep-out            # 65.7%, feminine 43.4% (shipped 60.2%, 33.7%)
