// The service's scheduling rounds: reaping exits, running every pool's
// policy, launching what it admits, and recovering after a restart. The
// caller holds Service::Impl::mu (service_internal.h).
#include <algorithm>
#include <chrono>

#include "service/service_internal.h"

namespace tessera::scheduler {

std::optional<Allocation> Service::Impl::Allocate(const ClusterState& s,
                                                  const Job& job) {
  AdmissionOptions admission;
  admission.cache = &admission_cache;
  if (auto a =
          FindAllocation(s, job.request.pool, PlacementRequest{job.demand, {}},
                         *scorer, admission)) {
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

void Service::Impl::Persist(const Job& job) {
  if (Status s = store->Update(job); !s.ok()) {
    metrics.store_errors++;
  }
}

// Ends a running job (its process exited).

void Service::Impl::Finish(const Exited& e) {
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

// Back to the queue, in id order.

void Service::Impl::Requeue(Job job) {
  queue.push_back(std::move(job));
  std::sort(queue.begin(), queue.end(),
            [](const Job& a, const Job& b) { return a.id < b.id; });
}

// Starts `job` (removed from the queue by the caller) on `allocation`.

void Service::Impl::Launch(Job job, const Allocation& allocation) {
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

void Service::Impl::Round() {
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
    const Allocator allocate = [&](const ClusterState& s, const QueuedJob& q) {
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

void Service::Impl::Loop() {
  std::unique_lock lock(mu);
  while (!stopping) {
    Round();
    dirty = false;
    wake.wait_for(lock, std::chrono::duration<double>(options.tick_s),
                  [&] { return stopping || dirty; });
  }
}

// After a restart: live jobs are re-adopted, the others are lost.

Status Service::Impl::Recover() {
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

}  // namespace tessera::scheduler
