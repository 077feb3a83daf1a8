#!/usr/bin/env bash
# checkpoints/tiny-copy: the paper's decoder alone (2 layers, 4 heads, d_model 48, attention only) trained here on
# repeated random tokens until an induction head forms (about 10 s on one CPU thread), then its CARD.md.
# After an interruption, the train command without --fresh resumes from runs/tiny-copy.
set -euo pipefail
cd "$(dirname "$0")/../.."
python scripts/train_lm.py --out checkpoints/tiny-copy --steps 600 --every 25 --threads 1 --fresh \
    --recipe scripts/recipes/tiny-copy.sh
python scripts/write_card.py checkpoints/tiny-copy
