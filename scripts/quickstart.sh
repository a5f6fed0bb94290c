#!/usr/bin/env bash
# README command 1: set up a fresh Debian 12 machine, build, and run the main
# job on a bundled model: describe it, profile it on an A100-80GB (the GPU of
# the built-in default cluster), then plan its split across that cluster and
# write the per-GPU sub-models.
set -euo pipefail
cd "$(dirname "$0")/.."
# The components in unity batches, configured as scripts/test.sh
# configures build/, so that the second README command reuses what this
# one built (docs/contributing.md, "Builds and CI time").
bash scripts/setup.sh --target tessera build -DTESSERA_UNITY=ON
echo
echo "$ tessera inspect models/zoo/resnet50.onnx"
./build/cli/tessera inspect models/zoo/resnet50.onnx
echo
echo "$ tessera profile models/zoo/resnet50.onnx --device a100-80gb --batch 32"
./build/cli/tessera profile models/zoo/resnet50.onnx --device a100-80gb --batch 32
echo
echo "$ tessera profile models/zoo/resnet50.onnx --device h100-sxm --runtime pytorch --batch 32 --train --top 5"
./build/cli/tessera profile models/zoo/resnet50.onnx --device h100-sxm --runtime pytorch --batch 32 --train --top 5
echo
echo "$ tessera plan models/zoo/inception_v3.onnx --batch 32 -o build/quickstart/plan.json"
mkdir -p build/quickstart
./build/cli/tessera plan models/zoo/inception_v3.onnx --batch 32 \
  -o build/quickstart/plan.json
echo
echo "$ tessera split models/zoo/inception_v3.onnx --plan build/quickstart/plan.json -o build/quickstart/parts --force"
./build/cli/tessera split models/zoo/inception_v3.onnx \
  --plan build/quickstart/plan.json -o build/quickstart/parts --force
