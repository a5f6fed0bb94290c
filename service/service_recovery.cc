// Recovery after a restart: live jobs are adopted, the others are lost,
// and a start that was under way is reconciled with the launcher, never
// done again (docs/scheduler.md, "Durability and recovery").
#include <algorithm>

#include "service/service_internal.h"

namespace tessera::service {

bool Service::Impl::StoreReconciled(const Job& outcome, const JobEvent& event) {
  if (Persist(outcome, &event).ok()) return true;
  // Not stored: the job stays `starting`, and its outcome is stored again
  // every round (RecordStart puts it where it belongs then).
  unrecorded_starts[outcome.id] = outcome;
  Job held = outcome;
  held.state = JobState::kStarting;
  jobs.starting.emplace(held.id, std::move(held));
  return false;
}

void Service::Impl::ApplyReconciled(Job job, const launch::Reconciled& r) {
  if (r.kind == launch::Reconciled::Kind::kRunning &&
      state.Fits(job.allocation) &&
      state.Reserve(job.id, job.allocation).ok()) {
    job.state = JobState::kRunning;
    if (job.started_at == 0) job.started_at = Now();
    job.pid = r.launched.pid;
    job.pid_start = r.launched.start_time;
    job.reason.clear();
    const JobEvent event =
        Event(job.id, nullptr, "adopted",
              "running after a restart (pid " + std::to_string(job.pid) + ")");
    if (StoreReconciled(job, event))
      jobs.running.emplace(job.id, std::move(job));
    return;
  }
  if (r.kind == launch::Reconciled::Kind::kRunning) {
    // Running, but its reservation collides: the state is not what the
    // store says. Stop it rather than run two jobs on one share (the
    // round thread sends the signal).
    stop_requests.push_back(job.id);
  }
  job.allocation = {};
  if (r.kind == launch::Reconciled::Kind::kNotFound && r.never_ran) {
    // Stored as starting, never started (the service stopped, or a
    // replica held it back when its lease may have lapsed): queued again.
    job.state = job.restarts > 0 ? JobState::kPreempted : JobState::kQueued;
    job.reason = "not started: the service stopped before it started it";
    job.plan = nullptr;
    const JobEvent event = Event(job.id, nullptr, "requeued", job.reason);
    if (StoreReconciled(job, event)) Requeue(std::move(job));
    return;
  }
  job.state = JobState::kFailed;
  job.reason = "lost: the service stopped while starting it (" +
               (r.detail.empty() ? std::string("not found") : r.detail) + ")";
  job.finished_at = Now();
  (void)StoreReconciled(job, Event(job.id, nullptr, "failed", job.reason));
}

bool Service::Impl::AdoptWorkerJob(Job& job) {
  const std::vector<int> adopted = launcher->AdoptWorkers(
      job.id, job.elastic.workers, job.request.elastic->min);
  if (adopted.empty()) return false;
  // Extras whose process ended while the service was down: released.
  std::set<int> gone;
  for (const int w : job.elastic.workers) {
    if (w >= job.request.elastic->min &&
        std::find(adopted.begin(), adopted.end(), w) == adopted.end()) {
      gone.insert(w);
    }
  }
  if (gone.empty()) return true;
  Job updated = job;
  service_internal::ElasticWithout next =
      service_internal::DropWorkers(job, gone);
  updated.allocation = std::move(next.allocation);
  updated.elastic = std::move(next.state);
  ElasticState& st = updated.elastic;
  st.grow_stopped = true;  // they ended on their own
  ++st.version;
  st.history.push_back(
      {Now(), "ended", std::vector<int>(gone.begin(), gone.end()), st.version});
  const JobEvent event = Event(job.id, nullptr, "elastic ended",
                               "workers ended while the service was down");
  if (Persist(updated, &event).ok()) {
    job = std::move(updated);
    WriteAllocationFile(job);
  }
  return true;
}

Status Service::Impl::Recover() {
  TESSERA_RETURN_IF_ERROR(LoadLearned());
  TESSERA_RETURN_IF_ERROR(LoadDrains());
  auto stored = store->LoadAll(/*active_only=*/true);
  if (!stored) return stored.error();
  for (Job& job : *stored) {
    if (job.state == JobState::kQueued || job.state == JobState::kPreempted) {
      jobs.queue.push_back(std::move(job));
      continue;
    }
    if (job.state == JobState::kStarting) {
      // Maybe started, maybe not: the launcher knows; never start it again.
      launch::Reconciled r = launcher->Reconcile(job.id);
      if (r.kind == launch::Reconciled::Kind::kRunning && PerWorker(job) &&
          launcher
              ->AdoptWorkers(job.id, job.elastic.workers,
                             job.request.elastic->min)
              .empty()) {
        r = {launch::Reconciled::Kind::kNotFound, {}, "its workers ended"};
      }
      if (r.kind == launch::Reconciled::Kind::kUnknown) {
        (void)state.Reserve(job.id, job.allocation);  // held while unknown
        unreconciled.insert(job.id);
        jobs.starting.emplace(job.id, std::move(job));
        continue;
      }
      ApplyReconciled(std::move(job), r);
      continue;
    }
    if (!job.origin.empty()) {  // a reservation: no process to adopt
      if (state.Fits(job.allocation) &&
          state.Reserve(job.id, job.allocation).ok()) {
        jobs.reserved.emplace(job.id, std::move(job));
        continue;
      }
    }
    // An exit this process read before a takeover (Leadership::exits):
    // the job is held until its first round finishes it.
    const bool ended_here = unrecorded_exits.count(job.id) > 0;
    const bool alive =
        job.pid > 0 && state.Fits(job.allocation) &&
        (ended_here ||
         (PerWorker(job) ? AdoptWorkerJob(job)
                         : launcher->Adopt(job.id, job.pid, job.pid_start)));
    if (alive && state.Reserve(job.id, job.allocation).ok()) {
      jobs.running.emplace(job.id, std::move(job));
      continue;
    }
    job.state = JobState::kFailed;
    job.reason = "lost";
    job.allocation = {};
    job.finished_at = Now();
    const JobEvent event = Event(job.id, nullptr, "failed",
                                 "lost: its process was gone at a restart");
    TESSERA_RETURN_IF_ERROR(Persist(job, &event));
  }
  return {};
}

}  // namespace tessera::service
