#!/usr/bin/env bash
# The whole GPU run in one command, for the short time a lent GPU is ours:
#
#     scripts/gpu_run.sh MINUTES [DATA]
#
# DATA: a prepared folder (with spm.model, from scripts/prepare_data.py; default data/wmt-en-de), such a folder
# packed by scripts/pack_data.py (a .tar.xz small enough for the device's carry), or a raw corpus folder
# ({train,valid,test}.{en,de}), which is prepared first. Then: train the news model in bf16 for MINUTES
# (pre-norm, clipping, the paper's schedule), average the last saves, evaluate newstest2014 (beam 4, sacrebleu),
# print tokens/s and MFU. The work goes to $WORK (default artifacts/gpu-run: data, run, the checkpoint folder
# $WORK/$NAME); the results to $OUT (default $WORK), few and small, as a lent device returns at most 8 files
# of <= 16 MiB: $OUT/$NAME.tar.part-* (the checkpoint folder as a tar in 15 MiB parts), $OUT/mfu.json,
# $OUT/test.json and $OUT/gpu_run.log.
#
# The default size (d_model 384, d_ff 1536, 6 encoder and 3 decoder layers: 21M parameters, a 42 MB fp16
# checkpoint) is the largest whose parts fit the 64 MiB a lent device returns; larger via SET.
# Settings by environment variable: OUT, NAME (news-gpu), PRESET (base), SET (config overrides),
# MAX_TOKENS (25000), WARMUP (1000), COOLDOWN (minutes at the end in which the learning rate falls to 0, by the
# clock; default a fifth of MINUTES, 0 for none), SAVE_MIN (minutes between weight saves: a fifth of COOLDOWN, at most
# 1, so that the five saves averaged lie within the cool-down), PEAK_TFLOPS (989, the H100/H200 bf16 dense peak; on a CPU a
# measured matmul), VOCAB (8000, for a raw corpus), EXTRA (more train.py options).
# CI runs it on the CPU with PRESET=tiny on a toy corpus for about a minute (tests/test_gpu_run.py).
set -euo pipefail
cd "$(dirname "$0")/.."

MINUTES=${1:?usage: scripts/gpu_run.sh MINUTES [DATA]   (see the comment at the top of this script)}
DATA=${2:-data/wmt-en-de}
WORK=${WORK:-artifacts/gpu-run}
OUT=${OUT:-$WORK}
NAME=${NAME:-news-gpu}
PRESET=${PRESET:-base}
SET=${SET:-norm=pre N_dec=3 d_model=384 d_ff=1536}
MAX_TOKENS=${MAX_TOKENS:-25000}
WARMUP=${WARMUP:-1000}
VOCAB=${VOCAB:-8000}
COOLDOWN=${COOLDOWN:-$(python -c "print($MINUTES / 5)")}
SAVE_MIN=${SAVE_MIN:-$(python -c "print(min(1.0, $COOLDOWN / 5) if $COOLDOWN > 0 else 1.0)")}
EXTRA=${EXTRA:-}
export PYTHONUNBUFFERED=1

mkdir -p "$WORK" "$OUT"
exec > >(tee -a "$OUT/gpu_run.log") 2>&1
# a lent machine starts bare: install the project itself (no downloads: its packages are there already)
python -c "import core" 2>/dev/null || python -m pip install -q --no-deps --no-build-isolation -e .
python -c "import torch; print('torch', torch.__version__, '| CUDA:', torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'none, running on the CPU')"

if [ -f "$DATA" ] && [[ "$DATA" == *.tar.xz ]]; then       # packed by scripts/pack_data.py: unpack it
    # no `tar -t | head` here: under pipefail, head closing the pipe early kills tar and with it this script
    rm -rf "$WORK/unpacked" && mkdir -p "$WORK/unpacked"
    tar -xJf "$DATA" -C "$WORK/unpacked"
    inner=("$WORK/unpacked"/*/)
    if [ "${#inner[@]}" -ne 1 ] || [ ! -d "${inner[0]}" ]; then
        echo "gpu_run: $DATA should hold one folder (as scripts/pack_data.py makes it)" >&2
        exit 2
    fi
    DATA="${inner[0]%/}"
fi
if [ ! -f "$DATA/spm.model" ]; then
    if [ ! -f "$DATA/train.en" ]; then
        echo "gpu_run: $DATA is neither prepared data (spm.model) nor a raw corpus (train.en, train.de, ...)" >&2
        exit 2
    fi
    python scripts/prepare_data.py --corpus "$DATA" --out "$WORK/data" --vocab-size "$VOCAB" --no-progress
    DATA="$WORK/data"
fi

# shellcheck disable=SC2086  # SET and EXTRA are lists of words
python scripts/train.py --data "$DATA" --run "$WORK/run" --out "$WORK/$NAME" --preset "$PRESET" --set $SET \
    --precision auto --clip 1.0 --max-tokens "$MAX_TOKENS" --warmup "$WARMUP" --max-minutes "$MINUTES" \
    --valid-every 500 --valid-sentences 1000 --bleu-sentences 500 --probe-every 500 --save-every-min "$SAVE_MIN" \
    $( [ "$COOLDOWN" = 0 ] || echo --cooldown-minutes "$COOLDOWN" ) --no-progress $EXTRA

python scripts/evaluate.py "$WORK/$NAME" --data "$DATA" --split test --beam 4 --no-progress
python - "$WORK/$NAME/card.json" > "$OUT/test.json" <<'PY'
import json, sys
print(json.dumps(json.load(open(sys.argv[1]))["test"], indent=1))
PY

if python -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
    python scripts/bench/bench_mfu.py --run "$WORK/run" --data "$DATA" --peak-tflops "${PEAK_TFLOPS:-989}" | tee "$OUT/mfu.json"
else
    python scripts/bench/bench_mfu.py --run "$WORK/run" --data "$DATA" --skip 2 | tee "$OUT/mfu.json"
fi

tar -C "$WORK" -cf - "$NAME" | split -b 15M -d - "$OUT/$NAME.tar.part-"
echo "gpu_run: done. Checkpoint $WORK/$NAME ($(du -sh "$WORK/$NAME" | cut -f1)); $(ls "$OUT" | grep -c tar.part) parts in $OUT."
echo "Join the parts with: cat $NAME.tar.part-* | tar -xf -"
