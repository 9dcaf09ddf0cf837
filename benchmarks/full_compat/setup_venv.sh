#!/usr/bin/env bash
# The reference implementation `full` 0.0.3.1 needs transformers 4.x (it calls tokenizer.as_target_tokenizer()).
# It gets its own virtualenv, benchmarks/full_venv (git-ignored), that reuses the system torch
# (--system-site-packages) and shadows transformers / tokenizers / huggingface_hub with 4.x-era versions.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m venv --system-site-packages full_venv
full_venv/bin/pip install -q --no-deps "transformers==4.57.1" "tokenizers==0.22.2" "huggingface-hub==0.36.2" "full==0.0.3.1"
full_venv/bin/python -c "import full, transformers; print('full', full.__about__.__version__ if hasattr(full, '__about__') else '?', 'transformers', transformers.__version__)"
