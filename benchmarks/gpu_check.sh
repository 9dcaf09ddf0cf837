#!/usr/bin/env bash
# GPU check, within 8 minutes on one CUDA GPU, into one file: the suite's GPU-marked tests; every unit of the
# default leaderboard on a fixed row sample at fp32 and bf16 (rows per second and the score differences between
# the two precisions, benchmarks/leaderboard_gpu.py); the demo's /evaluate latency with every model metric.
#
#   bash benchmarks/gpu_check.sh                  # writes $OUT/gpu_check.txt ($OUT unset: docs/results/benchmarks/)
#   GPU_CHECK_DRY_RUN=1 bash benchmarks/gpu_check.sh   # the CPU-runnable parts, tiny sample, no GPU needed
#
# Settings: GPU_CHECK_SAMPLE (rows per unit, default 200), GPU_CHECK_DATA (default ../shared/data, else
# tests/data), GPU_CHECK_BUDGET_S (seconds of leaderboard units, default 210).
set -uo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 HF_EVALUATE_OFFLINE=1 TRANSFORMERS_OFFLINE=1 \
  GRADIO_ANALYTICS_ENABLED=False TOKENIZERS_PARALLELISM=false DIALEVAL_PROGRESS=0
DRY="${GPU_CHECK_DRY_RUN:-0}"
DEST="${OUT:-docs/results/benchmarks}"
mkdir -p "$DEST"
FILE="$DEST/gpu_check.txt"
DATA="${GPU_CHECK_DATA:-../shared/data}"
SAMPLE="${GPU_CHECK_SAMPLE:-200}"
BUDGET="${GPU_CHECK_BUDGET_S:-210}"
DEVICE=cuda
DTYPES=fp32,bf16
if [ "$DRY" = 1 ]; then DEVICE=cpu; DTYPES=fp32; SAMPLE=4; BUDGET="${GPU_CHECK_BUDGET_S:-60}"; fi
exec > >(tee "$FILE") 2>&1
start=$SECONDS
step() { echo; echo "== $1 (t=$((SECONDS - start)) s)"; }
echo "gpu_check.sh $(date -u +%Y-%m-%dT%H:%MZ) on $(hostname); git $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
if [ "$DRY" = 1 ]; then
  echo "DRY RUN on the CPU: no GPU numbers below"
else
  python -c "import torch; assert torch.cuda.is_available(), 'gpu_check.sh: no CUDA GPU is visible'; print('GPU:', torch.cuda.get_device_name(0), '| torch', torch.__version__)" || exit 1
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
fi
step "GPU-marked tests"
if [ "$DRY" = 1 ]; then echo "(skipped in a dry run: they need CUDA)"
else timeout 75 python -m pytest tests -m gpu -q -p no:cacheprovider; echo "tests exit status $?"; fi
step "Every leaderboard unit, $DTYPES on $DEVICE, first $SAMPLE rows each"
timeout $((BUDGET + 60)) python benchmarks/leaderboard_gpu.py --data-dir "$DATA" --device "$DEVICE" \
  --dtypes "$DTYPES" --sample "$SAMPLE" --budget-s "$BUDGET"
echo "leaderboard exit status $?"
step "Demo /evaluate on CUDA, every model metric, bf16"
if [ "$DRY" = 1 ]; then echo "(skipped in a dry run: the demo places its models on CUDA)"
else DIALEVAL_DTYPE=bf16 timeout 90 python benchmarks/demo_gpu.py --items 32 --repeats 3; echo "demo exit status $?"; fi
echo; echo "gpu_check.sh: done in $((SECONDS - start)) s; this file: $FILE"
