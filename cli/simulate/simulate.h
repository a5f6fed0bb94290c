#ifndef TESSERA_CLI_SIMULATE_SIMULATE_H_
#define TESSERA_CLI_SIMULATE_SIMULATE_H_

// `tessera simulate`: replays a cluster trace (or a stream of model jobs) on
// the queue's own admission and policy code and reports what each
// placement policy does to the cluster (docs/simulate.md).

#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "sim/trace.h"

namespace tessera::cli {

struct SimulateArgs {
  // snapshot (the ATC'23 experiment), timed (arrivals and departures in
  // time) or models (model jobs from the zoo, Poisson arrivals).
  std::string mode = "snapshot";
  std::string nodes;  // --nodes: openb node list CSV (snapshot, timed)
  std::string pods;   // --pods: openb pod list CSV (snapshot, timed)
  // --policy: a scorer (ScorerNames()) or "all".
  std::string policy = "tessera";
  int seeds = 10;
  unsigned long long first_seed = 42;
  double inflation_pct = 130;  // snapshot: arrivals stop here
  int threads = 0;             // 0: one per core
  int round_pods = 1;          // snapshot: pods decided together
  bool no_repack = false;      // snapshot: rounds largest first only
  double reserve_share = 0;    // snapshot: idle GPUs kept for whole pods
  bool strict = false;         // a bad CSV row or an unplaceable pod fails
  bool json = false;
  std::string plot;  // --plot FILE.svg

  // timed: the queue policy (fifo, backfill, priority, fair-share, or all).
  std::string queue_policy = "fifo";
  // timed: arrivals this many times faster (--load), and the replay on a
  // seeded sample of this fraction of the nodes, stratified by GPU model
  // (--cluster-fraction). The openb pod lists fill about 1% of their
  // cluster in time: these make queues form (docs/simulate_timed.md).
  double load = 1;
  double cluster_fraction = 1;
  // timed: this % of the GPU pods declare a model (--model-pods), admitted
  // under --admission: fixed (their request), tessera (split-or-wait's
  // decision) or both (the default), side by side. The law is --sharing /
  // --interference's, as in models mode.
  int model_pods = 0;
  std::optional<std::string> admission;
  // timed: the pods split into this many teams by FNV-1a 64 of their name
  // (--teams; fair-share's accounts), and the queue tree (--quotas): none,
  // equal (each team a top-level queue guaranteed 1/N of the cluster's GPU
  // milli and memory, borrowing and reclaim; docs/quotas.md), gpu-hours
  // (guarantees in proportion to each team's GPU-hours in the trace), both
  // (none and equal) or a comma list of these.
  int teams = 0;
  std::string quotas = "none";
  // timed: this % of the multi-GPU pods (by name) are elastic jobs of
  // --elastic-min to their GPUs, progress speedup(k) = 1 + (k-1) x
  // --elastic-efficiency; the same arrivals gang-only and elastic side by
  // side (--elastic; docs/simulate_timed.md, "Elastic jobs").
  int elastic = 0;
  int elastic_min = 1;
  double elastic_efficiency = 1;
  // timed: how pods are split into teams (--team-split): hash (FNV-1a 64
  // of the name, the same mix per team) or skewed (fractional pods to the
  // first half of the teams, whole-GPU pods to the rest; docs/quotas.md).
  std::string team_split = "hash";
  // models, with --elastic: a sweep's workers MIN:MAX (--elastic-workers;
  // docs/simulate_models.md, "Elastic jobs").
  std::string elastic_workers = "1:4";

  // models: the serve configuration whose cluster the jobs run on.
  std::string config = "examples/serve.yaml";
  std::vector<std::string> models;  // ONNX files (default: models/zoo/*)
  int jobs = 200;                   // model jobs generated
  double arrival_per_hour = 30;     // Poisson rate
  std::string duration = "lognormal:7.0,1.0";  // seconds: DIST:PARAMS
  std::vector<int> batches = {8, 16, 32};
  // How co-located jobs slow each other: the law measured on an H100
  // under --sharing (timeslice, the default, or mps), unless
  // --interference A (or a sweep of A) replaces it with the linear law
  // time x (1 + A (k - 1)).
  std::optional<std::string> sharing;
  std::optional<double> interference;
  std::vector<double> interference_sweep;  // each value, side by side
  std::string pool;  // models: the config's pool the jobs go to ("": first)
};

// Runs the command; returns the exit code (0, 2 bad input, 1 internal).
int RunSimulate(const SimulateArgs& args);

// Shared by the trace modes (snapshot, timed) -----------------------------

// --nodes and --pods read: the cluster (GPU nodes, and CPU-only nodes when
// the file has them) and the pods. Skipped rows are printed as warnings
// (a count and the first few) unless args.strict, which fails on the first.
struct TraceInput {
  scheduler::Topology topology;
  std::vector<sim::TracePod> pods;
};
Result<TraceInput> LoadTraceInput(const SimulateArgs& args);

// The scorers --policy names: one name, a comma list, or "all" (the six
// published policies and tessera). kBadInput naming the unknown one.
Result<std::vector<std::string>> PolicyList(const std::string& policy);

// The timed modes' input (plain and --elastic; cli/simulate/simulate.cc):
// --load and --cluster-fraction checked, the trace read, the cluster
// sampled to --cluster-fraction (all_nodes: its nodes before), and the pods'
// times checked (MakeTimedPods). kBadInput naming the flag or the file.
struct TimedInput {
  TraceInput trace;
  size_t all_nodes = 0;
};
Result<TimedInput> LoadTimedInput(const SimulateArgs& args);
// --queue-policy: one name, a comma list, or all; kBadInput naming an
// unknown one.
Result<std::vector<std::string>> QueuePolicyList(const std::string& text);

// The timed and models modes (cli/simulate/simulate_timed.cc,
// simulate_models.cc).
int RunSimulateTimed(const SimulateArgs& args);
int RunSimulateModels(const SimulateArgs& args);
// timed with --elastic (cli/simulate/simulate_elastic.cc).
int RunSimulateTimedElastic(const SimulateArgs& args);

}  // namespace tessera::cli

#endif  // TESSERA_CLI_SIMULATE_SIMULATE_H_
