#!/usr/bin/env bash
# Runs the benchmarks. --smoke: a quick pass over the small cases (CI);
# otherwise every case with repetitions, reporting medians.
#   bash bench/run.sh [--smoke] [extra google-benchmark flags]
set -euo pipefail
cd "$(dirname "$0")/.."
BENCHES=(build/bench/graph/graph_bench build/bench/estimator/estimator_bench
         build/bench/placer/placer_bench build/bench/split/split_bench)
# The queue service's benches are plain programs with their own flags.
DECISION=build/bench/scheduler/scheduler_decision_bench
SUBMIT=build/bench/scheduler/scheduler_submit_bench
REPLAY=build/bench/scheduler/scheduler_replay_bench
SLOW_LAUNCH=build/bench/service/service_slow_launch_bench
# Submissions and rounds on SQLite and on PostgreSQL (it starts a server).
STORE=build/bench/service/service_store_bench
SLOW=build/bench/server/server_slow_clients_bench
# The estimator against an H100 (data/gpu-truth): error table; the full run
# also refits the PyTorch runtime's constants and reports held-out errors.
TRUTH=build/bench/estimator/gpu_truth_bench
# The published placement benchmark (docs/placer_max_load.md,
# docs/placer_latency_benchmark.md): max-load DP, ILP and local search;
# single-sample latency.
MAXLOAD=build/bench/placer/max_load_bench
LATENCY=build/bench/placer/latency_bench
DNN=data/dnn-partitioning
for b in "${BENCHES[@]}" "$DECISION" "$SUBMIT" "$REPLAY" "$SLOW" "$SLOW_LAUNCH" "$STORE" "$TRUTH" "$MAXLOAD" "$LATENCY"; do
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
# Scheduling decisions on the openb cluster with 10,000 queued jobs, and
# durable submissions per second over HTTP (targets: p99 < 5 ms, >= 1,000/s).
# The trace replay: every policy on every openb trace against the paper's
# figures and the physical limit (targets: one seed of fgd under 1 s; six
# policies x 10 seeds x one trace under 30 s). The API's latency beside 200
# trickling connections (target: /healthz and a submit < 100 ms), and while
# every start hangs 8 s (target: p99 < 50 ms on every route). The same
# submissions and rounds on SQLite and on PostgreSQL, alone and as replicas
# (no target: docs/operations.md#high-availability has the numbers).
if $smoke; then
  "$DECISION" --queue 1000 --rounds 5
  "$SUBMIT" --clients 2 --seconds 1
  "$REPLAY" --seeds 1 --traces default --policies fgd,tessera
  "$SLOW" --slow 20 --samples 5 --seconds 1
  "$SLOW_LAUNCH" --launch-s 1 --seconds 2
  "$STORE" --jobs 100 --repeat 1
  "$TRUTH" | tail -14
  "$MAXLOAD" --budget 5 $DNN/throughput-inputs/LayerGraphs/bert24_inference.json \
    $DNN/throughput-inputs/LayerGraphs/inceptionv3_inference.json
  "$LATENCY" --ilp-time-limit 2 $DNN/latency-inputs/LayerGraphs/bert24_inference.json
else
  "$DECISION"
  "$SUBMIT" --clients 8 --seconds 5
  "$REPLAY" --seeds 10
  "$SLOW"
  "$SLOW_LAUNCH" --launch-s 8 --seconds 20
  "$STORE"
  "$TRUTH"
  "$TRUTH" --holdout
  "$MAXLOAD"
  "$LATENCY"
fi
