// A job's transitions under the service's lock: an exit taken (Finish),
// a start begun (`starting`, reserved and stored before the launcher sees
// it), its outcome recorded, and the store and audit writes each one makes.
// The caller holds `mu` throughout (service_internal.h).
#include <algorithm>

#include "scheduler/learned_sizing.h"
#include "service/measure/out_of_memory_internal.h"
#include "service/service_internal.h"

namespace tessera::service {

namespace {

// "out of GPU memory: held 2930 MiB, asked for 4096 MiB more (pytorch:
// torch.OutOfMemoryError: CUDA out of memory. ...)".
std::string OomReason(const launch::OutOfMemory& oom, int64_t held_mib) {
  std::string why =
      "out of GPU memory: held " + std::to_string(held_mib) + " MiB";
  if (oom.tried_mib) {
    why += ", asked for " + std::to_string(*oom.tried_mib) + " MiB more";
  }
  return why + " (" + oom.source + ": " + oom.line + ")";
}

}  // namespace

// What this file uses of scheduler/, beyond what its headers name.
using scheduler::AdmissionOptions;
using scheduler::ElasticStartAllocation;
using scheduler::FindAllocation;
using scheduler::GpuShare;
using scheduler::IsTerminal;
using scheduler::JobStateName;
using scheduler::kMeasuredHeadroom;
using scheduler::PlacementRequest;
using scheduler::SizeModel;

using service_internal::PoolKind;

std::shared_ptr<const SizedModel> Service::Impl::LoadModel(
    const Job& job, double measured_step_s) const {
  if (!job.request.model) return nullptr;
  // The same rules as a submission: the roots or the upload store.
  auto sized =
      SizeModel(*job.request.model,
                PoolKind(options.topology, job.request.pool), model_files);
  if (!sized) return nullptr;
  if (measured_step_s > 0) sized->step_s = measured_step_s;
  return std::make_shared<const SizedModel>(std::move(sized).value());
}

std::optional<Allocation> Service::Impl::Allocate(const RoundSnapshot& snap,
                                                  const ClusterState& s,
                                                  const Job& job) {
  if (job.request.model) {
    // Whole, fraction, split or wait: by predicted finish.
    auto it = snap.models.find(job.id);
    if (it != snap.models.end() && it->second) {
      return DecideModelStart(snap, s, job, *it->second);
    }
  }
  AdmissionOptions admission;
  admission.cache = &admission_cache;
  if (job.request.elastic && job.request.resources) {
    return ElasticStartAllocation(s, job.request.pool, *job.request.resources,
                                  *job.request.elastic, *scorer, admission);
  }
  return FindAllocation(s, job.request.pool, PlacementRequest{job.demand, {}},
                        *scorer, admission);
}

Status Service::Impl::Persist(const Job& job, const JobEvent* event) {
  if (Status s = store->Update(job, event); !s.ok()) {
    metrics.store_errors++;
    return Unavailable("the job store failed: " + s.error().message);
  }
  return {};
}

JobEvent Service::Impl::Event(JobId job, const User* by, std::string action,
                              std::string detail) const {
  JobEvent e;
  e.job = job;
  e.at = Now();
  e.actor = by ? by->name : "scheduler";
  e.token = by ? by->token_name : "";
  e.action = std::move(action);
  e.detail = std::move(detail);
  return e;
}

Status Service::Impl::Record(const JobEvent& event) {
  if (Status s = store->AddEvent(event); !s.ok()) {
    metrics.store_errors++;
    return Unavailable("the job store failed: " + s.error().message);
  }
  return {};
}

namespace {

// "node0: node0/gpu0 500 milli 1024 MiB, ..." for the audit trail.
std::string Where(const Topology& t, const Allocation& a) {
  std::string out = a.node >= 0 ? t.nodes[a.node].name : std::string("?");
  std::string sep = ": ";
  for (const GpuShare& s : a.gpus) {
    out += sep + t.gpus[s.gpu].id + " " + std::to_string(s.milli) + " milli " +
           std::to_string(s.memory_mib) + " MiB";
    sep = ", ";
  }
  return out;
}

}  // namespace

bool Service::Impl::Finish(const launch::Exited& e) {
  auto it = jobs.running.find(e.id);
  if (it == jobs.running.end()) {
    // Its start outcome is not stored yet: the exit waits for it.
    if (jobs.starting.count(e.id)) {
      unrecorded_exits[e.id] = e;
      return false;
    }
    oom_exits.erase(e.id);  // no such job any more
    return true;
  }
  Job job = it->second;
  const Allocation held = std::exchange(job.allocation, {});
  job.pid = 0;
  job.exit_code = e.exit_code;
  const bool preempted = preempt_requested.count(job.id) > 0;
  if (preempted) {
    job.state = JobState::kPreempted;
    auto why = preempt_reasons.find(job.id);
    job.reason = why != preempt_reasons.end()
                     ? why->second
                     : "preempted by a higher-priority job";
    job.queue.clear();
    job.borrowed = false;
    ++job.restarts;
    job.exit_code.reset();
    job.plan = nullptr;
  } else if (cancel_requested.count(job.id) || e.cancelled) {
    job.finished_at = Now();
    job.state = JobState::kCancelled;
    if (job.reason.empty()) {
      job.reason = e.reason.empty() ? "cancelled" : e.reason;
    }
  } else {
    job.finished_at = Now();
    EndedByItself(job, e, held);
  }
  const bool requeued = job.state == JobState::kQueued;
  LearnFrom(job, held, requeued || job.state == JobState::kOom);
  const JobEvent event = Event(
      job.id, nullptr,
      requeued ? std::string("requeued") : std::string(JobStateName(job.state)),
      job.reason.empty() ? std::string("exit code 0") : job.reason);
  if (!Persist(job, &event).ok()) {
    unrecorded_exits[e.id] = e;  // still running, in memory as on disk
    return false;
  }
  unrecorded_exits.erase(e.id);
  oom_exits.erase(e.id);
  jobs.running.erase(it);
  state.Release(job.id);
  preempt_requested.erase(job.id);
  preempt_reasons.erase(job.id);
  reclaim_victims.erase(job.id);
  cancel_requested.erase(job.id);
  progress.erase(job.id);
  usage.Forget(job.id);
  if (preempted || requeued) {
    Requeue(std::move(job));
  } else {
    models.erase(job.id);
    start_decisions.erase(job.id);
    metrics.finished++;
  }
  allocation_changed.notify_all();  // an elastic job's long-polls end
  return true;
}

// A job that ended by itself: succeeded, failed, or out of GPU memory (its
// stderr said, or the sampler saw it at its cap), then put back once when
// it asked (measure/out_of_memory_internal.h).
void Service::Impl::EndedByItself(Job& job, const launch::Exited& e,
                                  const Allocation& held) {
  if (e.exit_code && *e.exit_code == 0) {
    job.state = JobState::kSucceeded;
    return;
  }
  std::optional<launch::OutOfMemory> oom;
  if (auto it = oom_exits.find(e.id); it != oom_exits.end()) {
    oom = it->second;
  } else if (service_internal::DiedAtCap(job, held)) {
    oom = launch::OutOfMemory{"sampler",
                              "its last reading, " +
                                  std::to_string(job.usage.last_mib) +
                                  " MiB, was at its cap",
                              std::nullopt};
  }
  if (!oom) {
    job.state = JobState::kFailed;
    job.reason =
        e.exit_code ? "exit code " + std::to_string(*e.exit_code) : e.reason;
    // A per-worker job's status is its guaranteed workers': which failed.
    if (e.exit_code && PerWorker(job) && !e.reason.empty()) {
      job.reason = e.reason + ": " + job.reason;
    }
    return;
  }
  service_internal::OomHeld h;
  int64_t held_mib = 0;
  for (const GpuShare& g : held.gpus) {
    held_mib += g.memory_mib;
    h.per_gpu_mib = std::max(h.per_gpu_mib, g.memory_mib);
  }
  h.gpus = static_cast<int>(held.gpus.size());
  h.exclusive = held.exclusive;
  h.largest_gpu_mib =
      service_internal::MaxGpuMemory(state.topology(), job.request.pool);
  const std::string& on_oom = job.request.on_oom;
  const bool asked =
      on_oom == "requeue" ||
      (on_oom.empty() && options.requeue_oom_pools.count(job.request.pool));
  const service_internal::OomOutcome o =
      service_internal::DecideOom(job, oom, h, asked, kMeasuredHeadroom);
  job.state = JobState::kOom;
  job.reason = OomReason(*oom, held_mib);
  if (!o.requeue) {
    if (!o.detail.empty()) job.reason += "; " + o.detail;
    return;
  }
  job.state = JobState::kQueued;
  job.reason += "; put back once, " + o.detail;
  job.finished_at = 0;
  job.exit_code.reset();
  ++job.oom_requeues;
  job.demand.gpu_memory_mib = o.gpu_memory_mib;
  job.queue.clear();
  job.borrowed = false;
  job.plan = nullptr;
}

void Service::Impl::Requeue(Job job) {
  auto at = std::upper_bound(jobs.queue.begin(), jobs.queue.end(), job.id,
                             [](JobId id, const Job& j) { return id < j.id; });
  jobs.queue.insert(at, std::move(job));
}

std::optional<Job> Service::Impl::BeginStart(Job job,
                                             const Allocation& allocation,
                                             nlohmann::json plan) {
  if (!state.Fits(allocation)) {  // the snapshot was stale
    Requeue(std::move(job));
    return std::nullopt;
  }
  Job begun = job;
  begun.state = JobState::kStarting;
  begun.allocation = allocation;
  begun.reason.clear();
  begun.usage = {};  // this run's, measured from now
  BeginElastic(begun);
  if (!plan.is_null()) begun.plan = std::move(plan);
  const JobEvent event =
      Event(begun.id, nullptr, "starting", Where(state.topology(), allocation));
  if (!Persist(begun, &event).ok()) {
    Requeue(std::move(job));  // queued, in memory as on disk
    return std::nullopt;
  }
  (void)state.Reserve(begun.id, allocation);
  if (begun.request.elastic) WriteAllocationFile(begun);
  jobs.starting.emplace(begun.id, begun);
  return begun;
}

bool Service::Impl::RecordStart(const Job& outcome) {
  const JobEvent event =
      outcome.state == JobState::kRunning
          ? Event(outcome.id, nullptr, "running",
                  "pid " + std::to_string(outcome.pid))
      : IsTerminal(outcome.state)
          ? Event(outcome.id, nullptr, std::string(JobStateName(outcome.state)),
                  outcome.reason)
          : Event(outcome.id, nullptr, "not started", outcome.reason);
  if (!Persist(outcome, &event).ok()) {
    unrecorded_starts[outcome.id] = outcome;
    return false;
  }
  unrecorded_starts.erase(outcome.id);
  jobs.starting.erase(outcome.id);
  if (outcome.state == JobState::kRunning) {
    metrics.queue_wait.Observe(outcome.started_at - outcome.submitted_at);
    jobs.running.emplace(outcome.id, outcome);
    if (cancel_requested.count(outcome.id)) {
      stop_requests.push_back(outcome.id);
    }
    return true;
  }
  state.Release(outcome.id);
  cancel_requested.erase(outcome.id);
  if (IsTerminal(outcome.state)) {
    models.erase(outcome.id);
    start_decisions.erase(outcome.id);
    if (outcome.state != JobState::kFailed) metrics.finished++;
  } else {
    Requeue(outcome);
  }
  return true;
}

void Service::Impl::EndStart(JobId id,
                             const Result<launch::Launched>& launched) {
  auto it = jobs.starting.find(id);
  if (it == jobs.starting.end()) return;
  Job job = it->second;
  const double now = Now();
  const bool cancelled = cancel_requested.count(id) > 0;
  if (!launched) {
    job.allocation = {};
    job.plan = nullptr;
    if (cancelled) {
      job.state = JobState::kCancelled;
      if (job.reason.empty()) job.reason = "cancelled";
      job.finished_at = now;
    } else if (launched.error().code == ErrorCode::kUnavailable) {
      // The engine is unreachable: try again later, keep the job.
      job.state = job.restarts > 0 ? JobState::kPreempted : JobState::kQueued;
      job.reason = "not started yet: " + launched.error().message;
      metrics.launch_retries++;
      launch_retry_at = now + kLaunchRetryS;
    } else {
      job.state = JobState::kFailed;
      job.reason = launched.error().message;
      job.finished_at = now;
    }
  } else {
    job.state = JobState::kRunning;
    job.started_at = now;
    job.pid = launched->pid;
    job.pid_start = launched->start_time;
  }
  RecordStart(job);
}

}  // namespace tessera::service
