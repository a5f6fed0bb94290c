// One workload through the service (virtual clock, scripted launcher) and
// through the timed replay: the same jobs start at the same times on the
// same GPUs. The replay's figures are a promise about `tessera serve` only
// if both run one round; this test is what holds them to it (issue 30).
// Where they differ on purpose it is a named option: the replay's node
// tie order is shuffled by its seed unless seeded_node_order is false, and
// its fgd descends its own pods' workload unless TimedOptions::workload
// names the service's (openb). Two cases: the four queue policies (with
// priorities and preemption), and two teams under the queue tree (borrowing
// and reclaim).
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "scheduler/fragmentation.h"
#include "service/service.h"
#include "sim/timed_replay.h"
#include "sim/trace.h"
#include "tests/testlib/onnx_model_builder.h"
#include "tests/testlib/scripted_launcher.h"

namespace tessera::scheduler {
namespace {

// What runs after the last round at each instant: job -> its GPUs
// (ascending). Starts, preemptions and departures all show in it.
using Running = std::map<JobId, std::vector<int>>;
using Timeline = std::map<double, Running>;

std::vector<int> GpusOf(const Allocation& a) {
  std::vector<int> out;
  for (const GpuShare& g : a.gpus) out.push_back(g.gpu);
  std::sort(out.begin(), out.end());
  return out;
}

// Two nodes of four GPUs, one pool.
Topology Cluster() {
  Topology t;
  t.pools = {"a"};
  for (int n = 0; n < 2; ++n) {
    NodeInfo node{
        "node" + std::to_string(n), "a", 32000, 256 * 1024, {}, false};
    for (int g = 0; g < 4; ++g) {
      node.gpus.push_back(static_cast<int>(t.gpus.size()));
      t.gpus.push_back({node.name + "/gpu" + std::to_string(g), n, g,
                        "a100-80gb", 80 * 1024});
    }
    t.nodes.push_back(std::move(node));
  }
  return t;
}

// `count` trace pods: fractions of one GPU, one or two whole GPUs, with
// CPU and memory; arrivals in whole seconds (some at the same instant),
// durations 30..600 s. Enough load that jobs queue.
std::vector<TracePod> Workload(int count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const auto pick = [&](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng);
  };
  std::vector<TracePod> pods;
  double t = 0;
  for (int i = 0; i < count; ++i) {
    TracePod p;
    p.name = "pod" + std::to_string(i);
    const int qos = pick(0, 4);
    p.qos = qos < 3 ? "BE" : (qos == 3 ? "LS" : "Burstable");
    const int kind = pick(0, 9);
    if (kind < 4) {
      p.num_gpu = 1;
      p.gpu_milli = 250 * pick(1, 3);
    } else {
      p.num_gpu = kind < 8 ? 1 : 2;
      p.gpu_milli = kFullGpuMilli;
    }
    p.cpu_milli = 1000 * pick(1, 6);
    p.memory_mib = 1024 * pick(1, 16);
    t += pick(0, 3) == 0 ? 0 : pick(1, 40);
    p.creation_time = t;
    p.deletion_time = t + pick(30, 600);
    pods.push_back(std::move(p));
  }
  return pods;
}

struct Policy {
  std::string scorer, policy;
  // With teams > 0: pod p's team is TeamOf(p, teams, kHash), a queue each
  // in `queues` (every pod may borrow).
  int teams = 0;
  std::vector<QueueSpec> queues;
};

Timeline ReplayTimeline(const Topology& topology,
                        const std::vector<TracePod>& pods, const Policy& x) {
  TimedOptions o;
  o.scorer = x.scorer;
  o.queue_policy = x.policy;
  o.preemption = true;
  o.teams = x.teams;
  o.queues = x.queues;
  o.seeded_node_order = false;
  // The service's fgd and tessera scorers descend the openb workload; the
  // replay's by default its own pods' (TimedOptions::workload).
  o.workload = &OpenbWorkload();
  Timeline timeline;
  o.on_round = [&](double now, const ClusterState& s) {
    Running& running = timeline[now];
    running.clear();
    for (JobId id = 1; id <= static_cast<JobId>(pods.size()); ++id) {
      if (const Allocation* a = s.AllocationOf(id)) running[id] = GpusOf(*a);
    }
  };
  auto run = RunTimed(topology, pods, o);
  EXPECT_TRUE(run) << run.error().message;
  return timeline;
}

// The service's: each pod submitted at its arrival (user its qos class,
// priority and preemptibility as the replay gives them, its duration as
// time limit), each running job exited at its start + duration, and rounds
// (Tick) at every instant something happens, and one more while victims
// of a preemption or reclaim are to be taken in: they exit at once (the
// scripted launcher, no grace), so what they free goes out at the same
// instant, as in the replay.
Timeline ServiceTimeline(const Topology& topology,
                         const std::vector<TracePod>& pods, const Policy& x) {
  testlib::TempDir dir;
  double now = 0;
  ServiceOptions o;
  o.topology = topology;
  o.db_path = dir.File("q.db");
  o.log_dir = dir.File("logs");
  o.start_thread = false;
  o.scorer = x.scorer;
  PolicyConfig config;
  config.name = x.policy;
  config.preemption = true;
  o.policies["a"] = config;
  o.queues = x.queues;
  o.clock = [&now] { return now; };
  auto launcher = std::make_unique<ScriptedLauncher>();
  ScriptedLauncher* scripted = launcher.get();
  auto service = Service::Start(std::move(o), std::move(launcher));
  EXPECT_TRUE(service) << service.error().message;
  if (!service) return {};
  Service& s = **service;
  const auto running_now = [&] {
    Running out;
    JobFilter f;
    f.state = JobState::kRunning;
    auto jobs = s.List(f);
    EXPECT_TRUE(jobs) << jobs.error().message;
    if (jobs) {
      for (const Job& j : *jobs) out[j.id] = GpusOf(j.allocation);
    }
    return out;
  };
  const auto duration = [&](JobId id) {
    const TracePod& p = pods[id - 1];
    return p.deletion_time - p.creation_time;
  };

  Timeline timeline;
  Running running;
  std::map<JobId, double> end_of;  // running jobs' ends
  size_t next = 0;
  const double kNever = std::numeric_limits<double>::infinity();
  while (next < pods.size() || !end_of.empty()) {
    double end = kNever;
    for (const auto& [id, at] : end_of) end = std::min(end, at);
    now = std::min(next < pods.size() ? pods[next].creation_time : kNever, end);
    for (auto it = end_of.begin(); it != end_of.end();) {
      if (it->second != now) {
        ++it;
        continue;
      }
      scripted->Exit(it->first, 0);
      it = end_of.erase(it);
    }
    while (next < pods.size() && pods[next].creation_time == now) {
      const TracePod& p = pods[next];
      JobRequest r;
      r.name = p.name;
      r.pool = "a";
      r.command = {"true"};
      r.resources = PodDemand(p);
      r.priority = p.qos == "LS" ? 2 : (p.qos == "Burstable" ? 1 : 0);
      r.preemptible = r.priority == 0 || x.teams > 0;
      r.time_limit_s = std::max(duration(static_cast<JobId>(next + 1)), 1.0);
      const std::string team =
          x.teams > 0
              ? "team" + std::to_string(TeamOf(p, x.teams, TeamSplit::kHash))
              : "";
      auto job = s.Submit(User{p.qos, team, false, ""}, r);
      EXPECT_TRUE(job) << p.name << ": " << job.error().message;
      // Ids follow submission, the pods' order: id = pod + 1, as in the
      // replay.
      if (job) {
        EXPECT_EQ(job->id, static_cast<JobId>(next + 1));
      }
      ++next;
    }
    for (int round = 0; round < 10; ++round) {
      s.Tick();
      EXPECT_EQ(s.CheckInvariants(), "");
      Running after = running_now();
      for (const auto& [id, gpus] : after) {
        if (!running.count(id)) end_of[id] = now + duration(id);
      }
      for (const auto& [id, gpus] : running) {
        if (!after.count(id)) end_of.erase(id);  // preempted (or ended)
      }
      running = std::move(after);
      // Victims asked to stop this round (preempted, reclaimed) have
      // exited already: one more round takes them in, at the same
      // instant, as the replay does. Otherwise the instant is done.
      bool stopping = false;
      {
        std::lock_guard lock(scripted->mu);
        stopping = !scripted->exits.empty();
      }
      if (!stopping) break;
    }
    timeline[now] = running;
  }
  return timeline;
}

// "t=120: 3 [0], 7 [4 5]" for a failure message.
std::string Describe(double at, const Running& r) {
  std::string out = "t=" + std::to_string(static_cast<int64_t>(at)) + ":";
  for (const auto& [id, gpus] : r) {
    out += " " + std::to_string(id) + " [";
    for (size_t i = 0; i < gpus.size(); ++i) {
      out += (i ? " " : "") + std::to_string(gpus[i]);
    }
    out += "]";
  }
  return out;
}

// Both timelines alike at every instant (the first differences printed),
// and jobs waited: the rounds had choices to make.
void ExpectSameTimelines(const std::vector<TracePod>& pods,
                         const Timeline& replay, const Timeline& service) {
  int differ = 0;
  for (const auto& [at, running] : replay) {
    auto it = service.find(at);
    const Running none;
    const Running& theirs = it == service.end() ? none : it->second;
    if (theirs == running || ++differ > 3) continue;
    ADD_FAILURE() << "replay  " << Describe(at, running) << "\nservice "
                  << Describe(at, theirs);
  }
  EXPECT_EQ(differ, 0);
  EXPECT_EQ(service.size(), replay.size());
  // The rounds had choices to make: jobs waited.
  int waited = 0;
  std::set<JobId> seen;
  for (const auto& [at, running] : replay) {
    for (const auto& [id, gpus] : running) {
      if (seen.insert(id).second && at > pods[id - 1].creation_time) {
        ++waited;
      }
    }
  }
  EXPECT_GT(waited, 5);
}

TEST(RoundEquivalence, TheServiceAndTheReplayRunTheSameRounds) {
  const Topology topology = Cluster();
  const std::vector<Policy> setups = {{"best-fit", "fifo", 0, {}},
                                      {"first-fit", "backfill", 0, {}},
                                      {"best-fit", "priority", 0, {}},
                                      {"fgd", "fair-share", 0, {}}};
  for (const Policy& x : setups) {
    for (const uint64_t seed : {1u, 2u}) {
      SCOPED_TRACE(x.scorer + ", " + x.policy + ", seed " +
                   std::to_string(seed));
      const std::vector<TracePod> pods = Workload(60, seed);
      const Timeline replay = ReplayTimeline(topology, pods, x);
      const Timeline service = ServiceTimeline(topology, pods, x);
      ExpectSameTimelines(pods, replay, service);
    }
  }
}

// Two teams, a queue each guaranteed half the cluster, borrowing the rest:
// borrowed jobs are reclaimed when the other team's jobs arrive.
TEST(RoundEquivalence, TheServiceAndTheReplayRunTheSameQueueTree) {
  const Topology topology = Cluster();
  const QueueAmount half{4000, 4 * 80 * 1024};
  std::vector<QueueSpec> queues(2);
  for (int q = 0; q < 2; ++q) {
    queues[q].name = "team" + std::to_string(q);
    queues[q].guaranteed = half;
  }
  for (const std::string scorer : {"best-fit", "fgd"}) {
    for (const uint64_t seed : {1u, 2u}) {
      SCOPED_TRACE(scorer + ", queue tree, seed " + std::to_string(seed));
      const Policy x{scorer, "fifo", 2, queues};
      const std::vector<TracePod> pods = Workload(60, seed);
      ExpectSameTimelines(pods, ReplayTimeline(topology, pods, x),
                          ServiceTimeline(topology, pods, x));
    }
  }
}

}  // namespace
}  // namespace tessera::scheduler
