#!/usr/bin/env bash
# The ONNX Runtime peers (sentence-transformers' and CrossEncoder's backend="onnx", optimum's ORT models) need
# optimum-onnx, which pins transformers<4.58; dialeval needs transformers>=5. They get their own virtualenv,
# benchmarks/onnx_peer_venv (git-ignored), reusing the system torch (--system-site-packages) and shadowing
# transformers / tokenizers / huggingface_hub / datasets / sentence-transformers with 4.x-era versions.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m venv --system-site-packages onnx_peer_venv
onnx_peer_venv/bin/pip install -q --no-deps "transformers==4.57.6" "tokenizers==0.22.2" "huggingface-hub==0.36.2" \
  "datasets==4.4.1" "sentence-transformers==5.7.0" "optimum==2.1.0" "optimum-onnx==0.1.0" "onnxruntime==1.32.0" \
  "onnx==1.23.2" "ml_dtypes==0.6.0" "flatbuffers==25.12.19"
onnx_peer_venv/bin/python -c "import optimum.onnxruntime, sentence_transformers, transformers; print('peer venv: transformers', transformers.__version__, 'sentence-transformers', sentence_transformers.__version__)"
