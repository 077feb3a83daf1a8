#!/usr/bin/env bash
# Both growths, one after the other. Widening news-small's FFNs gave +0.33 BLEU (widen-ffn-warm-start.sh), deepening
# its decoder from 3 to 6 layers +0.19 and the best pronoun test (deepen-decoder-warm-start.sh). On 2026-12-03 the
# deepened model (its averaged step-40000 weights) was warm-started again with its FFNs widened from 1,024 to 2,048
# hidden units (train.py --grow --set d_ff=2048, core/model/grow.py: the new hidden units start with zero output
# weights, so the first step's loss is the checkpoint's): N=6, N_dec=6, d_model 256, d_ff 2048, h=8, 19.4M
# parameters, trained with the same warm-start recipe and cooled down to 0 at step 44800. Needs data/wmt-en-de (the
# first command of scripts/recipes/news-small.sh) and runs/news-deep-out (deepen-decoder-warm-start.sh) first.
set -euo pipefail
cd "$(dirname "$0")/../.."
cp -r runs/news-deep-out runs/news-deepwide-out   # the candidate starts as a copy: notes, snapshots carry on
W=(--data data/wmt-en-de --run runs/news-deepwide --out runs/news-deepwide-out
   --init-from runs/news-deep-out --grow --rewarm 200 --preset small --set norm=pre N_dec=6 d_ff=2048 --clip 1.0
   --threads 2 --max-tokens 3500 --warmup 600 --lr-scale 0.4 --precision bf16 --valid-every 500 --bleu-sentences 500
   --valid-sentences 500 --probe-every 500 --no-progress --save-every-steps 400)
python scripts/train.py "${W[@]}" --max-steps 44800 --cooldown 3000
python scripts/compare_runs.py runs/news-deep runs/news-deepwide --since-warm-start --every 10
python scripts/evaluate_candidate.py runs/news-deepwide-out    # 15.05 / chrF 45.07: +0.33; pronouns 62.1%,
#   feminine 33.7%; Figure 3's best head 0.497 (not linked), Figure 4 linked: not shipped
