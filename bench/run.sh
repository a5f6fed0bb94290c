#!/usr/bin/env bash
# Runs the benchmarks. --smoke: a quick pass over the small cases (CI);
# otherwise every case with repetitions, reporting medians.
#   bash bench/run.sh [--smoke] [extra google-benchmark flags]
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/bench/graph/graph_bench ] || bash scripts/setup.sh build
if [ "${1:-}" = "--smoke" ]; then
  shift
  ./build/bench/graph/graph_bench --benchmark_filter='/1000$|resnet50' \
    --benchmark_min_time=0.01 "$@"
else
  ./build/bench/graph/graph_bench --benchmark_repetitions=5 \
    --benchmark_report_aggregates_only=true "$@"
fi
