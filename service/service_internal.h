#ifndef TESSERA_SERVICE_SERVICE_INTERNAL_H_
#define TESSERA_SERVICE_SERVICE_INTERNAL_H_

// The service's state, shared by service.cc and the files that extend the
// Service (service_reservations.cc); nobody else includes it. One mutex (`mu`)
// guards every member below it.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "scheduler/admission.h"
#include "scheduler/model_jobs.h"
#include "scheduler/mps.h"
#include "service/metrics_internal.h"
#include "service/service.h"
#include "service/store_internal.h"
#include "split/split.h"

namespace tessera::scheduler {

// Seconds the service waits after a launcher could not reach its engine
// before it starts jobs again: long enough not to hammer a controller that
// is down, short against a job's wait.
inline constexpr double kLaunchRetryS = 5;

namespace service_internal {

inline double WallClock() {
  return std::chrono::duration<double>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The GPU kind a pool's model jobs are sized for: its first GPU's.
inline std::string PoolKind(const Topology& t, const std::string& pool) {
  for (const NodeInfo& n : t.nodes) {
    if (n.pool == pool && !n.gpus.empty()) return t.gpus[n.gpus[0]].kind;
  }
  return "";
}

}  // namespace service_internal

struct Service::Impl {
  ServiceOptions options;
  ClusterState state;
  std::unique_ptr<Store> store;
  std::unique_ptr<Launcher> launcher;
  std::unique_ptr<GpuScorer> scorer;
  AdmissionCache admission_cache;  // the scorer's scores, by node stamp
  std::map<std::string, std::unique_ptr<QueuePolicy>> policies;

  std::mutex mu;
  std::condition_variable wake;
  bool stopping = false;
  bool dirty = true;  // something changed: run a round
  std::thread thread;

  std::vector<Job> queue;        // queued or preempted, by id
  std::map<JobId, Job> running;  // running (incl. stopping)
  std::set<JobId> cancel_requested, preempt_requested;
  std::unordered_map<JobId, SizedModel> models;  // model jobs' graphs
  std::unordered_map<JobId, nlohmann::json> pending_plans;
  // After a transient launcher error nothing starts until then.
  double launch_retry_at = 0;
  Metrics metrics;
  // Reservations for outside systems (Job::origin set): running, but
  // kept out of `running`, so the launcher never sees them.
  std::map<JobId, Job> reserved;

  // Ends the reservation at `it` (the caller holds `mu`); wakes the queue,
  // which may start what it held back (service_reservations.cc).
  Result<Job> EndReserved(std::map<JobId, Job>::iterator it, JobState end,
                          const std::string& reason);

  explicit Impl(ServiceOptions o)
      : options(std::move(o)), state(options.topology) {}

  double Now() const {
    return options.clock ? options.clock() : service_internal::WallClock();
  }

  // The sized model of a model job, loading it again after a restart.
  const SizedModel* ModelOf(const Job& job) {
    if (!job.request.model) return nullptr;
    auto it = models.find(job.id);
    if (it != models.end()) return &it->second;
    auto sized = SizeModel(
        *job.request.model,
        service_internal::PoolKind(state.topology(), job.request.pool));
    if (!sized) return nullptr;
    return &models.emplace(job.id, std::move(sized).value()).first->second;
  }

  std::optional<Allocation> Allocate(const ClusterState& s, const Job& job) {
    AdmissionOptions admission;
    admission.cache = &admission_cache;
    if (auto a = FindAllocation(s, job.request.pool,
                                PlacementRequest{job.demand, {}}, *scorer,
                                admission)) {
      return a;
    }
    if (!job.request.model || !job.request.splittable) return std::nullopt;
    const SizedModel* sized = ModelOf(job);
    if (!sized) return std::nullopt;
    auto gang =
        SplitAcrossSlivers(s, job.request.pool, *sized, options.model_headroom,
                           launcher->multi_node());
    if (!gang) return std::nullopt;
    pending_plans[job.id] = gang->plan;
    return gang->allocation;
  }

  // The environment a job starts with (docs/scheduler.md, "Launching").
  std::map<std::string, std::string> LaunchEnv(const Job& job) {
    const Topology& t = state.topology();
    std::map<std::string, std::string> env = job.request.env;
    std::string visible, ids;
    std::vector<int> milli;
    std::vector<int64_t> memory_mib;
    for (size_t i = 0; i < job.allocation.gpus.size(); ++i) {
      const GpuShare& s = job.allocation.gpus[i];
      const std::string sep = i ? "," : "";
      visible += sep + std::to_string(t.gpus[s.gpu].index);
      ids += sep + t.gpus[s.gpu].id;
      milli.push_back(s.milli);
      memory_mib.push_back(s.memory_mib);
    }
    env["CUDA_VISIBLE_DEVICES"] = visible;
    if (!job.allocation.exclusive && !job.allocation.gpus.empty()) {
      const MpsLimits mps = MpsLimitsFor(milli, memory_mib);
      env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = mps.active_thread_percentage;
      env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] = mps.pinned_device_mem_limit;
    }
    env["TESSERA_JOB_ID"] = std::to_string(job.id);
    env["TESSERA_GPUS"] = ids;
    if (job.allocation.node >= 0) {
      env["TESSERA_NODE"] = t.nodes[job.allocation.node].name;
      std::string nodes;
      for (const LaunchPart& p : LaunchParts(job.allocation)) {
        nodes += (nodes.empty() ? "" : ",") + p.node;
      }
      env["TESSERA_NODES"] = nodes;
    }
    if (!job.plan.is_null()) {
      const std::filesystem::path dir(options.log_dir);
      std::error_code ec;
      std::filesystem::create_directories(dir, ec);
      const std::string plan_path =
          (dir / (std::to_string(job.id) + ".plan.json")).string();
      std::ofstream(plan_path) << job.plan.dump(2) << "\n";
      env["TESSERA_PLAN"] = plan_path;
      if (const SizedModel* sized = ModelOf(job)) {
        auto plan = split::ParsePlan(job.plan, plan_path);
        if (plan) {
          const auto names = graph::UniqueNodeNames(*sized->model->graph);
          std::unordered_map<std::string, int> device_of(
              plan->placement.begin(), plan->placement.end());
          std::vector<int> node_device(names.size(), -1);
          for (size_t n = 0; n < names.size(); ++n) {
            auto it = device_of.find(names[n]);
            if (it != device_of.end()) node_device[n] = it->second;
          }
          const std::string map_path =
              (dir / (std::to_string(job.id) + ".device_map.json")).string();
          std::ofstream(map_path)
              << split::DeviceMapJson(*sized->model->graph, node_device,
                                      plan->devices)
                     .dump(2)
              << "\n";
          env["TESSERA_DEVICE_MAP"] = map_path;
        }
      }
    }
    return env;
  }

  void Persist(const Job& job) {
    if (Status s = store->Update(job); !s.ok()) {
      metrics.store_errors++;
    }
  }

  // Ends a running job (its process exited).
  void Finish(const Exited& e) {
    auto it = running.find(e.id);
    if (it == running.end()) return;
    Job job = std::move(it->second);
    running.erase(it);
    state.Release(job.id);
    job.allocation = {};
    job.pid = 0;
    job.exit_code = e.exit_code;
    if (preempt_requested.erase(job.id)) {
      job.state = JobState::kPreempted;
      job.reason = "preempted by a higher-priority job";
      ++job.restarts;
      job.exit_code.reset();
      job.plan = nullptr;
      Persist(job);
      queue.push_back(std::move(job));
      std::sort(queue.begin(), queue.end(),
                [](const Job& a, const Job& b) { return a.id < b.id; });
      return;
    }
    job.finished_at = Now();
    if (cancel_requested.erase(job.id) || e.cancelled) {
      job.state = JobState::kCancelled;
      if (job.reason.empty()) {
        job.reason = e.reason.empty() ? "cancelled" : e.reason;
      }
    } else if (e.exit_code && *e.exit_code == 0) {
      job.state = JobState::kSucceeded;
    } else {
      job.state = JobState::kFailed;
      job.reason =
          e.exit_code ? "exit code " + std::to_string(*e.exit_code) : e.reason;
    }
    models.erase(job.id);
    metrics.finished++;
    Persist(job);
  }

  // What `a` holds on each node, for the launcher: the node that holds the
  // CPU and memory first.
  std::vector<LaunchPart> LaunchParts(const Allocation& a) const {
    const Topology& t = state.topology();
    std::vector<LaunchPart> parts;
    auto part_of = [&](int node) -> LaunchPart& {
      for (LaunchPart& p : parts) {
        if (p.node == t.nodes[node].name) return p;
      }
      parts.push_back({t.nodes[node].name, {}, {}, {}, a.exclusive, 0, 0});
      return parts.back();
    };
    LaunchPart& first = part_of(a.node);
    first.cpu_milli = a.cpu_milli;
    first.memory_mib = a.memory_mib;
    for (const GpuShare& share : a.gpus) {
      LaunchPart& p = part_of(t.gpus[share.gpu].node);
      p.gpu_indices.push_back(t.gpus[share.gpu].index);
      p.gpu_milli.push_back(share.milli);
      p.gpu_memory_mib.push_back(share.memory_mib);
    }
    return parts;
  }

  // Back to the queue, in id order.
  void Requeue(Job job) {
    queue.push_back(std::move(job));
    std::sort(queue.begin(), queue.end(),
              [](const Job& a, const Job& b) { return a.id < b.id; });
  }

  // Starts `job` (removed from the queue by the caller) on `allocation`.
  void Launch(Job job, const Allocation& allocation) {
    if (!state.Fits(allocation)) {  // the policy's view was stale
      Requeue(std::move(job));
      return;
    }
    const double now = Now();
    job.allocation = allocation;
    if (auto p = pending_plans.find(job.id); p != pending_plans.end()) {
      job.plan = p->second;
    }
    (void)state.Reserve(job.id, allocation);
    LaunchSpec spec;
    spec.id = job.id;
    spec.name = job.request.name;
    spec.user = job.user;
    spec.command = job.request.command;
    spec.env = LaunchEnv(job);
    spec.log_dir = options.log_dir;
    spec.parts = LaunchParts(allocation);
    auto launched = launcher->Start(spec);
    if (!launched && launched.error().code == ErrorCode::kUnavailable) {
      // The engine is unreachable: try again later, keep the job.
      state.Release(job.id);
      job.allocation = {};
      job.plan = nullptr;
      job.reason = "not started yet: " + launched.error().message;
      metrics.launch_retries++;
      launch_retry_at = now + kLaunchRetryS;
      Persist(job);
      Requeue(std::move(job));
      return;
    }
    if (!launched) {
      state.Release(job.id);
      job.allocation = {};
      job.state = JobState::kFailed;
      job.reason = launched.error().message;
      job.finished_at = now;
      Persist(job);
      return;
    }
    metrics.queue_wait.Observe(now - job.submitted_at);
    job.reason.clear();
    job.state = JobState::kRunning;
    job.started_at = now;
    job.pid = launched->pid;
    job.pid_start = launched->start_time;
    Persist(job);
    running.emplace(job.id, std::move(job));
  }

  void Round() {
    for (const Exited& e : launcher->Poll()) Finish(e);
    const double now = Now();
    if (now < launch_retry_at) return;  // the engine was unreachable
    for (const std::string& pool : state.topology().pools) {
      std::vector<QueuedJob> waiting;
      std::unordered_map<JobId, const Job*> by_id;
      for (const Job& j : queue) {
        if (j.request.pool != pool) continue;
        waiting.push_back({j.id, j.user, "", j.request.priority,
                           j.request.preemptible, j.submitted_at,
                           j.request.time_limit_s, j.demand});
        by_id[j.id] = &j;
      }
      if (waiting.empty()) continue;
      std::vector<RunningJob> active;
      for (const auto& [id, j] : running) {
        if (j.request.pool != pool) continue;
        active.push_back({id, j.user, "", j.request.priority,
                          j.request.preemptible, j.started_at,
                          j.request.time_limit_s});
      }
      const Allocator allocate = [&](const ClusterState& s,
                                     const QueuedJob& q) {
        return Allocate(s, *by_id.at(q.id));
      };
      const auto t0 = std::chrono::steady_clock::now();
      const Decision d =
          policies.at(pool)->Schedule(waiting, active, state, allocate, now);
      metrics.decision_latency.Observe(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
              .count());
      if (!d.preempt.empty()) {
        // Start nothing until the victims have exited and freed their GPUs.
        for (const JobId v : d.preempt) {
          if (running.count(v) && preempt_requested.insert(v).second) {
            launcher->Stop(v, options.kill_grace_s);
          }
        }
        continue;
      }
      for (const auto& [id, allocation] : d.start) {
        auto it = std::find_if(queue.begin(), queue.end(),
                               [&](const Job& j) { return j.id == id; });
        if (it == queue.end()) continue;
        Job job = std::move(*it);
        queue.erase(it);
        by_id.clear();  // the queue moved; the allocator is done
        Launch(std::move(job), allocation);
      }
      pending_plans.clear();
    }
  }

  void Loop() {
    std::unique_lock lock(mu);
    while (!stopping) {
      Round();
      dirty = false;
      wake.wait_for(lock, std::chrono::duration<double>(options.tick_s),
                    [&] { return stopping || dirty; });
    }
  }

  // After a restart: live jobs are re-adopted, the others are lost.
  Status Recover() {
    auto jobs = store->LoadAll(/*active_only=*/true);
    if (!jobs) return jobs.error();
    for (Job& job : *jobs) {
      if (job.state != JobState::kRunning) {
        queue.push_back(std::move(job));
        continue;
      }
      if (!job.origin.empty()) {  // a reservation: no process to adopt
        if (state.Fits(job.allocation) &&
            state.Reserve(job.id, job.allocation).ok()) {
          reserved.emplace(job.id, std::move(job));
          continue;
        }
      }
      const bool alive = job.pid > 0 && state.Fits(job.allocation) &&
                         launcher->Adopt(job.id, job.pid, job.pid_start);
      if (alive && state.Reserve(job.id, job.allocation).ok()) {
        running.emplace(job.id, std::move(job));
        continue;
      }
      job.state = JobState::kFailed;
      job.reason = "lost";
      job.allocation = {};
      job.finished_at = Now();
      Persist(job);
    }
    return {};
  }
};

}  // namespace tessera::scheduler

#endif  // TESSERA_SERVICE_SERVICE_INTERNAL_H_
