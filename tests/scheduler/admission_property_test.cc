// Property test: random job mixes on random small clusters, every policy
// and scorer, many rounds with random completions. After every round the
// cluster's invariants hold, no job runs twice, starts fit together, and
// fifo and priority start only in their order.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "scheduler/admission.h"
#include "scheduler/policy.h"
#include "tests/testlib/test_topology.h"

namespace tessera::scheduler {
namespace {

using testing::kGiB;  // 1024 MiB
constexpr int kMixes = 200;
constexpr int kRounds = 40;

// 1-3 nodes of 1-4 GPUs of 16-80 GiB; one node in three is drained now
// and then.
Topology RandomTopology(std::mt19937& rng) {
  Topology t;
  t.pools = {"default"};
  const int nodes = 1 + static_cast<int>(rng() % 3);
  for (int n = 0; n < nodes; ++n) {
    NodeInfo node;
    node.name = "node" + std::to_string(n);
    node.pool = "default";
    node.cpu_milli = 8000 + static_cast<int64_t>(rng() % 4) * 8000;
    node.memory_mib = (32 + static_cast<int64_t>(rng() % 4) * 32) * kGiB;
    const int gpus = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < gpus; ++i) {
      node.gpus.push_back(static_cast<int>(t.gpus.size()));
      t.gpus.push_back({node.name + "/gpu" + std::to_string(i), n, i, "test",
                        (16 + static_cast<int64_t>(rng() % 5) * 16) * kGiB});
    }
    t.nodes.push_back(node);
  }
  return t;
}

Resources RandomDemand(std::mt19937& rng) {
  Resources d;
  if (rng() % 4 == 0) {
    d.gpus = 1 + static_cast<int>(rng() % 3);
  } else {
    d.gpu_milli = 1 + static_cast<int>(rng() % 1000);
    d.gpu_memory_mib = static_cast<int64_t>(rng() % (60 * kGiB));
  }
  d.cpu_milli = static_cast<int64_t>(rng() % 8000);
  d.memory_mib = static_cast<int64_t>(rng() % (32 * kGiB));
  return d;
}

// Every policy, priority with and without preemption.
std::vector<PolicyConfig> AllConfigs() {
  std::vector<PolicyConfig> configs;
  for (const std::string& name : PolicyNames()) {
    PolicyConfig c;
    c.name = name;
    c.weights = {{"u0", 1}, {"u1", 2}, {"u2", 0.5}};
    configs.push_back(c);
    if (name == "priority") {
      c.preemption = true;
      configs.push_back(c);
    }
  }
  return configs;
}

struct MixResult {
  std::string problem;  // the first broken property, or ""
  int starts = 0;
  int preemptions = 0;
};

// Runs the mix of `seed` under `config`.
MixResult RunMix(unsigned seed, const PolicyConfig& config) {
  std::mt19937 rng(seed);
  const Topology topology = RandomTopology(rng);
  ClusterState state(topology);
  MixResult result;
  auto fail = [&result](std::string problem) {
    result.problem = std::move(problem);
    return result;
  };
  auto policy = std::move(MakePolicy(config).value());
  const std::vector<std::string> scorers = ScorerNames();
  auto scorer = std::move(MakeScorer(scorers[rng() % scorers.size()]).value());
  const Allocator allocate = [&](const ClusterState& s, const QueuedJob& j) {
    return FindAllocation(s, "default", j.demand, *scorer);
  };
  const std::string where =
      config.name + (config.preemption ? "+preempt" : "") + " " +
      std::string(scorer->name()) + " seed " + std::to_string(seed);

  std::vector<QueuedJob> queue;
  std::vector<RunningJob> running;
  std::set<JobId> finished;
  std::map<JobId, QueuedJob> submitted;
  JobId next = 1;
  for (int round = 0; round < kRounds; ++round) {
    const double now = round * 10.0;
    if (rng() % 8 == 0) {
      const int node = static_cast<int>(rng() % topology.nodes.size());
      state.SetDrained(node, !state.topology().nodes[node].drained);
    }
    // Random completions.
    for (size_t i = 0; i < running.size();) {
      if (rng() % 3 == 0) {
        state.Release(running[i].id);
        finished.insert(running[i].id);
        running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        ++i;
      }
    }
    // Arrivals that could ever fit (the service rejects the others).
    for (int k = static_cast<int>(rng() % 4); k > 0; --k) {
      QueuedJob job;
      job.demand = RandomDemand(rng);
      if (!CouldEverFit(topology, "default", job.demand)) continue;
      job.id = next++;
      job.user = "u" + std::to_string(rng() % 3);
      job.priority = static_cast<int>(rng() % 4);
      job.preemptible = rng() % 2 == 0;
      job.submitted_at = now;
      job.time_limit_s = rng() % 3 == 0 ? 0 : 10.0 * (1 + rng() % 10);
      queue.push_back(job);
      submitted[job.id] = job;
    }

    const Decision d = policy->Schedule(queue, running, state, allocate, now);

    int top_started = -1;  // the highest priority started this round
    for (const auto& start : d.start) {
      top_started = std::max(top_started, submitted[start.first].priority);
    }
    for (JobId id : d.preempt) {
      auto it = std::find_if(running.begin(), running.end(),
                             [id](const RunningJob& r) { return r.id == id; });
      if (it == running.end() || !config.preemption || !it->preemptible ||
          it->priority >= top_started) {
        return fail(where + ": may not preempt job " + std::to_string(id));
      }
      state.Release(id);
      ++result.preemptions;
      running.erase(it);
      queue.push_back(submitted[id]);  // back in the queue, as it was
    }
    std::set<JobId> started;
    std::vector<size_t> positions;  // of the started jobs in the queue
    for (const auto& [id, a] : d.start) {
      auto it =
          std::find_if(queue.begin(), queue.end(),
                       [id = id](const QueuedJob& q) { return q.id == id; });
      if (it == queue.end() || !started.insert(id).second ||
          finished.count(id)) {
        return fail(where + ": starts job " + std::to_string(id) + " twice");
      }
      positions.push_back(static_cast<size_t>(it - queue.begin()));
      ++result.starts;
      if (Status st = state.Reserve(id, a); !st) {
        return fail(where + ": job " + std::to_string(id) + ": " +
                    st.error().message);
      }
      if (a.exclusive != (it->demand.gpus > 0)) {
        return fail(where + ": job " + std::to_string(id) +
                    " exclusive mismatch");
      }
    }
    // fifo starts a prefix of the queue.
    if (config.name == "fifo") {
      for (size_t i = 0; i < positions.size(); ++i) {
        if (positions[i] != i) return fail(where + ": fifo skipped a job");
      }
    }
    for (const auto& [id, a] : d.start) {
      auto it =
          std::find_if(queue.begin(), queue.end(),
                       [id = id](const QueuedJob& q) { return q.id == id; });
      running.push_back({id, it->user, it->team, it->priority, it->preemptible,
                         now, it->time_limit_s});
      queue.erase(it);
    }
    if (std::string problem = state.CheckInvariants(); !problem.empty()) {
      return fail(where + ", round " + std::to_string(round) + ": " + problem);
    }
    if (state.Holders().size() != running.size()) {
      return fail(where + ": holders and running jobs differ");
    }
  }
  return result;
}

TEST(AdmissionProperty, RandomMixesKeepTheInvariants) {
  for (const PolicyConfig& config : AllConfigs()) {
    int starts = 0, preemptions = 0;
    for (unsigned seed = 1; seed <= kMixes; ++seed) {
      const MixResult r = RunMix(seed, config);
      ASSERT_EQ(r.problem, "");
      starts += r.starts;
      preemptions += r.preemptions;
    }
    // The mixes exercise the policy: many starts, and preemptions exactly
    // when it may preempt.
    EXPECT_GT(starts, kMixes * 10) << config.name;
    EXPECT_EQ(preemptions > 0, config.preemption) << config.name;
  }
}

}  // namespace
}  // namespace tessera::scheduler
