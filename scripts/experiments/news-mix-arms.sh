#!/usr/bin/env bash
# Nine times the data, 2026-12-04: which recipe? Three short arms at equal wall-clock, run at once (one thread each),
# 40 minutes of training from the shipped news-small (step 34000), on the news mix: wmt-en-de's 86k pairs plus
# en-de-extra's 802k (human, forward and back translations of strong WMT systems), with news-small's SentencePiece
# model. docs/experiments.md ("Nine times the data: which recipe?") gives what it showed.
set -euo pipefail
cd "$(dirname "$0")/../.."
SHARED=${ATTN_EXPLORER_SHARED:-../shared}
KEEP=(--spm-model checkpoints/news-small/spm.model --no-progress)
[ -d data/news-mix ] || python scripts/prepare_data.py --corpus "$SHARED/data/wmt-en-de" \
    --extra "$SHARED/data/en-de-extra" --out data/news-mix "${KEEP[@]}"
[ -d data/news-mix-hf ] || python scripts/prepare_data.py --corpus "$SHARED/data/wmt-en-de" \
    --extra "$SHARED/data/en-de-extra" --origins human forward --out data/news-mix-hf "${KEEP[@]}"
COMMON=(--init-from checkpoints/news-small --rewarm 200 --preset small --clip 1.0 --threads 1 --max-tokens 3500
        --warmup 600 --lr-scale 0.4 --precision bf16 --valid-every 300 --valid-sentences 500 --bleu-sentences 300
        --no-progress --save-every-min 10 --max-minutes 40)
PAPER=(norm=pre attn_dropout=0 ffn_dropout=0)      # the paper's dropout (section 5.4)
python scripts/train.py --data data/news-mix --run runs/arm-small-all --set "${PAPER[@]}" "${COMMON[@]}" &
python scripts/train.py --data data/news-mix --run runs/arm-19m-all --grow --set "${PAPER[@]}" N_dec=6 d_ff=2048 \
    "${COMMON[@]}" &
python scripts/train.py --data data/news-mix-hf --run runs/arm-small-hf --set "${PAPER[@]}" "${COMMON[@]}" &
wait
python scripts/compare_runs.py runs/arm-small-all runs/arm-19m-all runs/arm-small-hf --since-warm-start --every 10
