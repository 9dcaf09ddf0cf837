#!/usr/bin/env bash
# GPU check, within 5 minutes on one CUDA GPU: the suite's GPU-marked tests, then the three speed
# benchmarks on CUDA in half precision (transformers' default SDPA attention): Sem-Ent (dialeval vs
# sentence-transformers), NLI (dialeval vs CrossEncoder and pipeline), FULL (SmolLM2, dialeval vs a
# transformers loop), then the demo's /evaluate with every model metric. Usage: bash benchmarks/gpu_check.sh [fp16|bf16]   (run from anywhere)
set -euo pipefail
cd "$(dirname "$0")/.."
DTYPE="${1:-bf16}"
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 HF_EVALUATE_OFFLINE=1 TRANSFORMERS_OFFLINE=1 \
  GRADIO_ANALYTICS_ENABLED=False TOKENIZERS_PARALLELISM=false DIALEVAL_PROGRESS=0
python -c "import torch; assert torch.cuda.is_available(), 'gpu_check.sh: no CUDA GPU is visible'; print('GPU:', torch.cuda.get_device_name(0), '| torch', torch.__version__)"
start=$SECONDS
step() { echo; echo "== $1 (t=$((SECONDS - start)) s)"; }
step "GPU-marked tests"
timeout 90 python -m pytest tests -m gpu -q -p no:cacheprovider
step "Sem-Ent encoder speed, MiniLM, $DTYPE"
timeout 60 python benchmarks/sem_ent_speed.py --device cuda --dtypes "$DTYPE" --n 1024 --repeats 3 --agreement 0
step "NLI Diversity speed, roberta-base shape, $DTYPE"
timeout 75 python benchmarks/nli_diversity.py --device cuda --dtypes "$DTYPE" --sets 16 --repeats 3
step "FULL speed, SmolLM2-135M, $DTYPE"
timeout 60 python benchmarks/full_followup.py --causal --device cuda --dtypes "$DTYPE" --limit 24 --repeats 3
step "Demo /evaluate on CUDA, every model metric, $DTYPE"
DIALEVAL_DTYPE="$DTYPE" timeout 120 python benchmarks/demo_gpu.py --items 32 --repeats 3
echo; echo "gpu_check.sh: done in $((SECONDS - start)) s"
