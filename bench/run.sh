#!/usr/bin/env bash
# Runs the benchmarks. --smoke: a quick pass over the small cases (CI);
# otherwise every case with repetitions, reporting medians.
#   bash bench/run.sh [--smoke] [extra google-benchmark flags]
set -euo pipefail
cd "$(dirname "$0")/.."
BENCHES=(build/bench/graph/graph_bench build/bench/estimator/estimator_bench
         build/bench/placer/placer_bench build/bench/split/split_bench)
for b in "${BENCHES[@]}"; do
  [ -x "$b" ] || bash scripts/setup.sh build
done
smoke=false
if [ "${1:-}" = "--smoke" ]; then
  smoke=true
  shift
fi
for b in "${BENCHES[@]}"; do
  if $smoke; then
    "$b" --benchmark_filter='/1000$|/1000/4$|resnet50' \
      --benchmark_min_time=0.01 "$@"
  else
    "$b" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true "$@"
  fi
done
