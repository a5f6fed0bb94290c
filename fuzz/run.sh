#!/usr/bin/env bash
# Builds the libFuzzer targets (clang-16, ASan + UBSan) in build-fuzz/ and
# runs each over its seed corpus plus a time budget (docs/fuzzing.md).
# Exits non-zero if a target crashes, hangs, leaks, reports undefined
# behaviour or outgrows its memory limit; the input is left in
# build-fuzz/artifacts/.
#
#   bash fuzz/run.sh [--time SECONDS] [--jobs N] [TARGET...]
#
# TARGET: job_request, serve_config, ... (default: all of fuzz/corpus/*).
# New inputs a run finds go to build-fuzz/corpus/TARGET (the source tree's
# seeds are only read), so later runs in the same checkout start from them.
set -euo pipefail
cd "$(dirname "$0")/.."
time_s=20
jobs=$(nproc)
while [ $# -gt 0 ]; do
  case "$1" in
    --time) time_s=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    *) break ;;
  esac
done
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for d in fuzz/corpus/*/; do targets+=("$(basename "$d")"); done
fi

export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=true
export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}"
B=build-fuzz
# -O1 with line tables: the usual fuzzing build, and reports name lines.
# No precompiled headers: ccache does not reuse clang's objects built with
# them, so every build would be cold (docs/fuzzing.md, "Running them").
# The components in unity batches (cmake/TesseraUnity.cmake), as in the
# sanitizer builds of scripts/test.sh.
CC=clang-16 CXX=clang++-16 cmake -S . -B "$B" -G Ninja -DTESSERA_FUZZ=ON \
  -DTESSERA_WERROR=ON -DTESSERA_BUILD_TESTS=OFF -DTESSERA_BUILD_BENCH=OFF \
  -DTESSERA_UNITY=ON \
  -DTESSERA_PCH=OFF -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g1" \
  >/dev/null
build_targets=()
for t in "${targets[@]}"; do build_targets+=(--target "${t}_fuzz"); done
cmake --build "$B" -j "$(nproc)" "${build_targets[@]}"

mkdir -p "$B/corpus" "$B/artifacts" "$B/logs"
run_one() {
  local t=$1 B=$2 time_s=$3
  local max_len=8192
  [ "$t" = onnx_model ] || [ "$t" = k8s_json ] && max_len=16384
  local dict=()
  [ -f "fuzz/$t.dict" ] && dict=(-dict="fuzz/$t.dict")
  mkdir -p "$B/corpus/$t"
  if "$B/fuzz/${t}_fuzz" "$B/corpus/$t" "fuzz/corpus/$t" "${dict[@]}" \
      -max_total_time="$time_s" -max_len="$max_len" -rss_limit_mb=2048 \
      -timeout=10 -print_final_stats=1 -artifact_prefix="$B/artifacts/$t-" \
      >"$B/logs/$t.log" 2>&1; then
    printf 'fuzz: %-13s ok   %s\n' "$t" \
      "$(grep -E '^stat::(number_of_executed_units|average_exec_per_sec)' \
         "$B/logs/$t.log" | awk '{printf "%s ", $2}')"
  else
    printf 'fuzz: %-13s FAILED (log %s)\n' "$t" "$B/logs/$t.log"
    grep -E 'ERROR|SUMMARY|runtime error|Test unit written' \
      "$B/logs/$t.log" | head -20
    return 1
  fi
}
export -f run_one
# Each line: target, units run, executions per second.
printf '%s\n' "${targets[@]}" |
  xargs -P "$jobs" -I{} bash -c 'run_one "$@"' _ {} "$B" "$time_s"
