// Scheduling-decision latency on Alibaba's openb GPU-sharing cluster
// (data/openb: 1,213 GPU nodes, 6,212 GPUs) with 10,000 queued
// jobs drawn from its pod trace. Issue target: p99 under 5 ms.
//
//   scheduler_decision_bench [--openb DIR] [--queue N] [--rounds N]
//
// Fills the cluster with the trace's GPU pods in order (best-fit) until a
// pod no longer fits, queues N more, then measures
//   - FindAllocation for one job (each scorer): what admitting one job costs;
//   - one policy round (each policy) after a running job exits: the policy
//     over the whole queue, starting whatever now fits.
// Prints p50/p99/max per case (milliseconds).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "scheduler/admission.h"
#include "scheduler/policy.h"
#include "sim/trace.h"
#include "tests/testlib/repo_paths.h"

namespace tessera::scheduler {

// The openb trace's loaders (sim/).
using sim::LoadTraceNodes;
using sim::LoadTracePods;
using sim::PodDemand;
using sim::TracePod;
using sim::TraceTopology;

namespace {

// The trace's GPU nodes (32 GiB per GPU: the trace gives no GPU memory and
// its pods ask none) and its GPU pods' requests.
Topology OpenbTopology(const std::string& dir) {
  auto nodes = LoadTraceNodes(dir + "/openb_node_list_gpu_node.csv");
  if (!nodes) {
    std::cerr << "scheduler_decision_bench: " << nodes.error().message << "\n";
    std::exit(2);
  }
  return TraceTopology(nodes->rows, "openb", 32 * 1024);
}

std::vector<Resources> OpenbPods(const std::string& dir) {
  auto pods = LoadTracePods(dir + "/openb_pod_list_default.csv");
  if (!pods) {
    std::cerr << "scheduler_decision_bench: " << pods.error().message << "\n";
    std::exit(2);
  }
  std::vector<Resources> demands;
  for (const TracePod& p : pods->rows) {
    if (p.wants_gpu()) demands.push_back(PodDemand(p));
  }
  return demands;
}

struct Stats {
  std::vector<double> ms;
  void Print(const std::string& name) {
    std::sort(ms.begin(), ms.end());
    const auto at = [&](double q) {
      return ms[std::min(ms.size() - 1, static_cast<size_t>(q * ms.size()))];
    };
    std::printf("  %-34s n=%-6zu p50 %8.3f ms  p99 %8.3f ms  max %8.3f ms\n",
                name.c_str(), ms.size(), at(0.5), at(0.99), ms.back());
  }
};

double Since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - t0)
      .count();
}

}  // namespace
}  // namespace tessera::scheduler

int main(int argc, char** argv) {
  using namespace tessera::scheduler;
  std::string dir = tessera::repo::OpenbDir();
  size_t queue_size = 10000;
  int rounds = 50;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--openb") dir = argv[i + 1];
    if (a == "--queue") queue_size = std::stoul(argv[i + 1]);
    if (a == "--rounds") rounds = std::stoi(argv[i + 1]);
  }
  const Topology topology = OpenbTopology(dir);
  const std::vector<Resources> pods = OpenbPods(dir);
  std::printf("openb: %zu nodes, %zu GPUs, %zu GPU pods; %zu queued jobs\n",
              topology.nodes.size(), topology.gpus.size(), pods.size(),
              queue_size);

  auto best_fit = MakeScorer("best-fit");
  ClusterState state(topology);
  std::vector<RunningJob> running;
  JobId next = 1;
  size_t p = 0;
  for (; p < pods.size(); ++p) {
    auto a = FindAllocation(state, "openb", pods[p], **best_fit);
    if (!a) break;
    (void)state.Reserve(next, *a);
    running.push_back(
        {next, "u" + std::to_string(next % 50), "", 0, false, 0, 3600});
    ++next;
  }
  int64_t milli = 0;
  for (size_t g = 0; g < topology.gpus.size(); ++g) {
    milli += state.reserved_milli(static_cast<int>(g));
  }
  std::printf("filled with %zu pods: %.1f%% of GPU compute reserved\n", p,
              100.0 * static_cast<double>(milli) /
                  (1000.0 * static_cast<double>(topology.gpus.size())));

  std::vector<QueuedJob> queue;
  std::mt19937 rng(1);
  for (size_t i = 0; i < queue_size; ++i) {
    QueuedJob q;
    q.id = next++;
    q.user = "u" + std::to_string(rng() % 50);
    q.priority = static_cast<int>(rng() % 3);
    q.submitted_at = static_cast<double>(i);
    q.time_limit_s = static_cast<double>(60 + rng() % 7200);
    q.demand = pods[(p + i) % pods.size()];
    queue.push_back(q);
  }

  std::printf("\nFindAllocation, one job (every queued job once):\n");
  for (const std::string& name : ScorerNames()) {
    auto scorer = MakeScorer(name);
    Stats s;
    for (const QueuedJob& q : queue) {
      const auto t0 = std::chrono::steady_clock::now();
      auto a = FindAllocation(state, "openb", q.demand, **scorer);
      s.ms.push_back(Since(t0));
      (void)a;
    }
    s.Print(name);
  }

  std::printf("\nOne policy round after a job exits (%d rounds):\n", rounds);
  const Allocator allocate = [&](const ClusterState& st, const QueuedJob& q) {
    return FindAllocation(st, "openb", q.demand, **best_fit);
  };
  for (const std::string& name : PolicyNames()) {
    PolicyConfig config;
    config.name = name;
    config.preemption = false;
    auto policy = MakePolicy(config);
    ClusterState st = state;
    std::vector<RunningJob> run = running;
    std::vector<QueuedJob> waiting = queue;
    Stats s;
    for (int r = 0; r < rounds && !run.empty(); ++r) {
      const size_t victim = rng() % run.size();
      st.Release(run[victim].id);
      run.erase(run.begin() + static_cast<std::ptrdiff_t>(victim));
      const auto t0 = std::chrono::steady_clock::now();
      const Decision d =
          (*policy)->Schedule(waiting, run, st, allocate, 10000.0 + r);
      s.ms.push_back(Since(t0));
      for (const auto& [id, a] : d.start) {
        if (!st.Fits(a)) continue;
        (void)st.Reserve(id, a);
        run.push_back({id, "u", "", 0, false, 10000.0 + r, 3600});
        waiting.erase(
            std::remove_if(waiting.begin(), waiting.end(),
                           [&](const QueuedJob& q) { return q.id == id; }),
            waiting.end());
      }
    }
    s.Print(name);
    if (!st.CheckInvariants().empty()) {
      std::printf("  invariants violated: %s\n", st.CheckInvariants().c_str());
      return 1;
    }
  }
  return 0;
}
