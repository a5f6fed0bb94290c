// Trace replay (snapshot mode) on every openb trace: the allocation ratio of
// each scorer at arrived = 100% of capacity, mean/min/max over seeds, next
// to the published figures of Weng et al. (ATC'23, FGD_RESULTS.md), and the
// time each run takes. Issue targets: one seed of the default trace at 130%
// with fgd under 1 s; six policies x 10 seeds x one trace under 30 s.
//
//   scheduler_replay_bench [--openb DIR] [--seeds N] [--traces a,b,...]
//                          [--policies a,b,...] [--level PCT] [--threads N]
//                          [--speed 0|1] [--round-pods N] [--repack 0|1]
//                          [--reserve SHARE]
//
// --round-pods N decides N consecutive arrivals together (SnapshotOptions::
// round_pods; 1, the default, one at a time as the paper); --repack 0
// places a round's pods largest first only, without the second pass
// (SnapshotOptions::repack_rounds, on by default). --reserve SHARE keeps
// idle GPUs for whole-GPU pods (SnapshotOptions::reserve_share; 0, the
// default, keeps none).
// --speed 1 (the default) first times the two targets on the default
// trace: one fgd seed on one thread (median of 5), and the six published
// policies x 10 seeds on every core (wall time).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sim/replay.h"
#include "sim/trace.h"
#include "tests/testlib/repo_paths.h"

namespace {

using namespace tessera::sim;  // NOLINT(google-build-using-namespace)

std::vector<std::string> List(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
}

// FGD_RESULTS.md: published means at arrived = 100% (10 seeds).
const std::map<std::string, std::map<std::string, double>>& Published() {
  static const std::map<std::string, std::map<std::string, double>> p = {
      {"default",
       {{"random", 86.30},
        {"dot-product", 90.62},
        {"gpu-clustering", 91.65},
        {"gpu-packing", 91.78},
        {"best-fit", 92.86},
        {"fgd", 95.23}}},
      {"gpushare40",
       {{"random", 84.86},
        {"dot-product", 89.30},
        {"gpu-clustering", 89.76},
        {"gpu-packing", 89.77},
        {"best-fit", 91.44},
        {"fgd", 93.96}}},
      {"gpushare60",
       {{"random", 82.81},
        {"dot-product", 86.82},
        {"gpu-clustering", 86.90},
        {"gpu-packing", 87.15},
        {"best-fit", 89.06},
        {"fgd", 91.25}}},
      {"gpushare80",
       {{"random", 80.62},
        {"dot-product", 84.14},
        {"gpu-clustering", 84.50},
        {"gpu-packing", 84.65},
        {"best-fit", 86.66},
        {"fgd", 89.08}}},
      {"gpushare100",
       {{"random", 78.90},
        {"dot-product", 81.98},
        {"gpu-clustering", 82.22},
        {"gpu-packing", 82.13},
        {"best-fit", 84.62},
        {"fgd", 86.64}}},
      {"multigpu20",
       {{"random", 86.92},
        {"dot-product", 91.85},
        {"gpu-clustering", 93.34},
        {"gpu-packing", 93.50},
        {"best-fit", 93.73},
        {"fgd", 95.53}}},
      {"multigpu30",
       {{"random", 86.63},
        {"dot-product", 93.11},
        {"gpu-clustering", 94.55},
        {"gpu-packing", 94.70},
        {"best-fit", 94.57},
        {"fgd", 96.36}}},
      {"multigpu40",
       {{"random", 85.38},
        {"dot-product", 94.04},
        {"gpu-clustering", 95.35},
        {"gpu-packing", 95.59},
        {"best-fit", 95.10},
        {"fgd", 96.91}}},
      {"multigpu50",
       {{"random", 81.28},
        {"dot-product", 94.73},
        {"gpu-clustering", 95.69},
        {"gpu-packing", 96.06},
        {"best-fit", 95.62},
        {"fgd", 97.09}}},
  };
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = tessera::repo::OpenbDir();
  int seeds = 10, threads = 0, level = 100, speed = 1, round_pods = 1;
  bool repack = true;
  double reserve = 0;
  std::vector<std::string> traces = {
      "default",     "gpushare20", "gpushare40", "gpushare60", "gpushare80",
      "gpushare100", "multigpu20", "multigpu30", "multigpu40", "multigpu50"};
  std::vector<std::string> policies = {
      "random",   "dot-product", "gpu-clustering", "gpu-packing",
      "best-fit", "fgd",         "tessera"};
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--openb") dir = v;
    if (a == "--seeds") seeds = std::stoi(v);
    if (a == "--threads") threads = std::stoi(v);
    if (a == "--level") level = std::stoi(v);
    if (a == "--traces") traces = List(v);
    if (a == "--policies") policies = List(v);
    if (a == "--speed") speed = std::stoi(v);
    if (a == "--round-pods") round_pods = std::stoi(v);
    if (a == "--repack") repack = std::stoi(v) != 0;
    if (a == "--reserve") reserve = std::stod(v);
  }
  auto nodes = LoadTraceNodes(dir + "/openb_node_list_gpu_node.csv");
  if (!nodes) {
    std::cerr << nodes.error().message << "\n";
    return 2;
  }
  const Topology topology = TraceTopology(nodes->rows, "openb", 0);
  if (speed != 0) {
    auto pods = LoadTracePods(dir + "/openb_pod_list_default.csv");
    if (!pods) {
      std::cerr << pods.error().message << "\n";
      return 2;
    }
    std::vector<double> one;
    for (int rep = 0; rep < 5; ++rep) {
      SnapshotOptions o;
      o.scorer = "fgd";
      o.seeds = 1;
      o.threads = 1;
      const auto t0 = std::chrono::steady_clock::now();
      (void)RunSnapshot(topology, pods->rows, o);
      one.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
              .count());
    }
    std::sort(one.begin(), one.end());
    const auto t0 = std::chrono::steady_clock::now();
    for (const char* policy : {"random", "dot-product", "gpu-clustering",
                               "gpu-packing", "best-fit", "fgd"}) {
      SnapshotOptions o;
      o.scorer = policy;
      o.seeds = 10;
      o.threads = threads;
      (void)RunSnapshot(topology, pods->rows, o);
    }
    const double six =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
    std::printf(
        "speed, default trace to 130%%: one fgd seed on one thread "
        "%.3f s (median of 5; target < 1 s); six policies x 10 "
        "seeds %.1f s on %u cores (target < 30 s)\n\n",
        one[2], six, std::thread::hardware_concurrency());
  }
  std::printf(
      "openb: %zu nodes, %zu GPUs; %d seeds; rounds of %d pods%s; "
      "reserve %g; allocation %% at arrived = %d%%\n\n",
      topology.nodes.size(), topology.gpus.size(), seeds, round_pods,
      round_pods > 1 && !repack ? " (largest first only)" : "", reserve, level);
  std::printf("%-12s %-15s %8s %8s %8s %9s %7s %9s %9s %8s\n", "trace",
              "policy", "mean", "min", "max", "published", "gap", "frag %",
              "s/seed", "limit");
  for (const std::string& trace : traces) {
    auto pods = LoadTracePods(dir + "/openb_pod_list_" + trace + ".csv");
    if (!pods) {
      std::cerr << pods.error().message << "\n";
      return 2;
    }
    bool first = true;
    for (const std::string& policy : policies) {
      SnapshotOptions options;
      options.bound = first;
      options.scorer = policy;
      options.seeds = seeds;
      options.threads = threads;
      options.levels_pct = {level};
      options.round_pods = round_pods;
      options.repack_rounds = repack;
      options.reserve_share = reserve;
      const auto t0 = std::chrono::steady_clock::now();
      auto runs = RunSnapshot(topology, pods->rows, options);
      const double wall =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
              .count();
      if (!runs) {
        std::cerr << runs.error().message << "\n";
        return 2;
      }
      double sum = 0, lo = 1e9, hi = -1e9, frag = 0, secs = 0, limit = 0;
      for (const SnapshotRun& r : *runs) {
        const double a = r.levels[0].alloc_pct;
        sum += a;
        lo = std::min(lo, a);
        hi = std::max(hi, a);
        frag += r.levels[0].frag_pct;
        secs += r.seconds;
        limit += r.levels[0].bound_pct;
      }
      std::string limit_text = "";
      if (first) {
        char buf[16];
        std::snprintf(buf, sizeof buf, "%.2f", limit / seeds);
        limit_text = buf;
      }
      first = false;
      const double mean = sum / seeds;
      std::string published = "-", gap = "-";
      const auto& p = Published();
      if (level == 100 && p.count(trace) && p.at(trace).count(policy)) {
        const double ref = p.at(trace).at(policy);
        published = std::to_string(ref).substr(0, 5);
        char buf[16];
        std::snprintf(buf, sizeof buf, "%+.2f", mean - ref);
        gap = buf;
      }
      std::printf("%-12s %-15s %8.2f %8.2f %8.2f %9s %7s %9.1f %9.3f %8s\n",
                  trace.c_str(), policy.c_str(), mean, lo, hi,
                  published.c_str(), gap.c_str(), frag / seeds, secs / seeds,
                  limit_text.c_str());
      std::fflush(stdout);
      (void)wall;
    }
  }
  return 0;
}
