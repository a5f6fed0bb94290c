// Elastic jobs in the service (docs/elastic.md): a job starts with its
// guaranteed part (min workers), grows into free capacity up to max, and
// gives its extras back first when a job the policy admits needs their
// room: asked with notice (allocation version, file, SIGUSR1), released
// by the job (POST /v1/jobs/{id}/release) or reclaimed after the grace.
//
// Decisions, all on the job's node: a worker is one GPU (whole, or a
// fraction of one), the local launcher runs a job on one machine, and the
// guaranteed part is placed like any job of the pool. Policies plan on
// PlanningState, where extras are free: what they admit may take extras
// back, and only what does not fit even then preempts anybody.
#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>

#include "scheduler/elastic.h"
#include "service/service_internal.h"
#include "service/wire/job_json.h"

namespace tessera::service {

// What this file uses of scheduler/, beyond what its headers name.
using scheduler::ExtrasBack;
using scheduler::ExtrasInTheWay;
using scheduler::FreeWorkerGpus;
using scheduler::GpuShare;
using scheduler::GrowOrder;
using scheduler::PlanOnGuaranteed;
using scheduler::Replacer;
using scheduler::SharesNode;
using scheduler::StartBesideExtras;
using scheduler::WithoutWorkers;
using scheduler::WithWorkers;

namespace {

// A job's history keeps its last changes only.
constexpr size_t kMaxElasticHistory = 100;

std::string WorkerList(const std::vector<int>& workers) {
  std::string out;
  for (const int w : workers)
    out += (out.empty() ? "" : ",") + std::to_string(w);
  return out;
}

bool IsExtra(const Job& job, int worker) {
  return job.request.elastic && worker >= job.request.elastic->min;
}

}  // namespace

namespace service_internal {

ElasticWithout DropWorkers(const Job& job, const std::set<int>& drop) {
  ElasticWithout out{{}, job.elastic};
  ElasticState& st = out.state;
  std::vector<int> kept = st.workers;
  out.allocation =
      WithoutWorkers(job.allocation, *job.request.resources, kept, drop);
  st.workers = std::move(kept);
  std::erase_if(st.releasing, [&](int w) { return drop.count(w) > 0; });
  if (st.releasing.empty()) st.release_by = 0;
  return out;
}

}  // namespace service_internal

std::string Service::Impl::AllocationFilePath(JobId id) const {
  return (std::filesystem::path(options.log_dir) /
          (std::to_string(id) + ".allocation.json"))
      .string();
}

// Written as a temporary file and renamed over the old one: a reader sees
// the old allocation or the new one, never half of one.
void Service::Impl::WriteAllocationFile(const Job& job) const {
  std::error_code ec;
  std::filesystem::create_directories(options.log_dir, ec);
  const std::string path = AllocationFilePath(job.id);
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << ElasticAllocationJson(job, state.topology()).dump(2) << "\n";
    if (!out) return;
  }
  std::filesystem::rename(tmp, path, ec);
}

void Service::Impl::BeginElastic(Job& job) {
  if (!job.request.elastic) return;
  ElasticState& e = job.elastic;
  e.workers.clear();
  for (int w = 0; w < static_cast<int>(job.allocation.gpus.size()); ++w) {
    e.workers.push_back(w);
  }
  e.releasing.clear();
  e.release_by = 0;
  e.grow_stopped = false;
  ++e.version;
  e.history.push_back({Now(), "start", e.workers, e.version});
  if (e.history.size() > kMaxElasticHistory) e.history.erase(e.history.begin());
}

std::vector<ElasticHolding> Service::Impl::ElasticHoldings(
    const std::string* pool) const {
  std::vector<ElasticHolding> out;
  for (const auto& [id, job] : jobs.running) {
    if (!job.request.elastic || !job.request.resources) continue;
    if (pool != nullptr && job.request.pool != *pool) continue;
    out.push_back({id, &job.allocation, &job.elastic.workers,
                   *job.request.resources, *job.request.elastic, job.started_at,
                   &job.elastic.releasing});
  }
  return out;
}

ClusterState Service::Impl::PlanningState() const {
  return PlanOnGuaranteed(state, ElasticHoldings());
}

bool Service::Impl::ApplyElastic(JobId id, const Allocation& next,
                                 ElasticState st, const std::string& action,
                                 std::vector<int> workers, const User* by,
                                 const std::string& note) {
  auto it = jobs.running.find(id);
  if (it == jobs.running.end()) return false;
  Job job = it->second;
  const Allocation before = job.allocation;
  state.Release(id);
  if (!state.Fits(next)) {
    (void)state.Reserve(id, before);
    return false;
  }
  ++st.version;
  st.history.push_back({Now(), action, workers, st.version});
  if (st.history.size() > kMaxElasticHistory) {
    st.history.erase(st.history.begin());
  }
  job.allocation = next;
  job.elastic = std::move(st);
  const JobEvent event =
      Event(id, by, "elastic " + action,
            "workers " + WorkerList(workers) + "; holds " +
                std::to_string(job.allocation.gpus.size()) + " (version " +
                std::to_string(job.elastic.version) + ")" +
                (note.empty() ? "" : "; " + note));
  if (!Persist(job, &event).ok()) {
    (void)state.Reserve(id, before);
    return false;
  }
  (void)state.Reserve(id, job.allocation);
  it->second = job;
  WriteAllocationFile(job);
  elastic.Notify(id);
  allocation_changed.notify_all();
  dirty = true;
  return true;
}

bool Service::Impl::AskBackFor(const Allocation& allocation,
                               const std::string& pool) {
  const std::vector<ElasticHolding> holdings = ElasticHoldings(&pool);
  // Extras asked back before and not gone yet: still waited for.
  bool asked = std::any_of(holdings.begin(), holdings.end(),
                           [&](const auto& j) TESSERA_REQUIRES(mu) {
                             return !j.releasing->empty() &&
                                    SharesNode(state.topology(), *j.allocation,
                                               allocation);
                           });
  for (ExtrasBack& back : ExtrasInTheWay(state, allocation, holdings)) {
    const Job& job = jobs.running.at(back.id);
    ElasticState st = job.elastic;
    st.releasing.insert(st.releasing.end(), back.workers.begin(),
                        back.workers.end());
    std::sort(st.releasing.begin(), st.releasing.end());
    st.release_by = Now() + options.elastic_release_grace_s;
    const bool per_worker = PerWorker(job);
    if (ApplyElastic(back.id, job.allocation, std::move(st), "shrink asked",
                     back.workers)) {
      asked = true;
      // Per-worker: the launcher stops their processes; their shares are
      // released when they have exited (WorkersEnded).
      if (per_worker) {
        elastic.StopWorkers(back.id, back.workers,
                            options.elastic_release_grace_s, false);
      }
    }
  }
  if (asked) elastic.Reclaiming(pool);
  return asked;
}

bool Service::Impl::MakeRoom(RoundView& view, const Job& job,
                             const std::string& pool, Allocation& allocation) {
  if (state.Fits(allocation)) return true;
  const bool extras =
      std::any_of(jobs.running.begin(), jobs.running.end(), [&](const auto& r) {
        const Job& e = r.second;
        return e.request.elastic && e.request.pool == pool &&
               e.allocation.gpus.size() >
                   static_cast<size_t>(e.request.elastic->min);
      });
  if (!extras) return true;  // a stale plan: BeginStart puts it back
  Replacer replace;
  if (!job.request.model) {
    replace = [&](const ClusterState& s) TESSERA_REQUIRES(round_mu) {
      return Allocate(view.snap, s, job);
    };
  }
  if (std::optional<Allocation> now =
          StartBesideExtras(state, allocation, replace, view.waited_for)) {
    allocation = std::move(*now);
    return true;
  }
  if (!AskBackFor(allocation, pool)) return true;
  for (const GpuShare& g : allocation.gpus) view.waited_for.insert(g.gpu);
  return false;
}

void Service::Impl::ReclaimOverdue(double now) {
  std::vector<JobId> due;
  for (const auto& [id, job] : jobs.running) {
    if (!job.elastic.releasing.empty() && now >= job.elastic.release_by) {
      due.push_back(id);
    }
  }
  for (const JobId id : due) {
    const Job& job = jobs.running.at(id);
    const std::vector<int> dropped = job.elastic.releasing;
    service_internal::ElasticWithout next =
        service_internal::DropWorkers(job, {dropped.begin(), dropped.end()});
    const bool per_worker = PerWorker(job);
    if (ApplyElastic(id, next.allocation, std::move(next.state), "reclaimed",
                     dropped) &&
        per_worker) {
      // Their processes outlived the grace: killed now.
      elastic.StopWorkers(id, dropped, 0, /*reclaimed=*/true);
    }
  }
}

void Service::Impl::GrowElastic() {
  std::set<std::string> busy = elastic.reclaiming();
  for (const auto& [id, job] : jobs.running) {
    if (!job.elastic.releasing.empty()) busy.insert(job.request.pool);
  }
  std::vector<JobId> growing;
  {
    const std::vector<ElasticHolding> holdings = ElasticHoldings();
    for (const size_t i : GrowOrder(holdings)) {
      const JobId id = holdings[i].id;
      const Job& job = jobs.running.at(id);
      if (!busy.count(job.request.pool) && !job.elastic.grow_stopped &&
          !elastic.Dying(id) && !cancel_requested.count(id) &&
          !preempt_requested.count(id)) {
        growing.push_back(id);
      }
    }
  }
  // Under the queue tree extras are their queue's borrowed use: a job
  // grows only while no queue from its own up would pass its limit.
  QueueTree held;
  if (!tree.empty() && !growing.empty()) held = HeldTree();
  for (const JobId id : growing) {
    const Job& job = jobs.running.at(id);
    const int want =
        job.request.elastic->max - static_cast<int>(job.allocation.gpus.size());
    std::vector<int> gpus =
        FreeWorkerGpus(state, job.allocation, *job.request.resources, want);
    ElasticState st = job.elastic;
    std::vector<int> workers;
    Allocation next;
    for (; !gpus.empty(); gpus.pop_back()) {  // as many as the limits allow
      workers = st.workers;
      next = WithWorkers(job.allocation, *job.request.resources, workers, gpus);
      if (tree.empty() || ExtrasWithinLimits(held, job, next)) break;
    }
    if (gpus.empty()) continue;
    std::vector<int> added(workers.end() - static_cast<long>(gpus.size()),
                           workers.end());
    st.workers = std::move(workers);
    const bool grew = ApplyElastic(id, next, std::move(st), "grow", added);
    if (grew && !tree.empty()) held = HeldTree();  // for the jobs after it
    if (grew && PerWorker(jobs.running.at(id))) {
      // The new workers' processes, started by the round thread.
      elastic.StartWorkers(LaunchSpecFor(jobs.running.at(id), state.topology(),
                                         nullptr, &added));
    }
  }
}

void Service::Impl::WorkersEnded(
    JobId id, const std::vector<launch::WorkerExited>& ended) {
  std::vector<int> reaped;
  for (const launch::WorkerExited& w : ended) reaped.push_back(w.worker);
  elastic.Reaped(id, reaped);
  auto it = jobs.running.find(id);
  if (it == jobs.running.end() || !PerWorker(it->second)) return;
  const Job& job = it->second;
  std::set<int> drop;
  std::string note;
  bool unasked = false, all_asked = true;
  for (const launch::WorkerExited& w : ended) {
    note +=
        (note.empty() ? "" : "; ") + std::string("worker ") +
        std::to_string(w.worker) + " ended (" +
        (w.exit_code ? "exit code " + std::to_string(*w.exit_code) : w.reason) +
        ")";
    const auto& held = job.elastic.workers;
    if (std::find(held.begin(), held.end(), w.worker) == held.end()) {
      continue;  // reclaimed already
    }
    const auto& asked = job.elastic.releasing;
    const bool was_asked =
        std::find(asked.begin(), asked.end(), w.worker) != asked.end();
    unasked = unasked || !was_asked;
    if (IsExtra(job, w.worker)) {
      drop.insert(w.worker);
      all_asked = all_asked && was_asked;
    }
  }
  if (note.empty()) return;
  ElasticState st = job.elastic;
  st.grow_stopped = st.grow_stopped || unasked;
  if (drop.empty()) {
    // Guaranteed workers keep their shares until the job ends.
    Job updated = job;
    updated.elastic = std::move(st);
    const JobEvent event = Event(id, nullptr, "elastic worker ended", note);
    if (Persist(updated, &event).ok()) it->second = std::move(updated);
    return;
  }
  service_internal::ElasticWithout next =
      service_internal::DropWorkers(job, drop);
  next.state.grow_stopped = st.grow_stopped;
  // Released: asked back and gone; ended: gone on its own.
  ApplyElastic(id, next.allocation, std::move(next.state),
               all_asked ? "released" : "ended", {drop.begin(), drop.end()},
               nullptr, note);
  wake.notify_all();
}

std::vector<launch::WorkerExited> Service::Impl::RunWorkerCalls(
    std::vector<launch::LaunchSpec> starts, std::vector<WorkerStop> stops) {
  for (const WorkerStop& stop : stops) {
    launcher->StopWorkers(stop.id, stop.workers, stop.grace_s);
  }
  std::vector<launch::WorkerExited> failed;
  for (const launch::LaunchSpec& spec : starts) {
    const Status s = launcher->StartWorkers(spec);
    if (s.ok()) continue;
    for (const launch::LaunchWorker& w : spec.workers) {
      failed.push_back(
          {spec.id, w.id, std::nullopt, "not started: " + s.error().message});
    }
  }
  return failed;
}

Result<Job> Service::WaitAllocation(JobId id, int64_t after, double wait_s) {
  const std::shared_ptr<Impl> impl = Current();
  TESSERA_RETURN_IF_ERROR(impl->LeaderOnly());
  Impl& m = *impl;
  const auto deadline =
      std::chrono::steady_clock::now() +
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>(std::max(0.0, wait_s)));
  {
    MutexLock lock(m.mu);
    while (true) {
      const Job* live = m.jobs.Find(id);
      if (!live) break;  // ended or unknown: the store says, below
      if (!live->request.elastic) {
        return BadInput("job " + std::to_string(id) + " is not elastic");
      }
      // Only a running job's allocation changes.
      if (live->elastic.version > after || live->state != JobState::kRunning ||
          m.stopping) {
        return *live;
      }
      if (!lock.WaitUntil(m.allocation_changed, deadline)) {
        // Looked at once more below, then answered unchanged.
        if (auto r = m.jobs.running.find(id); r != m.jobs.running.end()) {
          return r->second;
        }
      }
    }
  }
  auto stored = m.store->Get(id);
  if (!stored) return stored.error();
  if (!stored->has_value()) return BadInput("no job " + std::to_string(id));
  if (!(*stored)->request.elastic) {
    return BadInput("job " + std::to_string(id) + " is not elastic");
  }
  return std::move(**stored);
}

Result<Job> Service::ReleaseWorkers(JobId id, const std::vector<int>& workers,
                                    const User* by) {
  const std::shared_ptr<Impl> impl = Current();
  TESSERA_RETURN_IF_ERROR(impl->LeaderOnly());
  Impl& m = *impl;
  MutexLock lock(m.mu);
  auto it = m.jobs.running.find(id);
  if (it == m.jobs.running.end()) {
    return Infeasible("job " + std::to_string(id) + " is not running");
  }
  const Job& job = it->second;
  if (!job.request.elastic) {
    return BadInput("job " + std::to_string(id) + " is not elastic");
  }
  if (Impl::PerWorker(job)) {
    return BadInput(
        "job " + std::to_string(id) +
        " runs a process per worker: a worker is released when its process "
        "exits (docs/elastic.md, \"The two launch modes\")");
  }
  std::set<int> drop;
  for (size_t i = 0; i < workers.size(); ++i) {
    const int w = workers[i];
    const std::string field = "workers[" + std::to_string(i) + "]";
    if (std::find(job.elastic.workers.begin(), job.elastic.workers.end(), w) ==
        job.elastic.workers.end()) {
      return BadInput(field + ": the job holds no worker " + std::to_string(w));
    }
    if (!IsExtra(job, w)) {
      return BadInput(field + ": worker " + std::to_string(w) +
                      " is guaranteed (below min " +
                      std::to_string(job.request.elastic->min) +
                      "); only extras are released");
    }
    drop.insert(w);
  }
  if (drop.empty()) return BadInput("workers: name the workers released");
  service_internal::ElasticWithout next =
      service_internal::DropWorkers(job, drop);
  if (!m.ApplyElastic(id, next.allocation, std::move(next.state), "released",
                      {drop.begin(), drop.end()}, by)) {
    return Unavailable("the job store failed; try again");
  }
  m.wake.notify_all();
  return m.jobs.running.at(id);
}

}  // namespace tessera::service
