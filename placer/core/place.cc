// The placement driver: runs an algorithm against memory budgets, verifies
// its plan in the simulator and tightens the budgets of devices that went
// over; `auto` runs several algorithms and keeps the fastest plan.

#include "placer/core/place.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

#include "common/strings.h"
#include "placer/baechi/reductions_internal.h"
#include "placer/core/algorithms_internal.h"
#include "placer/core/ledger_internal.h"

namespace tessera::placer {
namespace {

constexpr int kMaxBudgetRetries = 4;
// Auto runs the ILP with at most this time limit (seconds), so the default
// command stays interactive.
constexpr double kAutoIlpTimeLimitSeconds = 2.0;

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

Result<AlgoOutput> RunAlgorithm(Algorithm a, const Problem& p, const Cluster& c,
                                const Budget& budget, const PlaceOptions& o) {
  switch (a) {
    case Algorithm::kSingle:
      return PlaceSingle(p, c, budget, o);
    case Algorithm::kMTopo:
      return PlaceMTopo(p, c, budget, o);
    case Algorithm::kMEtf:
      return PlaceMEtf(p, c, budget, o);
    case Algorithm::kMSct:
      return PlaceMSct(p, c, budget, o);
    case Algorithm::kPipeline:
      return PlacePipeline(p, c, budget, o);
    case Algorithm::kIlp:
      return PlaceIlp(p, c, budget, o);
    case Algorithm::kAuto:
      break;
  }
  return Internal("auto is not a concrete algorithm");
}

// One concrete algorithm with the verify-and-tighten loop.
Result<Plan> PlaceOne(const Problem& p, const Cluster& c, Algorithm a,
                      const PlaceOptions& o) {
  const auto start = Clock::now();
  Budget budget(c.size());
  for (size_t d = 0; d < c.size(); ++d) budget[d] = c.devices[d].memory_usable;
  for (int attempt = 0; attempt <= kMaxBudgetRetries; ++attempt) {
    auto out = RunAlgorithm(a, p, c, budget, o);
    if (!out) {
      if (out.error().code != ErrorCode::kInfeasible) return out.error();
      Error e = InfeasibleError(p, c);
      e.message = std::string(AlgorithmName(a)) + " found no placement (" +
                  out.error().message + "); " + e.message;
      return e;
    }
    if (out->placement.device.size() != p.num_ops()) {
      return Internal(std::string(AlgorithmName(a)) + " placed " +
                      std::to_string(out->placement.device.size()) + " of " +
                      std::to_string(p.num_ops()) + " ops");
    }
    SimOptions so;
    so.microbatches = out->microbatches;
    SimResult sim = Simulate(p, c, out->placement, so);
    if (sim.fits) {
      Plan plan;
      plan.algorithm = a;
      plan.placement = std::move(out->placement);
      plan.sim = std::move(sim);
      plan.microbatches = out->microbatches;
      plan.notes = std::move(out->notes);
      plan.ilp_objective_s = out->ilp_objective_s;
      plan.ilp_gap = out->ilp_gap;
      plan.ilp_status = out->ilp_status;
      if (attempt > 0) {
        plan.notes.push_back("memory budgets tightened " +
                             std::to_string(attempt) +
                             " time(s) after simulation");
      }
      plan.lower_bound_s = LowerBound(p, c, plan.microbatches);
      plan.placement_s = SecondsSince(start);
      return plan;
    }
    // Shrink the budget of every device that went over by its overflow
    // plus 1% of its memory, and plan again.
    for (size_t d = 0; d < c.size(); ++d) {
      const int64_t over =
          sim.devices[d].peak_bytes - c.devices[d].memory_usable;
      if (over > 0) {
        budget[d] -= over + c.devices[d].memory_usable / 100;
      }
    }
  }
  Error e = InfeasibleError(p, c);
  e.message = std::string(AlgorithmName(a)) +
              " kept exceeding a device's memory in simulation; " + e.message;
  return e;
}

Result<Plan> PlaceAuto(const Problem& p, const Cluster& c,
                       const PlaceOptions& o) {
  const auto start = Clock::now();
  std::vector<Algorithm> candidates = {Algorithm::kSingle, Algorithm::kMTopo,
                                       Algorithm::kMEtf, Algorithm::kMSct,
                                       Algorithm::kPipeline};
  PlaceOptions ilp_options = o;
  {
    // The graph the ILP would start from (it always co-places).
    const Grouping g = CoPlace(p, IdentityGrouping(p));
    if (static_cast<int>(g.num_groups) <= o.auto_ilp_max_groups) {
      candidates.push_back(Algorithm::kIlp);
      ilp_options.ilp_max_groups = o.auto_ilp_max_groups;
      ilp_options.ilp_time_limit_s =
          std::min(o.ilp_time_limit_s, kAutoIlpTimeLimitSeconds);
    }
  }
  std::optional<Plan> best;
  std::string tried;
  std::vector<std::string> failures;  // why a candidate failed, for notes
  for (Algorithm a : candidates) {
    auto plan = PlaceOne(p, c, a, a == Algorithm::kIlp ? ilp_options : o);
    if (!tried.empty()) tried += ", ";
    tried += std::string(AlgorithmName(a)) + " ";
    if (!plan) {
      // One candidate failing (the ILP finding no incumbent within its time
      // limit, say) must not sink the others.
      const bool infeasible = plan.error().code == ErrorCode::kInfeasible;
      tried += infeasible ? "infeasible" : "failed";
      if (!infeasible) {
        failures.push_back(std::string(AlgorithmName(a)) +
                           " failed: " + plan.error().message);
      }
      continue;
    }
    tried += FormatMs(plan->sim.step_s) + " ms";
    if (!best || plan->sim.step_s < best->sim.step_s) best = std::move(*plan);
  }
  if (!best) return InfeasibleError(p, c);
  best->notes.push_back("auto chose " +
                        std::string(AlgorithmName(best->algorithm)) +
                        " (simulated: " + tried + ")");
  best->notes.insert(best->notes.end(), failures.begin(), failures.end());
  best->placement_s = SecondsSince(start);
  return std::move(*best);
}

}  // namespace

std::string_view AlgorithmName(Algorithm a) {
  switch (a) {
    case Algorithm::kSingle:
      return "single";
    case Algorithm::kMTopo:
      return "m-topo";
    case Algorithm::kMEtf:
      return "m-etf";
    case Algorithm::kMSct:
      return "m-sct";
    case Algorithm::kPipeline:
      return "pipeline";
    case Algorithm::kIlp:
      return "ilp";
    case Algorithm::kAuto:
      return "auto";
  }
  return "?";
}

std::vector<Algorithm> ConcreteAlgorithms() {
  return {Algorithm::kSingle, Algorithm::kMTopo,    Algorithm::kMEtf,
          Algorithm::kMSct,   Algorithm::kPipeline, Algorithm::kIlp};
}

Result<Algorithm> ParseAlgorithm(std::string_view text) {
  std::vector<Algorithm> all = ConcreteAlgorithms();
  all.push_back(Algorithm::kAuto);
  std::string names;
  for (Algorithm a : all) {
    if (AlgorithmName(a) == text) return a;
    if (!names.empty()) names += ", ";
    names += AlgorithmName(a);
  }
  return BadInput("unknown algorithm '" + std::string(text) +
                  "' (known: " + names + ")");
}

Error InfeasibleError(const Problem& p, const Cluster& c) {
  // What tessera counts for the whole model on one device (the planning
  // ledger's conservative count), and the largest single op.
  const int64_t need = WholeModelBytes(p);
  int64_t usable = 0, largest_device = 0;
  std::string largest_device_id;
  for (const ClusterDevice& d : c.devices) {
    usable += d.memory_usable;
    if (d.memory_usable > largest_device) {
      largest_device = d.memory_usable;
      largest_device_id = d.id;
    }
  }
  OpId largest_op = kNoOp;
  int64_t largest_op_bytes = 0;
  for (OpId op = 0; op < p.num_ops(); ++op) {
    const int64_t b = StandaloneBytes(p, op);
    if (largest_op == kNoOp || b > largest_op_bytes) {
      largest_op = op;
      largest_op_bytes = b;
    }
  }
  std::string op_text =
      largest_op == kNoOp
          ? std::string("none")
          : "'" + p.names[largest_op] + "' (" + p.op_types[largest_op] +
                ") needs " + HumanBytes(largest_op_bytes) + " on one device";
  std::string msg;
  if (largest_op_bytes > largest_device) {
    msg = "the model does not fit: the largest operator " + op_text +
          ", but the largest device (" + largest_device_id + ") has " +
          HumanBytes(largest_device) +
          " usable: " + HumanBytes(largest_op_bytes - largest_device) + " (" +
          WithThousands(largest_op_bytes - largest_device) + " bytes) missing";
  } else if (need > usable) {
    msg = "the model does not fit: it needs " + HumanBytes(need) +
          " as tessera counts it, the cluster has " + HumanBytes(usable) +
          " usable: " + HumanBytes(need - usable) + " (" +
          WithThousands(need - usable) +
          " bytes) missing; the largest operator " + op_text;
  } else {
    msg = "no split of the model fits: it needs " + HumanBytes(need) +
          " as tessera counts it and the cluster has " + HumanBytes(usable) +
          " usable in total, but not in pieces the graph can be cut into "
          "(largest device " +
          largest_device_id + ", " + HumanBytes(largest_device) +
          "); the largest operator " + op_text;
  }
  return Infeasible(msg);
}

Result<Plan> Place(const Problem& problem, const Cluster& cluster,
                   Algorithm algorithm, const PlaceOptions& options) {
  if (cluster.size() == 0) return BadInput("the cluster has no devices");
  if (cluster.size() >= kUnplaced) {
    return BadInput("the cluster has " + std::to_string(cluster.size()) +
                    " devices; tessera places on at most 65534");
  }
  if (problem.device_profile.size() != cluster.size()) {
    return Internal("the problem was built for another cluster");
  }
  if (options.microbatches < 1) {
    return BadInput("microbatches must be at least 1, not " +
                    std::to_string(options.microbatches));
  }
  if (algorithm == Algorithm::kAuto)
    return PlaceAuto(problem, cluster, options);
  return PlaceOne(problem, cluster, algorithm, options);
}

}  // namespace tessera::placer
