// `tessera simulate`, snapshot mode (the ATC'23 experiment on the queue's
// admission code), the trace loading the trace modes share (the timed
// modes' input too), and the dispatch to the timed and models modes.
// sim/replay.h does the work; this file prints.
#include "cli/simulate/simulate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/output.h"
#include "cli/simulate/svg_chart.h"
#include "common/strings.h"
#include "scheduler/admission.h"
#include "scheduler/policy.h"
#include "sim/replay.h"
#include "sim/timed_replay.h"

namespace tessera::cli {
namespace {

using sim::SnapshotRun;

// The snapshot replay's fields (sim::SnapshotOptions) its errors name, and
// their flags (WithFlagNames).
constexpr FieldFlag kSnapshotFlags[] = {{"seeds", "--seeds"},
                                        {"reserve_share", "--reserve"}};

// Skipped rows and unplaceable pods listed by name before "and N more".
constexpr size_t kListed = 5;

// The published policies in the paper's order, then tessera's.
const std::vector<std::string>& AllPolicies() {
  static const std::vector<std::string> all = {
      "random",   "dot-product", "gpu-clustering", "gpu-packing",
      "best-fit", "fgd",         "tessera"};
  return all;
}

void WarnList(const std::string& what, const std::vector<std::string>& items) {
  if (items.empty()) return;
  std::string text = std::to_string(items.size()) + " " + what + ":";
  for (size_t i = 0; i < items.size() && i < kListed; ++i) {
    text += "\n  " + items[i];
  }
  if (items.size() > kListed) {
    text += "\n  and " + std::to_string(items.size() - kListed) + " more";
  }
  Warn(text);
}

using Stat = MeanRange;
using sim::OverSeeds;

nlohmann::json StatJson(const Stat& s) {
  return {{"mean", s.mean}, {"min", s.min}, {"max", s.max}};
}

struct PolicyRuns {
  std::string policy;
  std::vector<SnapshotRun> runs;
  double seconds = 0;  // wall time of all its seeds
};

// The physical limit at level `l`, mean over seeds (the first policy's runs
// carry it; it depends on the seed only).
double LimitAt(const std::vector<PolicyRuns>& all, size_t l) {
  return sim::PhysicalLimitAt(all.front().runs, l);
}

// The runs' notes (a physical limit that fell back), each naming its seed:
// what the JSON lists and stderr says.
std::vector<std::string> SeedNotes(const std::vector<SnapshotRun>& runs) {
  std::vector<std::string> out;
  for (const SnapshotRun& r : runs) {
    for (const std::string& n : r.notes) {
      out.push_back("seed " + std::to_string(r.seed) + ": " + n);
    }
  }
  return out;
}

nlohmann::json SnapshotJson(const SimulateArgs& args, const TraceInput& in,
                            const std::vector<PolicyRuns>& all) {
  nlohmann::json results = nlohmann::json::array();
  nlohmann::json curves = nlohmann::json::object();
  nlohmann::json timing = nlohmann::json::object();
  for (const PolicyRuns& p : all) {
    const size_t levels = p.runs.front().levels.size();
    for (size_t l = 0; l < levels; ++l) {
      const auto at = [l](const SnapshotRun& r) { return r.levels[l]; };
      results.push_back(
          {{"policy", p.policy},
           {"arrived_pct", p.runs.front().levels[l].level_pct},
           {"alloc_ratio_pct", StatJson(OverSeeds(p.runs,
                                                  [&](const SnapshotRun& r) {
                                                    return at(r).alloc_pct;
                                                  }))},
           {"frag_ratio_pct",
            StatJson(OverSeeds(
                p.runs, [&](const SnapshotRun& r) { return at(r).frag_pct; }))},
           {"failed_pods", StatJson(OverSeeds(p.runs,
                                              [&](const SnapshotRun& r) {
                                                return double(
                                                    at(r).failed_pods);
                                              }))},
           {"failed_gpus",
            StatJson(OverSeeds(p.runs, [&](const SnapshotRun& r) {
              return at(r).failed_gpus;
            }))}});
    }
    nlohmann::json curve = nlohmann::json::array();
    const SnapshotRun& first = p.runs.front();
    for (size_t k = 0; k < first.curve.size(); ++k) {
      double sum = 0;
      size_t n = 0;
      for (const SnapshotRun& r : p.runs) {
        if (k < r.curve.size()) {
          sum += r.curve[k].second;
          ++n;
        }
      }
      curve.push_back({static_cast<int>(k + 1), sum / double(n)});
    }
    curves[p.policy] = curve;
    timing[p.policy] = {{"seconds", p.seconds},
                        {"seconds_per_seed",
                         StatJson(OverSeeds(p.runs, [](const SnapshotRun& r) {
                           return r.seconds;
                         }))}};
  }
  nlohmann::json limit = nlohmann::json::array();
  const std::vector<SnapshotRun>& bounded = all.front().runs;
  for (size_t l = 0; l < bounded.front().levels.size(); ++l) {
    limit.push_back({{"arrived_pct", bounded.front().levels[l].level_pct},
                     {"alloc_ratio_pct",
                      StatJson(OverSeeds(bounded, [l](const SnapshotRun& r) {
                        return r.levels[l].bound_pct;
                      }))}});
  }
  return {{"mode", "snapshot"},
          {"nodes_file", args.nodes},
          {"pods_file", args.pods},
          {"seeds", args.seeds},
          {"first_seed", args.first_seed},
          {"inflation_pct", args.inflation_pct},
          {"round_pods", args.round_pods},
          {"repack_rounds", args.round_pods > 1 && !args.no_repack},
          {"reserve_share", args.reserve_share},
          {"cluster",
           {{"nodes", in.topology.nodes.size()},
            {"gpus", in.topology.gpus.size()}}},
          {"pods", in.pods.size()},
          {"results", results},
          {"physical_limit", limit},
          {"notes", SeedNotes(bounded)},
          {"alloc_curves_pct", curves},
          {"timing", timing}};
}

void PrintSnapshot(const SimulateArgs& args, const TraceInput& in,
                   const std::vector<PolicyRuns>& all) {
  std::cout << "Cluster " << WithThousands(int64_t(in.topology.nodes.size()))
            << " nodes, " << WithThousands(int64_t(in.topology.gpus.size()))
            << " GPUs (" << args.nodes << "); "
            << WithThousands(int64_t(in.pods.size())) << " pods (" << args.pods
            << ")\n"
            << args.seeds << " seed" << (args.seeds == 1 ? "" : "s") << " from "
            << args.first_seed
            << ", pods arriving until their GPU requests reach "
            << Fixed(args.inflation_pct, 0) << "% of capacity"
            << (args.round_pods > 1
                    ? ", decided in rounds of " +
                          std::to_string(args.round_pods) +
                          (args.no_repack ? " (largest request first)"
                                          : " (largest request first, then "
                                            "each fraction again, smallest "
                                            "first)")
                    : std::string())
            << (args.reserve_share > 0
                    ? ", idle GPUs kept for whole-GPU pods (--reserve " +
                          Fixed(args.reserve_share, 4) + ")"
                    : std::string())
            << "\n\n"
            << "GPU allocation (% of capacity) when the arrived requests "
               "reach each level, mean over seeds:\n";
  const std::vector<sim::LevelPoint>& first = all.front().runs.front().levels;
  std::vector<std::string> header = {"policy"};
  for (const auto& l : first)
    header.push_back(std::to_string(l.level_pct) + "%");
  std::vector<bool> right(header.size(), true);
  right[0] = false;
  TextTable levels(header, right);
  for (const PolicyRuns& p : all) {
    std::vector<std::string> row = {p.policy};
    for (size_t l = 0; l < first.size(); ++l) {
      row.push_back(Fixed(
          OverSeeds(p.runs,
                    [l](const SnapshotRun& r) { return r.levels[l].alloc_pct; })
              .mean,
          2));
    }
    levels.AddRow(row);
  }
  std::vector<std::string> limit_row = {"physical limit"};
  for (size_t l = 0; l < first.size(); ++l) {
    limit_row.push_back(Fixed(LimitAt(all, l), 2));
  }
  levels.AddRow(limit_row);
  std::cout << levels.Render()
            << "  (physical limit: the most any placement could allocate, "
               "relaxing CPU, memory and nodes)\n\n";
  // The level people quote: 100%, or the middle one.
  size_t pick = first.size() / 2;
  for (size_t l = 0; l < first.size(); ++l) {
    if (first[l].level_pct == 100) pick = l;
  }
  std::cout << "At " << first[pick].level_pct << "% arrived:\n";
  TextTable detail({"policy", "alloc % mean", "min", "max", "to limit",
                    "frag % of idle", "failed pods", "failed GPUs", "s/seed"},
                   {false, true, true, true, true, true, true, true, true});
  const double limit = LimitAt(all, pick);
  for (const PolicyRuns& p : all) {
    const auto at = [pick](const SnapshotRun& r) { return r.levels[pick]; };
    const Stat alloc = OverSeeds(
        p.runs, [&](const SnapshotRun& r) { return at(r).alloc_pct; });
    detail.AddRow(
        {p.policy, Fixed(alloc.mean, 2), Fixed(alloc.min, 2),
         Fixed(alloc.max, 2), Fixed(limit - alloc.mean, 2),
         Fixed(OverSeeds(p.runs,
                         [&](const SnapshotRun& r) { return at(r).frag_pct; })
                   .mean,
               1),
         Fixed(OverSeeds(p.runs,
                         [&](const SnapshotRun& r) {
                           return double(at(r).failed_pods);
                         })
                   .mean,
               1),
         Fixed(
             OverSeeds(p.runs,
                       [&](const SnapshotRun& r) { return at(r).failed_gpus; })
                 .mean,
             1),
         Fixed(OverSeeds(p.runs, [](const SnapshotRun& r) { return r.seconds; })
                   .mean,
               3)});
  }
  std::cout << detail.Render();
}

Status PlotSnapshot(const SimulateArgs& args, const TraceInput& in,
                    const std::vector<PolicyRuns>& all) {
  LineChart chart;
  chart.title = "GPU allocation as requests arrive";
  chart.subtitle = std::to_string(in.topology.gpus.size()) + " GPUs, " +
                   std::to_string(in.pods.size()) + " pods (" + args.pods +
                   "); mean of " + std::to_string(args.seeds) +
                   " seeds, band: min to max";
  chart.x_label = "arrived GPU requests (% of capacity)";
  chart.y_label = "allocated GPUs (% of capacity)";
  chart.x_marks = {100};
  for (const PolicyRuns& p : all) {
    ChartSeries s;
    s.name = p.policy;
    const size_t points = p.runs.front().curve.size();
    for (size_t k = 0; k < points; ++k) {
      double sum = 0, lo = 1e300, hi = -1e300;
      size_t n = 0;
      for (const SnapshotRun& r : p.runs) {
        if (k >= r.curve.size()) continue;
        const double y = r.curve[k].second;
        sum += y;
        lo = std::min(lo, y);
        hi = std::max(hi, y);
        ++n;
      }
      const double x = static_cast<double>(k + 1);
      if (x < 50) continue;  // below half load every policy places all
      s.points.emplace_back(x, sum / double(n));
      if (p.runs.size() > 1) s.band.push_back({x, {lo, hi}});
    }
    chart.series.push_back(std::move(s));
  }
  ChartSeries limit;
  limit.name = "physical limit";
  limit.dashed = true;
  const std::vector<sim::LevelPoint>& levels = all.front().runs.front().levels;
  for (size_t l = 0; l < levels.size(); ++l) {
    limit.points.emplace_back(levels[l].level_pct, LimitAt(all, l));
  }
  chart.series.push_back(std::move(limit));
  return WriteSvg(args.plot, chart);
}

int RunSnapshotMode(const SimulateArgs& args) {
  if (args.seeds < 1) return ReportError(BadInput("--seeds: at least 1"));
  if (!(args.inflation_pct > 0 && args.inflation_pct <= 1000)) {
    return ReportError(BadInput("--inflation: a percentage in (0, 1000]"));
  }
  if (args.round_pods < 1) {
    return ReportError(BadInput("--round-pods: at least 1"));
  }
  auto in = LoadTraceInput(args);
  if (!in) return ReportError(in.error());
  auto policies = PolicyList(args.policy);
  if (!policies) return ReportError(policies.error());
  std::vector<PolicyRuns> all;
  Progress progress("simulate");
  for (const std::string& policy : *policies) {
    sim::SnapshotOptions options;
    options.scorer = policy;
    options.seeds = args.seeds;
    options.first_seed = args.first_seed;
    options.inflation_pct = args.inflation_pct;
    options.threads = args.threads;
    options.round_pods = args.round_pods;
    options.repack_rounds = !args.no_repack;
    options.reserve_share = args.reserve_share;
    options.bound = all.empty();
    PolicyRuns p{policy, {}, 0};
    const double start = MonotonicSeconds();
    auto runs =
        sim::RunSnapshot(in->topology, in->pods, options, [&](int done) {
          progress.Stage(policy + ": " + std::to_string(done) + "/" +
                         std::to_string(args.seeds) + " seeds");
        });
    if (!runs) {
      progress.Done();
      return ReportError(WithFlagNames(runs.error(), kSnapshotFlags));
    }
    p.seconds = MonotonicSeconds() - start;
    p.runs = std::move(runs).value();
    for (const std::string& n : SeedNotes(p.runs)) {
      std::cerr << "tessera simulate: note: " << n << "\n";
    }
    all.push_back(std::move(p));
  }
  progress.Done();
  if (args.json) {
    std::cout << SnapshotJson(args, *in, all).dump(2) << "\n";
  } else {
    PrintSnapshot(args, *in, all);
  }
  if (!args.plot.empty()) {
    if (Status s = PlotSnapshot(args, *in, all); !s.ok()) {
      return ReportError(s.error());
    }
    if (!args.json) std::cout << "\nChart written to " << args.plot << "\n";
  }
  return 0;
}

}  // namespace

Result<std::vector<std::string>> PolicyList(const std::string& policy) {
  if (policy == "all") return AllPolicies();
  std::vector<std::string> out;
  const std::vector<std::string> known = scheduler::ScorerNames();
  for (const std::string_view name : Split(policy, ',')) {
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      std::string list;
      for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
      return BadInput("--policy: unknown policy '" + std::string(name) +
                      "' (known: " + list + ", or all)");
    }
    out.emplace_back(name);
  }
  return out;
}

Result<TraceInput> LoadTraceInput(const SimulateArgs& args) {
  if (args.nodes.empty()) return BadInput("--nodes: a node list CSV is needed");
  if (args.pods.empty()) return BadInput("--pods: a pod list CSV is needed");
  sim::TraceOptions options;
  options.strict = args.strict;
  auto nodes = sim::LoadTraceNodes(args.nodes, options);
  if (!nodes) return nodes.error();
  auto pods = sim::LoadTracePods(args.pods, options);
  if (!pods) return pods.error();
  WarnList("rows skipped", nodes->skipped);
  WarnList("rows skipped", pods->skipped);
  TraceInput in;
  in.topology = sim::TraceTopology(nodes->rows, "trace", 0,
                                   /*cpu_nodes=*/true);
  if (in.topology.gpus.empty()) {
    return BadInput(args.nodes + ": no node has GPUs");
  }
  if (pods->rows.empty()) return BadInput(args.pods + ": no pods");
  std::vector<std::string> never;
  for (const sim::TracePod& p : pods->rows) {
    if (!scheduler::CouldEverFit(in.topology, "", sim::PodRequest(p))) {
      never.push_back(p.name + " (" + std::to_string(p.cpu_milli) +
                      " CPU milli, " + std::to_string(p.memory_mib) + " MiB, " +
                      std::to_string(p.num_gpu) + " x " +
                      std::to_string(p.gpu_milli) + " GPU milli)");
    }
  }
  if (!never.empty() && args.strict) {
    return BadInput(args.pods + ": pod " + never.front() + " fits no node of " +
                    args.nodes + " even when empty");
  }
  WarnList("pods fit no node even when it is empty (they arrive and fail)",
           never);
  in.pods = std::move(pods->rows);
  return in;
}

int RunSimulate(const SimulateArgs& args) {
  if (args.mode == "snapshot") return RunSnapshotMode(args);
  if (args.mode == "timed") return RunSimulateTimed(args);
  if (args.mode == "models") return RunSimulateModels(args);
  return ReportError(BadInput("--mode: unknown mode '" + args.mode +
                              "' (known: snapshot, timed, models)"));
}

Result<std::vector<std::string>> QueuePolicyList(const std::string& text) {
  const std::vector<std::string> known = scheduler::PolicyNames();
  if (text == "all") return known;
  std::vector<std::string> out;
  for (const std::string_view name : Split(text, ',')) {
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      std::string list;
      for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
      return BadInput("--queue-policy: unknown queue policy '" +
                      std::string(name) + "' (known: " + list + ", or all)");
    }
    out.emplace_back(name);
  }
  return out;
}

Result<TimedInput> LoadTimedInput(const SimulateArgs& args) {
  if (!(args.load > 0) || !std::isfinite(args.load)) {
    return BadInput("--load: a positive factor, got " + Fixed(args.load, 2));
  }
  if (!(args.cluster_fraction > 0 && args.cluster_fraction <= 1)) {
    return BadInput("--cluster-fraction: a fraction in (0, 1], got " +
                    std::to_string(args.cluster_fraction));
  }
  Result<TraceInput> in = LoadTraceInput(args);
  if (!in) return in.error();
  TimedInput out{std::move(*in), 0};
  out.all_nodes = out.trace.topology.nodes.size();
  if (args.cluster_fraction < 1) {
    out.trace.topology = sim::SampleCluster(
        out.trace.topology, args.cluster_fraction, args.first_seed);
  }
  if (auto timed = sim::MakeTimedPods(out.trace.pods); !timed) {
    return timed.error().WithContext(args.pods);
  }
  return out;
}

}  // namespace tessera::cli
