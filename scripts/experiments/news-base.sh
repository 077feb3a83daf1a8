#!/usr/bin/env bash
# news-base: the paper's base width (d_model 512, d_ff 2048, h 8; 6 encoder and 2 decoder layers, pre-norm, the
# paper's dropout), trained from scratch on the news mix in ONE call of a lent GPU. NOT RUN YET: no GPU has been lent
# since this recipe was written. It is the plan, in the order a session with a GPU runs it; when it has run, each
# step's date and numbers go beside it, as in scripts/recipes/news-small.sh; once shipped, it
# moves to scripts/recipes/ (the card names its recipe).
#
# Why this size (docs/training.md, "news-base"): the fp16 weights of a 3-decoder-layer model (67.9 MiB) would not
# come back from the device (at most 64 MiB returned in all); 2 layers take 59.9 MiB (about 54 packed), and a shallow
# decoder loses little, less still on distilled data (Kasai et al. 2021), while the time it saves (12% fewer FLOPs
# a token than 3 layers, 35% fewer than 6) buys epochs.
set -euo pipefail
cd "$(dirname "$0")/../.."
SHARED=${ATTN_EXPLORER_SHARED:-../shared}

if [ "${ON_DEVICE:-0}" = 1 ]; then
    # ON THE DEVICE, the one call (run tool: carry ["artifacts/carry"], timeout_s 600): the step of news-small and of
    # news-base timed (~1 minute each with their compilation), then as many minutes of training as leave the call
    # 2.5 for the end (BUDGET 9.3), evaluation, the parts. $OUT is the device's.
    WORK=/tmp/gw scripts/gpu_run.sh 8 artifacts/carry/news-mix-its.tar.xz
    exit
fi

if [ "${BACK:-0}" = 1 ]; then
    # 3. Back here, right after the call, with its files copied to runs/news-base-gpu/: the tree made whole again, the
    # parts joined, and the candidate scored against the shipped news model by the ship rule (docs/training.md,
    # "When a model is shipped"). bench_mfu.py --run runs/news-base-gpu/... is not needed: mfu.json came back.
    scripts/device_tree.sh unpark
    (cd runs/news-base-gpu && cat news-base.tar.xz.part-* | tar -xJf -)
    python scripts/evaluate_candidate.py runs/news-base-gpu/news-base --data data/news-mix-its --reuse-test \
        --json runs/news-base-gpu/review.json --no-progress
    exit
fi

# 1. Here, before the call: the news mix with balanced 'its' pairs, as news-small's last segments had it, packed for
# the carry (20.8 MiB), and the tree made light enough to travel with it (27.5 + 20.8 MiB of the 64).
[ -f artifacts/carry/news-mix-its.tar.xz ] || {
    python scripts/prepare_data.py --corpus "$SHARED/data/wmt-en-de" --extra "$SHARED/data/en-de-extra" \
        --spm-model checkpoints/news-small/spm.model --out data/news-mix --no-progress
    python scripts/balance_its_pairs.py --data data/news-mix --out data/news-mix-its --factor 3
    python scripts/pack_data.py data/news-mix-its artifacts/carry/news-mix-its.tar.xz --no-progress
}
scripts/device_tree.sh park

# 2. The call: see ON_DEVICE above.
echo "now: the run tool with command 'ON_DEVICE=1 bash scripts/experiments/news-base.sh', carry [\"artifacts/carry\"]," \
     "timeout_s 600; copy the files it returns to runs/news-base-gpu/, then: BACK=1 bash scripts/experiments/news-base.sh"
