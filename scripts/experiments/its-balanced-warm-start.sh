#!/usr/bin/env bash
# A lever on the pronoun test other than size. news-small writes sein- for most feminine antecedents ("The city lost
# its mayor" -> "seinen"), though the news corpus has both: 671 training pairs where 'its' became an ihr- form, 782
# where it became a sein- form (scripts/balance_its_pairs.py's rule). On 2026-12-03 those pairs were repeated so that
# each kind is seen 4x as often as the larger one was (ihr- 5x, sein- 4x: 5,030 copies added to 86,361 pairs) and
# the deepened and widened model (deepen-then-widen-warm-start.sh: N=6, N_dec=6, d_model 256, d_ff 2048, h=8, 19.4M
# parameters) was warm-started on them with the same warm-start recipe and a cool-down meant to reach 0 at step
# 49200; the machine ran slower than the day before, so after step 48800 it was stopped by a signal (kill -TERM:
# train.py validates, saves and exports first), at step 48877 (4,077 steps, 116 minutes; learning rate 6% of its
# peak). Needs data/wmt-en-de (the first command of scripts/recipes/news-small.sh) and runs/news-deepwide-out first.
set -euo pipefail
cd "$(dirname "$0")/../.."
python scripts/balance_its_pairs.py --data data/wmt-en-de --out data/wmt-en-de-its --factor 4
cp -r runs/news-deepwide-out runs/news-its-19m-out   # the candidate starts as a copy: notes, snapshots carry on
W=(--data data/wmt-en-de-its --run runs/news-its-19m --out runs/news-its-19m-out
   --init-from runs/news-deepwide-out --rewarm 200 --preset small --set norm=pre N_dec=6 d_ff=2048 --clip 1.0
   --threads 2 --max-tokens 3500 --warmup 600 --lr-scale 0.4 --precision bf16 --valid-every 500 --bleu-sentences 500
   --valid-sentences 500 --probe-every 500 --no-progress --save-every-steps 400)
python scripts/train.py "${W[@]}" --max-steps 49200 --cooldown 2800
python scripts/compare_runs.py runs/news-deepwide runs/news-its-19m --since-warm-start --every 10
python scripts/evaluate_candidate.py runs/news-its-19m-out    # 15.26 / chrF 45.46: +0.54; pronouns 71.7%,
#   feminine 55.4%, separation 0.81; anaphora head 26.1%; Figure 3's best head 0.477 (not linked), Figure 4 linked:
#   not shipped
