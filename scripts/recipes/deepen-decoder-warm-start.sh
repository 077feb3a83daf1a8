#!/usr/bin/env bash
# Is news-small's 3-layer decoder what holds it back? The paper's decoder has N=6 layers; news-small was given 3 to
# train faster on 2 cores. Session 19 grew the shipped news-small (step 34000, commit bd2e677) as it warm-started it:
# three more decoder layers on top (train.py --grow --set N_dec=6, core/model/grow.py: each new pre-norm layer starts
# with zero output projections, so it passes its input through and the first step's loss is the checkpoint's),
# 13.1M parameters in place of 9.9M, trained with session 16's recipe. Its controls are session 17's dropout-0.1 arm
# (compare-dropout-warm-start.sh, the same recipe, not grown) and session 18's widened FFNs
# (widen-ffn-warm-start.sh). The README ("Which recipe?") gives what they showed. Needs data/wmt-en-de (the first
# command of news-small.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p runs/base-34000                 # the step-34000 weights it starts from
git archive bd2e677 checkpoints/news-small | tar -x --strip-components=2 -C runs/base-34000
cp -r runs/base-34000 runs/news-s19-deep-out   # the candidate starts as a copy: notes, demo, snapshots carry on
D=(--data data/wmt-en-de --run runs/news-s19-deep --out runs/news-s19-deep-out
   --init-from runs/base-34000 --grow --rewarm 200 --preset small --set norm=pre N_dec=6 --clip 1.0
   --threads 2 --max-tokens 3500 --warmup 600 --lr-scale 0.4 --precision bf16 --valid-every 500 --bleu-sentences 500
   --valid-sentences 500 --probe-every 500 --no-progress --save-every-steps 400)
# As run, it was started with --max-steps 40300 --cooldown 3000 and, to fit the session, stopped by SIGTERM at step
# 35199 and resumed with an earlier end (the learning rate before the cool-down does not depend on --max-steps):
python scripts/train.py "${D[@]}" --max-steps 40000 --cooldown 3000
python scripts/evaluate.py runs/news-s19-deep-out --split test        # 14.91 / chrF 44.94: +0.19, not shipped
python scripts/evaluate_pronouns.py runs/news-s19-deep-out            # 65.7%, feminine 43.4% (shipped 60.2%, 33.7%)
