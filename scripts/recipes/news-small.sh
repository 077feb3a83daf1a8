#!/usr/bin/env bash
# The commands that made checkpoints/news-small, in order (card.json's "recipe" names this file).
#
# It was trained in segments from 2026-11-30 to 2026-12-02, on both CPU threads of its 2-core machine (no GPU): a
# fresh run and three --resume segments (fp32, steps 1-7856), a warm start from the exported weights with a fresh
# Adam when the run folder was gone (bf16, from step 7857), and more --resume segments, the last with a
# learning-rate cool-down; then (2026-12-01) a second warm start and cool-down, and (2026-12-02) a third; 34000
# steps, 41.08 epochs, 15.25 h in all. On 2026-12-04 it went on from there on the news mix (nine times the data):
# 5.5 minutes on a lent NVIDIA H200 (steps 34001-38861), then two segments on the CPU, each ending in a cool-down
# (to step 42161). Each segment exported a checkpoint folder when it ended; the last export is the shipped one. The
# card's history table lists every segment with its scores. The 2026-12-04 commands below are as run.
#
# The commands are reconstructed from card.json's notes and the README of the time, the checkpoint commits'
# messages (git log -- checkpoints/news-small) and train_log.jsonl (its end-of-run validations mark where each segment
# stopped, and its elapsed_s where a --max-minutes limit fell); no shell history was kept. The comment above each
# command says what is certain and what is inferred. Where a segment was stopped by SIGTERM when the machine's time
# ran out, `timeout` plays that part (its minutes include start-up; the step where training stops will differ).
# Not bit-for-bit repeatable in any case: saves are taken by wall-clock time (every 10 minutes), so the averaged
# saves depend on the machine's speed.
#
# An earlier news-small (2026-11-30, post-norm as in the paper, peak learning rate 1.1e-3 at step 500) collapsed its
# encoder and was discarded; it is not part of these weights (docs/experiments.md, "Post-norm or pre-norm?").
set -euo pipefail
cd "$(dirname "$0")/../.."
SHARED=$(python scripts/get_data.py --where)    # the data folder (core/paths.py: ../shared, $ATTN_EXPLORER_SHARED, ...)

# The data: 86,441 news/Europarl/general pairs made for this project (../shared/data/wmt-en-de; valid newstest2013,
# test newstest2014), cleaned (80 pairs dropped), one shared 8,000-piece SentencePiece BPE model. Default settings
# otherwise (max 250 words, ratio 2.5), as card.json's prep_report records.
python scripts/prepare_data.py --corpus "$SHARED/data/wmt-en-de" --out data/wmt-en-de --vocab-size 8000

# The options every fp32 segment (2026-11-30) shared: pre-norm with clipping (the fix for the collapse), the
# paper's schedule with warmup 600 and scale 0.4, 3,500-token batches, a validation every 250 steps with greedy BLEU
# on the first 150 dev sentences, attention snapshots every 150 steps. The README of the time gives all but
# --valid-every 250 --bleu-sentences 150, which are inferred from the log (validations at 250, 500, ...; BLEU on 150
# sentences), where the defaults would be 1000 and 200. --valid-sentences is not recorded: the default, 1000.
FP32=(--data data/wmt-en-de --run runs/news-small --out checkpoints/news-small
      --preset small --set norm=pre --clip 1.0 --threads 2 --max-tokens 3500 --warmup 600 --lr-scale 0.4
      --valid-every 250 --bleu-sentences 150 --probe-every 150)

# 2026-11-30: the fresh pre-norm run. It stopped at its time limit at step 3164 after 118 minutes (7081 s; an
# end-of-run validation there). The README of the time says --max-minutes 120; the log's stop fits 118.
python scripts/train.py "${FP32[@]}" --max-minutes 118

# 2026-11-30, straight after: --resume with a larger limit, to step 3465 at 130 minutes (7800 s) of training.
# Exported and committed as 6f98492 (newstest2014 BLEU 5.63).
python scripts/train.py "${FP32[@]}" --resume --max-minutes 130

# 2026-11-30: --resume for 36 more minutes, to step 4435 at 166 minutes (9960 s). Commit 6579d86 (BLEU 6.97).
python scripts/train.py "${FP32[@]}" --resume --max-minutes 166

# 2026-11-30: --resume for 130 more minutes, to step 7856 at 296 minutes (17761 s; the card then said
# stopped_by "max_minutes"). Commit f5cda8d (BLEU 10.0).
python scripts/train.py "${FP32[@]}" --resume --max-minutes 296

# The options of the bf16 segments (2026-12-01, up to step 18565): the same model and schedule, bf16 autocast (fp32 weights, Adam
# and loss), a validation every 500 steps with greedy BLEU on the first 500 dev sentences (both inferred from the
# log: validations at 8000, 8500, ... on 500 sentences), snapshots every 150 steps as before.
BF16=(--data data/wmt-en-de --run runs/news-small --out checkpoints/news-small
      --preset small --set norm=pre --clip 1.0 --threads 2 --max-tokens 3500 --warmup 600 --lr-scale 0.4
      --valid-every 500 --bleu-sentences 500 --probe-every 150 --precision bf16)

# 2026-12-01: the run folder with the optimiser state was gone, so a WARM START from the exported step-7856 weights
# (--init-from, in card.json's training.warm_start): a fresh Adam, the schedule continued from step 7856 after 200
# steps of linear re-warm-up; the step count, tokens, time and log carry on. Stopped by SIGTERM when the machine's
# time ran out, at step 10727, after 124 minutes of training. Commit b1bffb8 (BLEU 11.28).
rm -rf runs/news-small            # as it was: no state to resume (warm_start seeds the run's log from the checkpoint)
timeout --preserve-status --signal=TERM 126m \
    python scripts/train.py "${BF16[@]}" --init-from checkpoints/news-small --rewarm 200

# 2026-12-01: --resume from that run's state, same arguments (the state carries the warm start; --resume ignores
# --init-from), for 3872 more steps to 14599, 122 minutes, stopped by SIGTERM again. Commit 29b9558 (BLEU 12.55).
timeout --preserve-status --signal=TERM 124m \
    python scripts/train.py "${BF16[@]}" --init-from checkpoints/news-small --rewarm 200 --resume

# 2026-12-01, three segments. First a --resume that stopped at step 15221 after 19 minutes: known only from the log
# (an end-of-run validation and snapshot at 15221); the card's notes do not mention it, nor how it was stopped.
timeout --preserve-status --signal=TERM 21m \
    python scripts/train.py "${BF16[@]}" --init-from checkpoints/news-small --rewarm 200 --resume
# Then --resume for 349 steps, to step 15570 (the notes name this one; how it was stopped is not recorded).
timeout --preserve-status --signal=TERM 13m \
    python scripts/train.py "${BF16[@]}" --init-from checkpoints/news-small --rewarm 200 --resume
# Then from step 15570 with a COOL-DOWN: --max-steps 19000 --cooldown 3000 (in card.json's training.cooldown): from
# step 16000 the learning rate is the schedule's times 1 - sqrt(progress) (Hägele et al. 2024), 0 at step 19000.
# Stopped by SIGTERM when the machine's time ran out, at step 18565 (99 minutes), where the learning rate was 7% of the
# schedule's: card.json's stopped_by "signal". Commit 28c01c8: the shipped weights, the average of the saves at
# steps 17388, 17695, 18004, 18314 and 18565.
timeout --preserve-status --signal=TERM 101m \
    python scripts/train.py "${BF16[@]}" --init-from checkpoints/news-small --rewarm 200 --resume \
    --max-steps 19000 --cooldown 3000

# 2026-12-01, two segments in a new run folder, written down as they were run. A WARM START from the
# shipped (cooled-down) step-18565 weights: a fresh Adam, 200 steps of re-warm-up back to the schedule (1.8e-4),
# then a new cool-down. The first segment was stopped by SIGTERM at step 19246 only to change two options (it had
# validated on 1,000 dev sentences; the earlier segments' curves use 500); --resume went on with --valid-sentences
# 500, a later end (--max-steps 24500, the cool-down from step 21000) and --max-minutes 799 as a backstop. It
# stopped at --max-steps: step 24500, 29.92 epochs, 13.29 h in all; the shipped weights average the saves at steps
# 23340, 23599, 23967, 24475 and 24500 (newstest2014 BLEU 14.04, chrF 43.84).
rm -rf runs/news-next
WARM2=(--data data/wmt-en-de --run runs/news-next --out runs/news-next-out
    --init-from checkpoints/news-small --rewarm 200 --preset small --set norm=pre --clip 1.0 --threads 2
    --max-tokens 3500 --warmup 600 --lr-scale 0.4 --precision bf16 --valid-every 500 --bleu-sentences 500
    --probe-every 500 --no-progress)
cp -r checkpoints/news-small runs/news-next-out     # the candidate starts as a copy: notes, demo, snapshots carry on
timeout --preserve-status --signal=TERM 16m \
    python scripts/train.py "${WARM2[@]}" --max-steps 24000 --cooldown 3000 --max-minutes 790 --valid-sentences 1000
python scripts/train.py "${WARM2[@]}" --resume --max-steps 24500 --cooldown 3500 --max-minutes 799 --valid-sentences 500
# (The real run's --out was a candidate folder, runs/news-next-out, copied over checkpoints/news-small once it had
# scored >= 0.5 BLEU better on newstest2014, the rule of the time for replacing a shipped checkpoint.)
# To go on from here, warm-start again (--init-from, a fresh Adam and a re-warm-up): --resume with a later
# --max-steps would jump the learning rate back up.

# 2026-12-02, one segment in a new run folder, written down as it was run: a THIRD WARM START from the
# shipped step-24500 weights (a fresh Adam, 200 steps of re-warm-up back to the schedule), then a cool-down from
# step 30500 to 0 at step 34000, with a save every 400 steps so that the averaged saves lie in the cool-down's end.
# The end was moved earlier twice, to fit the machine's time, by SIGTERM and --resume before the cool-down began (the
# learning rate up to step 30500 does not depend on --max-steps): started with --max-steps 35500 --cooldown 4500,
# resumed at step 25040 with --max-steps 34500 --cooldown 4000 and at step 27829 with the values below.
rm -rf runs/news-warm3
WARM3=(--data data/wmt-en-de --run runs/news-warm3 --out runs/news-warm3-out
     --init-from checkpoints/news-small --rewarm 200 --preset small --set norm=pre --clip 1.0 --threads 2
     --max-tokens 3500 --warmup 600 --lr-scale 0.4 --precision bf16 --valid-every 500 --bleu-sentences 500
     --valid-sentences 500 --probe-every 500 --no-progress --save-every-steps 400)
cp -r checkpoints/news-small runs/news-warm3-out      # the candidate starts as a copy: notes, demo, snapshots carry on
python scripts/train.py "${WARM3[@]}" --max-steps 34000 --cooldown 3500
# It stopped at --max-steps (9500 steps, 118 minutes); the shipped weights average the saves at steps 32400, 32800,
# 33200, 33600 and 34000 (newstest2014 BLEU 14.72, chrF 44.59: +0.68 against 14.04), so the candidate replaced the
# shipped folder (an earlier try of the same warm start, 2026-12-02, cooled down to 0 at step 32000, had scored 14.44
# and was not shipped).
cp -r runs/news-warm3-out/. checkpoints/news-small/

# 2026-12-04: NINE TIMES THE DATA. The news mix: wmt-en-de's pairs and en-de-extra's 802,200 (human, forward and
# back translations; every origin), prepared with this checkpoint's own SentencePiece model, then the 'its' pairs
# balanced (ihr- pairs copied 4 more times, sein- 2 more: 931,481 pairs). Chosen by the arms of
# scripts/experiments/news-mix-arms.sh (docs/experiments.md, "Nine times the data").
python scripts/prepare_data.py --corpus "$SHARED/data/wmt-en-de" --extra "$SHARED/data/en-de-extra" \
    --spm-model checkpoints/news-small/spm.model --out data/news-mix --no-progress
python scripts/balance_its_pairs.py --data data/news-mix --out data/news-mix-its --factor 3
# The prepared mix packed as one file for the GPU machine's 64 MiB carry (215.5 MiB of text -> 20.8 MiB).
python scripts/pack_data.py data/news-mix-its artifacts/carry/news-mix-its.tar.xz --no-progress

# Steps 34001-38861, ON THE LENT GPU (NVIDIA H200), through its `run` tool with carry artifacts/carry (and
# checkpoints/multi30k-small and checkpoints/news-small/snapshots moved out of the tree for the call: the tracked
# tree is over the 64 MiB that travel). A warm start with the paper's dropout and 25,000-token batches at lr scale
# 1.0, for 5.5 minutes; --max-steps/--cooldown were a guess at the GPU's speed and time ran out at step 38861,
# before the cool-down began, so that export is un-cooled. As run, the archive was unpacked by hand (the script's
# own unpacking then died of SIGPIPE; fixed since) and PYTHONPATH=$PWD stood for the install scripts/gpu_run.sh now does.
# scripts/experiments/news-gpu.sh has the scoring of each step's export, and the arm not shipped.
if [ "${ON_DEVICE:-0}" = 1 ]; then
    WORK=/tmp/gw PRESET=small NAME=news-gpu MAX_TOKENS=25000 WARMUP=600 SET="norm=pre attn_dropout=0 ffn_dropout=0" \
    EXTRA="--init-from checkpoints/news-small --rewarm 200 --lr-scale 1.0 --max-steps 42000 --cooldown 2000
           --save-every-steps 500 --valid-every 1000 --probe-every 1000 --valid-sentences 500 --bleu-sentences 500" \
        scripts/gpu_run.sh 5.5 artifacts/carry/news-mix-its.tar.xz
    exit
fi
# Back here its parts were joined into runs/news-gpu-h200 (cat news-gpu.tar.part-* | tar -xf -): newstest2014 19.08,
# but Figure 3's head at 0.397, under the ship rule's 0.40, so not shipped.
[ -d runs/news-gpu-h200/news-gpu ] || { echo "runs/news-gpu-h200/news-gpu (the GPU step's export) is missing: run" \
    "this script with ON_DEVICE=1 on a GPU machine first and bring its output back" >&2; exit 1; }

# Steps 38862-40361, on this CPU: a cool-down of the GPU's export over 1,500 steps with the CPU's batch and learning-
# rate scale, a save every 250 steps so that the export averages five saves within it (19.02; Figure 3 at 0.399).
NEWS_CPU=(--data data/news-mix-its --preset small --set norm=pre attn_dropout=0 ffn_dropout=0 --clip 1.0 --threads 2
          --max-tokens 3500 --warmup 600 --lr-scale 0.4 --precision bf16 --valid-every 500 --valid-sentences 500
          --bleu-sentences 500 --probe-every 500 --save-every-steps 250 --keep 5 --no-progress)
python scripts/train.py "${NEWS_CPU[@]}" --run runs/news-gpu-cool --out runs/news-gpu-cool-out \
    --init-from runs/news-gpu-h200/news-gpu --rewarm 100 --max-steps 40361 --cooldown 1500
# Steps 40362-42161: 1,800 more steps from the cooled weights with a cool-down over the last 1,000 (37 minutes):
# newstest2014 19.19, chrF 50.21, both figures linked (Figure 3 0.412).
python scripts/train.py "${NEWS_CPU[@]}" --run runs/news-gpu-ctrl --out runs/news-gpu-ctrl-out \
    --init-from runs/news-gpu-cool-out --rewarm 200 --max-steps 42161 --cooldown 1000
python scripts/evaluate_candidate.py runs/news-gpu-ctrl-out --json runs/news-gpu-ctrl-review.json --no-progress
# The review said replace (+4.47 BLEU, no worse on the pronoun test and the anaphora head, both figures linked at
# >= 0.40). Each --out above started empty, so the shipped folder took the candidate's weights, config, log and
# translations over its own card prose, demo and snapshots; the snapshots of the three segments were added and all
# thinned to the 30 MB the snapshots of a news model may take; the card's new facts were copied from the candidate's
# card (data, training, dev scores) and its prose rewritten by hand.
cp runs/news-gpu-ctrl-out/{model.safetensors,config.json,train_log.jsonl,translations.test.de} checkpoints/news-small/
for run in runs/news-gpu-h200/news-gpu runs/news-gpu-cool-out runs/news-gpu-ctrl-out; do
    cp "$run"/snapshots/step_*.npz checkpoints/news-small/snapshots/
done
python scripts/thin_snapshots.py checkpoints/news-small --max-mb 30 --delete

# The scores on the card (each writes its own key of card.json): newstest2014 BLEU/chrF with beam 4, the pronoun
# test, word alignment against the RWTH gold, syntax against gold parses, the faithfulness of each view, and the dev
# sentences of the Queries-and-keys page.
python scripts/evaluate.py checkpoints/news-small --split test
python scripts/evaluate_pronouns.py checkpoints/news-small
python scripts/evaluate_alignment.py checkpoints/news-small
python scripts/evaluate_syntax.py checkpoints/news-small
python scripts/evaluate_faithfulness.py checkpoints/news-small     # faithfulness.json, the "What heads do" page
python scripts/make_qk_sample.py
python scripts/figure_links.py checkpoints/news-small --card    # the paper's Figures 3 and 4: head, score, verdict

# The model card. The prose fields of card.json (notes, data_notes, training_notes, evaluation_notes,
# limitations), its "demo" sentences and its "recipe" were written by hand; this renders CARD.md from card.json.
python scripts/write_card.py checkpoints/news-small
