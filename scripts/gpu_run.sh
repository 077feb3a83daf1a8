#!/usr/bin/env bash
# The whole GPU run in one command, for the short time a lent GPU is ours:
#
#     scripts/gpu_run.sh MINUTES [DATA]
#
# DATA: a prepared folder (with spm.model, from scripts/prepare_data.py; default data/wmt-en-de), such a folder
# packed by scripts/pack_data.py (a .tar.xz small enough for the device's carry), or a raw corpus folder
# ({train,valid,test}.{en,de}), which is prepared first. Then, in order:
#   1. bench_mfu.py times the training step of each preset in BENCH for BENCH_SECONDS (tokens/s and MFU): news-small's
#      and this run's, which also fills torch.compile's cache for the run;
#   2. train.py trains news-base (PRESET with SET) on the fast path (core/training/fast.py: compiled, bf16, fixed-shape
#      batches on the GPU) for MINUTES, cut so that the whole call ends within BUDGET minutes (RESERVE kept for step 3);
#   3. the last saves are averaged, newstest2014 is scored (beam 4, sacrebleu), the run's MFU is read from its log, and
#      the checkpoint folder is packed (tar, xz) into parts.
# The work goes to $WORK (default artifacts/gpu-run: data, run, the checkpoint folder $WORK/$NAME); the results to $OUT
# (default $WORK), as a lent device returns at most 8 files of <= 16 MiB, 64 MiB in all: $OUT/$NAME.tar.xz.part-*,
# bench.json (one line a preset), mfu.json (the run's), test.json and gpu_run.log. If the parts would not fit, the
# attention snapshots are left out of them (they stay in $WORK).
#
# The default size: the paper's base width (d_model 512, d_ff 2048, h 8), 6 encoder layers and 2 decoder layers
# (31.4M parameters; a 60 MiB fp16 checkpoint, ~54 MiB packed): a 3-layer decoder's 68 MiB would not come back from
# the device, and a shallow decoder loses little (Kasai et al. 2021; docs/training.md, "news-base").
# Settings by environment variable: OUT, NAME (news-base), PRESET (base), SET (config overrides), MAX_TOKENS (60000
# padded tokens a batch), WARMUP (800), LR_SCALE (1.0), COOLDOWN (minutes at the end in which the learning rate falls to
# 0, by the clock; default a fifth of the training minutes, 0 for none), SAVE_MIN (minutes between weight saves: a fifth
# of COOLDOWN, at most 1, so that the five saves averaged lie within the cool-down), BUDGET (9.3: minutes the whole call
# may take; a lent device stops a call at 10), RESERVE (2.5: minutes kept for the run's start and step 3), BENCH
# ("small base": presets timed first, each with SET if it is PRESET, else as news-small; "" for none), BENCH_SECONDS
# (30), VALID_EVERY (1000 steps), PROBE_EVERY (1000), COMPILE_BACKEND (inductor), PEAK_TFLOPS (989, the H100/H200 bf16
# dense peak; on a CPU a measured matmul), VOCAB (8000, for a raw corpus), EXTRA (more train.py options).
# CI rehearses it on the CPU with PRESET=tiny on a toy corpus (tests/scripts/test_gpu_run.py), the step compiled by
# COMPILE_BACKEND=eager (the graphs captured by TorchDynamo as on the GPU, run eagerly: seconds, not a minute).
set -euo pipefail
cd "$(dirname "$0")/.."

MINUTES=${1:?usage: scripts/gpu_run.sh MINUTES [DATA]   (see the comment at the top of this script)}
DATA=${2:-data/wmt-en-de}
WORK=${WORK:-artifacts/gpu-run}
OUT=${OUT:-$WORK}
NAME=${NAME:-news-base}
PRESET=${PRESET:-base}
SET=${SET:-norm=pre N_dec=2 attn_dropout=0 ffn_dropout=0}
MAX_TOKENS=${MAX_TOKENS:-60000}
WARMUP=${WARMUP:-800}
LR_SCALE=${LR_SCALE:-1.0}
VOCAB=${VOCAB:-8000}
BUDGET=${BUDGET:-9.3}
RESERVE=${RESERVE:-2.5}
BENCH=${BENCH-small base}
BENCH_SECONDS=${BENCH_SECONDS:-30}
VALID_EVERY=${VALID_EVERY:-1000}
PROBE_EVERY=${PROBE_EVERY:-1000}
COMPILE_BACKEND=${COMPILE_BACKEND:-inductor}
EXTRA=${EXTRA:-}
export PYTHONUNBUFFERED=1
T0=$(date +%s)
minutes_since_start() { python -c "print(round(($(date +%s) - $T0) / 60, 2))"; }

mkdir -p "$WORK" "$OUT"
exec > >(tee -a "$OUT/gpu_run.log") 2>&1
# a lent machine starts bare: install the project itself (no downloads: its packages are there already)
python -c "import core" 2>/dev/null || python -m pip install -q --no-deps --no-build-isolation -e .
python -c "import torch; print('torch', torch.__version__, '| CUDA:', torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'none, running on the CPU')"
ON_GPU=$(python -c "import torch; print(int(torch.cuda.is_available()))")
PEAK=()
[ "$ON_GPU" = 1 ] && PEAK=(--peak-tflops "${PEAK_TFLOPS:-989}")

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

# 1. the step of each preset, timed (the last one compiled is this run's: its compilation is cached for step 2).
# A benchmark that fails is reported and passed over: the training run matters more.
: > "$OUT/bench.json"
for bench_preset in $BENCH; do
    bench_set="norm=pre attn_dropout=0 ffn_dropout=0"      # news-small's recipe
    [ "$bench_preset" = "$PRESET" ] && bench_set="$SET"
    # shellcheck disable=SC2086  # bench_set is a list of words
    python scripts/bench/bench_mfu.py --preset "$bench_preset" --set $bench_set --data "$DATA" \
        --max-tokens "$MAX_TOKENS" --seconds "$BENCH_SECONDS" --compile on --compile-backend "$COMPILE_BACKEND" \
        "${PEAK[@]}" >> "$OUT/bench.json" || echo "gpu_run: the benchmark of $bench_preset failed (above); going on"
    tail -n 1 "$OUT/bench.json"
done

# 2. training, for MINUTES or what the call's BUDGET leaves after RESERVE
TRAIN_MIN=$(python -c "print(round(max(0.1, min($MINUTES, $BUDGET - $(minutes_since_start) - $RESERVE)), 2))")
[ "$TRAIN_MIN" = "$MINUTES" ] || echo "gpu_run: $TRAIN_MIN minutes of training, not $MINUTES, so that the call ends within BUDGET=$BUDGET"
COOLDOWN=${COOLDOWN:-$(python -c "print(round($TRAIN_MIN / 5, 4))")}
SAVE_MIN=${SAVE_MIN:-$(python -c "print(min(1.0, $COOLDOWN / 5) if $COOLDOWN > 0 else 1.0)")}
echo "gpu_run: training starts at minute $(minutes_since_start)"
# shellcheck disable=SC2086  # SET and EXTRA are lists of words
python scripts/train.py --data "$DATA" --run "$WORK/run" --out "$WORK/$NAME" --preset "$PRESET" --set $SET \
    --precision auto --clip 1.0 --max-tokens "$MAX_TOKENS" --warmup "$WARMUP" --lr-scale "$LR_SCALE" \
    --max-minutes "$TRAIN_MIN" --fast on --compile on --compile-backend "$COMPILE_BACKEND" \
    --valid-every "$VALID_EVERY" --valid-sentences 500 --bleu-sentences 300 --probe-every "$PROBE_EVERY" \
    --save-every-min "$SAVE_MIN" $( [ "$COOLDOWN" = 0 ] || echo --cooldown-minutes "$COOLDOWN" ) --no-progress $EXTRA

# 3. newstest2014, the run's MFU, the parts (the checkpoint comes back even if a score fails: it can be scored here)
echo "gpu_run: evaluation starts at minute $(minutes_since_start)"
if python scripts/evaluate.py "$WORK/$NAME" --data "$DATA" --split test --beam 4 --no-progress; then
    python - "$WORK/$NAME/card.json" > "$OUT/test.json" <<'PY'
import json, sys
print(json.dumps(json.load(open(sys.argv[1]))["test"], indent=1))
PY
else
    echo "gpu_run: newstest2014 could not be scored here (above); score it where the parts land"
fi
python scripts/bench/bench_mfu.py --run "$WORK/run" --data "$DATA" --skip 2 "${PEAK[@]}" > "$OUT/mfu.json" ||
    echo "gpu_run: the run's MFU could not be read (above); bench_mfu.py --run reads it where the parts land"
cat "$OUT/mfu.json"

pack() {   # the checkpoint folder as tar.xz parts of 15 MiB in $OUT (tar options, e.g. --exclude, come first)
    rm -f "$OUT/$NAME".tar.xz.part-*
    tar -C "$WORK" "$@" -cf - "$NAME" | xz -T0 -6 | split -b 15M -d - "$OUT/$NAME.tar.xz.part-"
}
fits() {   # what $OUT holds fits what a lent device returns: at most 8 files, 63 MiB together (a MiB of room)
    [ "$OUT" -ef "$WORK" ] && return 0      # results kept beside the work: nothing to return
    [ "$(find "$OUT" -maxdepth 1 -type f | wc -l)" -le 8 ] && [ "$(du -bc "$OUT"/* | tail -1 | cut -f1)" -le 66060288 ]
}
pack
if ! fits; then
    echo "gpu_run: the parts and results would not all come back from a lent device; packing without snapshots"
    pack --exclude="$NAME/snapshots"
fi
fits || echo "gpu_run: WARNING: $OUT still holds more than a lent device returns (8 files, 64 MiB): $(ls "$OUT")"
echo "gpu_run: done at minute $(minutes_since_start). Checkpoint $WORK/$NAME ($(du -sh "$WORK/$NAME" | cut -f1));" \
    "$(find "$OUT" -maxdepth 1 -name "$NAME.tar.xz.part-*" | wc -l) parts in $OUT."
echo "Join the parts with: cat $NAME.tar.xz.part-* | tar -xJf -"
