#!/usr/bin/env bash
# Install ONNX Runtime for Node.js (onnxruntime-node, pinned in
# tests/ort/package.json) into tests/ort/node_modules, for the runners in
# tests/ort/: run_split.mjs runs split models end to end (the split tests
# need it; scripts/test.sh calls this), run_profile.mjs measures
# per-operator times to calibrate the time model with (`tessera profile
# --calibration`).
#
#   scripts/fetch_ort.sh
#
# Idempotent: a quick no-op when the pinned version is already installed.
# Install scripts are skipped (--ignore-scripts): onnxruntime-node's would
# fetch GPU binaries from a host that may be unreachable; the bundled CPU
# runtime for linux-x64 is all the runner needs.
set -euo pipefail
cd "$(dirname "$0")/../tests/ort"

VERSION="1.30.0"  # keep in step with package.json
INSTALLED="node_modules/onnxruntime-node/package.json"

if [[ -f "$INSTALLED" ]] &&
  grep -q "\"version\": \"$VERSION\"" "$INSTALLED"; then
  echo "onnxruntime-node $VERSION already in $(pwd)/node_modules"
  exit 0
fi
command -v npm >/dev/null || {
  echo "fetch_ort.sh: npm not found; install Node.js 18 or later" >&2
  exit 1
}
npm install --ignore-scripts --no-audit --no-fund
echo "onnxruntime-node $VERSION installed in $(pwd)/node_modules"
