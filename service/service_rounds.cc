// The service's scheduling rounds: reaping exits, running every pool's
// policy, starting what it admits, and recovering after a restart.
//
// A round holds `round_mu` throughout and `mu` only in short steps:
//   1. (no mu) the launcher: stops asked for, then Poll;
//   2. (mu) exits and start outcomes the store has to take, a snapshot;
//   3. (no mu) models not loaded yet, then every pool's policy on the
//      snapshot (a split's placement can take seconds);
//   4. (mu) the decisions checked against the state now: each start is
//      reserved and stored as `starting` before the launcher sees it;
//   5. (no mu) the launcher starts them (sbatch may hang for seconds);
//   6. (mu) the outcomes, stored.
// So no API call waits on a launcher, a model or a policy, and a crash at
// any point leaves each job either not started or `starting` in the store,
// which Recover reconciles with the launcher instead of starting it again.
#include <algorithm>
#include <chrono>
#include <csignal>

#include "scheduler/elastic.h"
#include "service/service_internal.h"

namespace tessera::scheduler {

using service_internal::EstimateHeld;
using service_internal::HeldBy;
using service_internal::OverQuota;
using service_internal::PoolKind;
using service_internal::QuotaUse;
using service_internal::TeamQuota;
using service_internal::UserQuota;

namespace {

// What each user and team holds (running and starting jobs).
struct Holdings {
  std::map<std::string, QuotaUse> users, teams;
  void Add(const Job& j, const QuotaUse& u) {
    for (QuotaUse* use :
         {&users[j.user], j.team.empty() ? nullptr : &teams[j.team]}) {
      if (!use) continue;
      use->running += u.running;
      use->gpu_milli += u.gpu_milli;
      use->gpu_memory_mib += u.gpu_memory_mib;
    }
  }
  // Why `plus` more for `j`'s user or team breaks a quota ("" if not).
  std::string Over(const Quotas& q, const Job& j, const QuotaUse& plus) {
    std::string why = OverQuota(UserQuota(q, j.user), users[j.user], plus,
                                "user '" + j.user + "'");
    if (!why.empty()) return why;
    if (const Quota* team = TeamQuota(q, j.team)) {
      return OverQuota(*team, teams[j.team], plus, "team '" + j.team + "'");
    }
    return "";
  }
};

}  // namespace

std::shared_ptr<const SizedModel> Service::Impl::LoadModel(
    const Job& job) const {
  if (!job.request.model) return nullptr;
  // The same rules as a submission: the roots or the upload store.
  auto sized =
      SizeModel(*job.request.model,
                PoolKind(options.topology, job.request.pool), model_files);
  if (!sized) return nullptr;
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

bool Service::Impl::Finish(const Exited& e) {
  auto it = running.find(e.id);
  if (it == running.end()) {
    // Its start outcome is not stored yet: the exit waits for it.
    if (starting.count(e.id)) unrecorded_exits[e.id] = e;
    return starting.count(e.id) == 0;
  }
  Job job = it->second;
  job.allocation = {};
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
  } else {
    job.finished_at = Now();
    if (cancel_requested.count(job.id) || e.cancelled) {
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
      // A per-worker job's status is its guaranteed workers': which failed.
      if (e.exit_code && PerWorker(job) && !e.reason.empty()) {
        job.reason = e.reason + ": " + job.reason;
      }
    }
  }
  const JobEvent event =
      Event(job.id, nullptr, std::string(JobStateName(job.state)),
            job.reason.empty() ? std::string("exit code 0") : job.reason);
  if (!Persist(job, &event).ok()) {
    unrecorded_exits[e.id] = e;  // still running, in memory as on disk
    return false;
  }
  unrecorded_exits.erase(e.id);
  running.erase(it);
  state.Release(job.id);
  preempt_requested.erase(job.id);
  preempt_reasons.erase(job.id);
  reclaim_victims.erase(job.id);
  cancel_requested.erase(job.id);
  if (preempted) {
    Requeue(std::move(job));
  } else {
    models.erase(job.id);
    start_decisions.erase(job.id);
    metrics.finished++;
  }
  progress.erase(job.id);
  allocation_changed.notify_all();  // an elastic job's long-polls end
  return true;
}

void Service::Impl::Requeue(Job job) {
  queue.push_back(std::move(job));
  std::sort(queue.begin(), queue.end(),
            [](const Job& a, const Job& b) { return a.id < b.id; });
}

std::optional<Job> Service::Impl::BeginStart(Job job,
                                             const Allocation& allocation) {
  if (!state.Fits(allocation)) {  // the snapshot was stale
    Requeue(std::move(job));
    return std::nullopt;
  }
  Job begun = job;
  begun.state = JobState::kStarting;
  begun.allocation = allocation;
  begun.reason.clear();
  BeginElastic(begun);
  if (auto p = pending_plans.find(job.id); p != pending_plans.end()) {
    begun.plan = p->second;
  }
  const JobEvent event =
      Event(begun.id, nullptr, "starting", Where(state.topology(), allocation));
  if (!Persist(begun, &event).ok()) {
    Requeue(std::move(job));  // queued, in memory as on disk
    return std::nullopt;
  }
  (void)state.Reserve(begun.id, allocation);
  if (begun.request.elastic) WriteAllocationFile(begun);
  starting.emplace(begun.id, begun);
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
  starting.erase(outcome.id);
  if (outcome.state == JobState::kRunning) {
    metrics.queue_wait.Observe(outcome.started_at - outcome.submitted_at);
    running.emplace(outcome.id, outcome);
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

void Service::Impl::EndStart(JobId id, const Result<Launched>& launched) {
  auto it = starting.find(id);
  if (it == starting.end()) return;
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

void Service::Impl::RunRound() {
  std::lock_guard round(round_mu);
  // 1. The launcher, without the lock.
  std::vector<JobId> stops;
  std::vector<JobId> to_reconcile;
  {
    std::lock_guard lock(mu);
    stops.swap(stop_requests);
    to_reconcile.assign(unreconciled.begin(), unreconciled.end());
  }
  for (const JobId id : stops) launcher->Stop(id, options.kill_grace_s);
  std::vector<std::pair<JobId, Reconciled>> reconciled;
  for (const JobId id : to_reconcile) {
    reconciled.emplace_back(id, launcher->Reconcile(id));
  }
  std::vector<Exited> exits = launcher->Poll();
  // Per-worker elastic jobs' workers that ended while their job runs on.
  std::map<JobId, std::vector<WorkerExited>> worker_exits;
  for (WorkerExited& w : launcher->TakeWorkerExits()) {
    worker_exits[w.id].push_back(std::move(w));
  }

  // 2. What the store has to take, and a snapshot to plan on.
  RoundSnapshot snap{state, {}, {}, {}, {}, 0, {}, {}, {}};
  std::vector<JobId> to_load;
  const double now = Now();
  bool reclaiming = false;  // reclaim victims still stopping (their grace)
  std::set<JobId> owners;   // queued jobs that reclaimed room
  {
    std::lock_guard lock(mu);
    for (const auto& [id, r] : reconciled) {
      auto it = starting.find(id);
      if (r.kind == Reconciled::Kind::kUnknown || it == starting.end()) {
        continue;
      }
      unreconciled.erase(id);
      Job job = it->second;
      starting.erase(it);
      state.Release(id);
      ApplyReconciled(std::move(job), r);
    }
    for (const auto& [id, outcome] : std::map(unrecorded_starts)) {
      RecordStart(outcome);
    }
    for (const auto& [id, e] : std::map(unrecorded_exits)) Finish(e);
    for (const Exited& e : exits) Finish(e);
    for (const auto& [id, ended] : worker_exits) WorkersEnded(id, ended);
    if (now < launch_retry_at) return;  // the engine was unreachable
    ReclaimOverdue(now);
    elastic_reclaiming.clear();
    reclaiming = !reclaim_victims.empty();
    std::erase_if(reclaimers, [&](JobId id) {
      return std::none_of(queue.begin(), queue.end(),
                          [id](const Job& j) { return j.id == id; });
    });
    owners = reclaimers;
    snap.state = PlanningState();  // extras count as free
    snap.queue = queue;
    for (const auto& [id, j] : running) snap.running.push_back(j);
    snap.held = snap.running;
    for (const auto& [id, j] : starting) snap.held.push_back(j);
    FillDecisionInputs(snap, now);
    for (const Job& j : queue) {
      if (!j.request.model) continue;
      auto it = models.find(j.id);
      if (it != models.end()) {
        snap.models.emplace(j.id, it->second);
      } else {
        to_load.push_back(j.id);
      }
    }
  }

  // 3. Plan without the lock: models first seen since a restart, then
  // every pool's policy.
  for (const JobId id : to_load) {
    auto j = std::find_if(snap.queue.begin(), snap.queue.end(),
                          [&](const Job& q) { return q.id == id; });
    snap.models[id] = LoadModel(*j);
  }
  struct PoolDecision {
    std::string pool;
    Decision decision;
    double seconds = 0;
  };
  std::vector<PoolDecision> decisions;
  pending_plans.clear();
  pending_pictures.clear();
  pending_decisions.clear();
  // Jobs a quota holds back are not offered to the policies.
  const bool quotas = !options.quotas.empty();
  std::map<JobId, std::string> quota_blocked;
  Holdings planned;
  if (quotas) {
    for (const Job& j : snap.held) planned.Add(j, HeldBy(j.allocation));
  }
  // The queue tree's plan: what to offer, reclaim and promote.
  const bool queue_tree = !tree.empty();
  TreePlan tree_plan;
  std::set<JobId> offered;
  if (queue_tree) {
    tree_plan = PlanQueues(snap, reclaiming, owners);
    offered.insert(tree_plan.offer.begin(), tree_plan.offer.end());
    for (const auto& [id, why] : tree_plan.held) quota_blocked[id] = why;
  }
  for (const std::string& pool : snap.state.topology().pools) {
    std::vector<QueuedJob> waiting;
    std::unordered_map<JobId, const Job*> by_id;
    for (const Job& j : snap.queue) {
      if (j.request.pool != pool) continue;
      if (queue_tree && !offered.count(j.id)) continue;
      if (quotas) {
        // Offered in queue order as if the earlier ones all start: a job
        // the quota could not hold beside them waits for the next round.
        const QuotaUse more = EstimateHeld(j, snap.state.topology());
        std::string why = planned.Over(options.quotas, j, more);
        if (!why.empty()) {
          quota_blocked[j.id] = std::move(why);
          continue;
        }
        planned.Add(j, more);
      }
      waiting.push_back(service_internal::AsQueued(j));
      by_id[j.id] = &j;
    }
    if (waiting.empty()) continue;
    std::vector<RunningJob> active;
    for (const Job& j : snap.running) {
      if (j.request.pool != pool) continue;
      active.push_back(service_internal::AsRunning(j));
    }
    const Allocator allocate = [&](const ClusterState& s, const QueuedJob& q) {
      return Allocate(snap, s, *by_id.at(q.id));
    };
    const auto t0 = std::chrono::steady_clock::now();
    Decision d = queue_tree
                     ? ScheduleWithTree(*policies.at(pool), tree_plan, waiting,
                                        active, snap.state, allocate, now)
                     : policies.at(pool)->Schedule(waiting, active, snap.state,
                                                   allocate, now);
    decisions.push_back(
        {pool, std::move(d),
         std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
             .count()});
  }

  // 4. The decisions against the state now: reserved and stored as
  // `starting` before anything is launched.
  std::vector<PendingStart> starts;
  {
    std::lock_guard lock(mu);
    for (const JobId id : to_load) {
      if (snap.models[id]) models.emplace(id, snap.models[id]);
    }
    // Quotas against what is held now, this round's starts included.
    Holdings held;
    if (quotas) {
      for (const auto& [id, j] : running) held.Add(j, HeldBy(j.allocation));
      for (const auto& [id, j] : starting) held.Add(j, HeldBy(j.allocation));
    }
    quota_waits = std::move(quota_blocked);
    QueueTree tree_held;
    if (queue_tree) {
      ApplyQueuePlan(tree_plan);
      tree_held = HeldTree();
    }
    for (auto& [id, d] : pending_decisions) {
      // Only for jobs still queued (not cancelled since the snapshot).
      const bool queued =
          std::any_of(queue.begin(), queue.end(),
                      [id](const Job& j) { return j.id == id; });
      if (queued) start_decisions[id] = std::move(d);
    }
    for (PoolDecision& pd : decisions) {
      metrics.decision_latency.Observe(pd.seconds);
      const Decision& d = pd.decision;
      if (!d.preempt.empty()) {
        // Start nothing until the victims have exited and freed their GPUs.
        for (const JobId v : d.preempt) {
          if (running.count(v) && preempt_requested.insert(v).second) {
            stop_requests.push_back(v);
            (void)Record(Event(v, nullptr, "preemption requested",
                               "for a higher-priority job of pool " + pd.pool));
          }
        }
        continue;
      }
      for (const auto& [id, chosen] : d.start) {
        auto it = std::find_if(queue.begin(), queue.end(),
                               [&](const Job& j) { return j.id == id; });
        if (it == queue.end()) continue;  // cancelled meanwhile
        // Planned on elastic jobs' extras: placed on free GPUs if it fits
        // there now, else the extras are asked back and it waits.
        Allocation allocation = chosen;
        if (!MakeRoom(snap, *it, pd.pool, allocation)) continue;
        // Both the flat quotas and the tree are checked before either
        // counts the job: a job one of them refuses stays queued and is
        // counted by neither (else a job the tree refused would still
        // hold the flat quota against this round's later starts).
        if (quotas) {
          std::string why = held.Over(options.quotas, *it, HeldBy(allocation));
          if (!why.empty()) {
            quota_waits[id] = std::move(why);
            continue;  // stays queued
          }
        }
        if (queue_tree) {
          std::string why;
          if (!MarkStart(tree_held, *it, allocation, &why)) {
            quota_waits[id] = std::move(why);
            continue;  // stays queued
          }
        }
        if (quotas) held.Add(*it, HeldBy(allocation));
        Job job = std::move(*it);
        queue.erase(it);
        std::optional<Job> begun = BeginStart(std::move(job), allocation);
        if (!begun) continue;
        PendingStart p;
        p.job = std::move(*begun);
        if (auto m = models.find(id); m != models.end()) p.model = m->second;
        if (auto pic = pending_pictures.find(id);
            pic != pending_pictures.end()) {
          p.pictures = std::move(pic->second);
        }
        starts.push_back(std::move(p));
      }
    }
    GrowElastic();
  }
  pending_plans.clear();
  pending_pictures.clear();

  // 5. The launcher, without the lock: the job's environment (plan files
  // written for a split job), then the start itself.
  std::vector<Result<Launched>> outcomes;
  for (PendingStart& p : starts) {
    const Topology& t = snap.state.topology();
    if (p.pictures) WritePlanPictures(p.job.id, p.pictures());
    p.spec.id = p.job.id;
    p.spec.name = p.job.request.name;
    p.spec.user = p.job.user;
    p.spec.command = p.job.request.command;
    p.spec.env = LaunchEnv(p.job, t, p.model.get());
    p.spec.log_dir = options.log_dir;
    p.spec.parts = LaunchParts(t, p.job.allocation);
    p.spec.ignore_sigusr1 = p.job.request.elastic.has_value();
    if (PerWorker(p.job)) {  // a process per worker
      p.spec.workers = WorkerLaunches(p.job, t, p.job.elastic.workers);
      p.spec.guaranteed_workers = p.job.request.elastic->min;
    }
    outcomes.push_back(launcher->Start(p.spec));
  }
  std::vector<JobId> preempt_stops, elastic_notices;
  std::vector<LaunchSpec> grown;
  std::vector<WorkerStop> shrunk;
  {
    std::lock_guard lock(mu);
    for (size_t i = 0; i < starts.size(); ++i) {
      EndStart(starts[i].job.id, outcomes[i]);
    }
    preempt_stops.swap(stop_requests);
    elastic_notices.swap(notices);
    grown.swap(worker_starts);
    shrunk.swap(worker_stops);
  }
  // 6. Preemptions and cancels decided meanwhile, per-worker jobs' workers
  // to start and stop, and elastic jobs whose allocation changed, without
  // the lock.
  for (const JobId id : preempt_stops) launcher->Stop(id, options.kill_grace_s);
  const std::vector<WorkerExited> not_started =
      RunWorkerCalls(std::move(grown), std::move(shrunk));
  for (const JobId id : elastic_notices) launcher->Notify(id, SIGUSR1);
  if (!not_started.empty()) {
    std::lock_guard lock(mu);
    std::map<JobId, std::vector<WorkerExited>> by_job;
    for (const WorkerExited& w : not_started) by_job[w.id].push_back(w);
    for (const auto& [id, ended] : by_job) WorkersEnded(id, ended);
  }
}

void Service::Impl::Loop() {
  while (true) {
    {
      std::lock_guard lock(mu);
      if (stopping) return;
      dirty = false;
    }
    RunRound();
    std::unique_lock lock(mu);
    wake.wait_for(lock, std::chrono::duration<double>(options.tick_s),
                  [&] { return stopping || dirty; });
  }
}

void Service::Impl::ApplyReconciled(Job job, const Reconciled& r) {
  if (r.kind == Reconciled::Kind::kRunning && state.Fits(job.allocation) &&
      state.Reserve(job.id, job.allocation).ok()) {
    job.state = JobState::kRunning;
    if (job.started_at == 0) job.started_at = Now();
    job.pid = r.launched.pid;
    job.pid_start = r.launched.start_time;
    job.reason.clear();
    const JobEvent event =
        Event(job.id, nullptr, "adopted",
              "running after a restart (pid " + std::to_string(job.pid) + ")");
    if (Persist(job, &event).ok()) {
      running.emplace(job.id, std::move(job));
      return;
    }
    // Not stored: it stays `starting`, running, and is tried again.
    unrecorded_starts[job.id] = job;
    job.state = JobState::kStarting;
    starting.emplace(job.id, std::move(job));
    return;
  }
  if (r.kind == Reconciled::Kind::kRunning) {
    // Running, but its reservation collides: the state is not what the
    // store says. Stop it rather than run two jobs on one share (the
    // round thread sends the signal).
    stop_requests.push_back(job.id);
  }
  job.state = JobState::kFailed;
  job.reason = "lost: the service stopped while starting it (" +
               (r.detail.empty() ? std::string("not found") : r.detail) + ")";
  job.allocation = {};
  job.finished_at = Now();
  const JobEvent event = Event(job.id, nullptr, "failed", job.reason);
  if (!Persist(job, &event).ok()) {
    job.state = JobState::kStarting;
    unrecorded_starts[job.id] = job;
    starting.emplace(job.id, std::move(job));
  }
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
  auto jobs = store->LoadAll(/*active_only=*/true);
  if (!jobs) return jobs.error();
  for (Job& job : *jobs) {
    if (job.state == JobState::kQueued || job.state == JobState::kPreempted) {
      queue.push_back(std::move(job));
      continue;
    }
    if (job.state == JobState::kStarting) {
      // Maybe started, maybe not: the launcher knows; never start it again.
      Reconciled r = launcher->Reconcile(job.id);
      if (r.kind == Reconciled::Kind::kRunning && PerWorker(job) &&
          launcher
              ->AdoptWorkers(job.id, job.elastic.workers,
                             job.request.elastic->min)
              .empty()) {
        r = {Reconciled::Kind::kNotFound, {}, "its workers ended"};
      }
      if (r.kind == Reconciled::Kind::kUnknown) {
        (void)state.Reserve(job.id, job.allocation);  // held while unknown
        unreconciled.insert(job.id);
        starting.emplace(job.id, std::move(job));
        continue;
      }
      ApplyReconciled(std::move(job), r);
      continue;
    }
    if (!job.origin.empty()) {  // a reservation: no process to adopt
      if (state.Fits(job.allocation) &&
          state.Reserve(job.id, job.allocation).ok()) {
        reserved.emplace(job.id, std::move(job));
        continue;
      }
    }
    const bool alive =
        job.pid > 0 && state.Fits(job.allocation) &&
        (PerWorker(job) ? AdoptWorkerJob(job)
                        : launcher->Adopt(job.id, job.pid, job.pid_start));
    if (alive && state.Reserve(job.id, job.allocation).ok()) {
      running.emplace(job.id, std::move(job));
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

}  // namespace tessera::scheduler
