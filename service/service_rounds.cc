// The service's scheduling rounds: reaping exits, running every pool's
// policy, starting what it admits.
//
// A round (RunRound) holds `round_mu` throughout and `mu` only in short
// steps, each a function below:
//   1. (no mu) CollectLauncherEvents: stops asked for, then Poll;
//   2. (mu) RecordLauncherEvents: exits and start outcomes the store has
//      to take; BeginRound; TakeSnapshot;
//   3. (no mu) Plan: models not loaded yet, then every pool's policy on
//      the snapshot (a split's placement can take seconds);
//   4. (mu) Commit: the decisions checked against the state now, each
//      start reserved and stored as `starting` before the launcher sees it;
//   5. (no mu) Launch: the launcher starts them (sbatch may hang for
//      seconds); then (mu) the outcomes, stored, and the running elastic
//      jobs, those just started among them, grow into free GPUs;
//   6. (no mu) Flush: stops, worker starts and notices decided meanwhile.
// So no API call waits on a launcher, a model or a policy, and a crash at
// any point leaves each job either not started or `starting` in the store,
// which Recover reconciles with the launcher instead of starting it again.
#include <algorithm>
#include <chrono>
#include <csignal>

#include "scheduler/elastic.h"
#include "service/service_internal.h"

namespace tessera::service {

// What this file uses of scheduler/, beyond what its headers name.
using service_internal::EstimateHeld;
using service_internal::HeldBy;
using service_internal::Holdings;
using service_internal::QuotaUse;

void Service::Impl::RunRound() {
  MutexLock round(round_mu);
  if (replicated) ApplyInbox();
  const LauncherNews news = CollectLauncherEvents();
  const double now = Now();
  const std::optional<service_internal::UsageSample> sample = SampleUsage(now);
  std::optional<RoundView> view;
  {
    MutexLock lock(mu);
    RecordLauncherEvents(news);
    if (sample) ApplyUsage(*sample);
    StoreLearned(now);
    if (now < launch_retry_at) return;  // the engine was unreachable
    BeginRound(now);
    view.emplace(TakeSnapshot(now));
  }
  RoundPlan plan = Plan(*view, now);
  std::vector<PendingStart> starts;
  // A replica starts nothing unless its lease surely holds (it may have
  // been paused past it): checked before the starts are stored and again
  // before the launcher runs them.
  if (!may_act || may_act()) {
    MutexLock lock(mu);
    starts = Commit(*view, plan);
  }
  pending_splits.clear();
  std::vector<Result<launch::Launched>> outcomes;
  if (!starts.empty() && may_act && !may_act()) {
    outcomes.assign(starts.size(),
                    Unavailable("this replica's lease may have lapsed"));
  } else {
    outcomes = Launch(starts, view->snap.state.topology());
  }
  LauncherCalls calls;
  {
    MutexLock lock(mu);
    for (size_t i = 0; i < starts.size(); ++i) {
      EndStart(starts[i].job.id, outcomes[i]);
    }
    // After the round's starts, the jobs it started among them: free GPUs
    // of their nodes go to the running elastic jobs (docs/elastic.md).
    GrowElastic();
    calls = TakeLauncherCalls();
  }
  Flush(std::move(calls));
}

// 1. The launcher, without the lock: the stops API calls asked for, the
// starts a restart left unknown, then exits.
LauncherNews Service::Impl::CollectLauncherEvents() {
  std::vector<JobId> stops;
  std::vector<JobId> to_reconcile;
  {
    MutexLock lock(mu);
    stops.swap(stop_requests);
    to_reconcile.assign(unreconciled.begin(), unreconciled.end());
  }
  for (const JobId id : stops) launcher->Stop(id, options.kill_grace_s);
  LauncherNews news;
  for (const JobId id : to_reconcile) {
    news.reconciled.emplace_back(id, launcher->Reconcile(id));
  }
  news.exits = launcher->Poll();
  // A job that failed may have run out of GPU memory: its stderr says
  // (read here, without the lock).
  for (const launch::Exited& e : news.exits) {
    if (e.cancelled || (e.exit_code && *e.exit_code == 0)) continue;
    if (auto oom =
            launch::FindOutOfMemoryInFile(launcher->LogPath(e.id, true))) {
      news.oom.emplace(e.id, std::move(*oom));
    }
  }
  for (launch::WorkerExited& w : launcher->TakeWorkerExits()) {
    news.worker_exits[w.id].push_back(std::move(w));
  }
  return news;
}

// 2a. What the store has to take: reconciled starts, outcomes and exits a
// failed write left over, then this round's exits.
void Service::Impl::RecordLauncherEvents(const LauncherNews& news) {
  for (const auto& [id, r] : news.reconciled) {
    auto it = jobs.starting.find(id);
    if (r.kind == launch::Reconciled::Kind::kUnknown ||
        it == jobs.starting.end()) {
      continue;
    }
    unreconciled.erase(id);
    Job job = it->second;
    jobs.starting.erase(it);
    state.Release(id);
    ApplyReconciled(std::move(job), r);
  }
  for (const auto& [id, outcome] : std::map(unrecorded_starts)) {
    RecordStart(outcome);
  }
  for (const auto& [id, e] : std::map(unrecorded_exits)) Finish(e);
  for (const auto& [id, oom] : news.oom) oom_exits.insert_or_assign(id, oom);
  for (const launch::Exited& e : news.exits) Finish(e);
  for (const auto& [id, ended] : news.worker_exits) WorkersEnded(id, ended);
}

// 2b. Extras past their release deadline are reclaimed; which pools were
// asked for extras, and which jobs room was reclaimed for, start afresh
// (a reclaimer no longer queued has started or gone).
void Service::Impl::BeginRound(double now) {
  ReclaimOverdue(now);
  elastic.BeginRound();
  std::erase_if(reclaimers, [&](JobId id) TESSERA_REQUIRES(mu) {
    return std::none_of(jobs.queue.begin(), jobs.queue.end(),
                        [id](const Job& j) { return j.id == id; });
  });
}

// 2c. Copies of what the policies plan on, so that they run without the
// lock: elastic jobs hold only their guaranteed part (extras count as
// free), and the models already loaded.
RoundView Service::Impl::TakeSnapshot(double now) {
  RoundView view{
      RoundSnapshot{PlanningState(), jobs.queue, {}, {}, {}, 0, {}, {}, {}},
      {},
      !reclaim_victims.empty(),
      reclaimers,
      {},
      {}};
  RoundSnapshot& snap = view.snap;
  for (const auto& [id, j] : jobs.running) snap.running.push_back(j);
  snap.held = snap.running;
  for (const auto& [id, j] : jobs.starting) snap.held.push_back(j);
  FillDecisionInputs(snap, now);
  for (const Job& j : jobs.queue) {
    if (!j.request.model) continue;
    auto it = models.find(j.id);
    if (it != models.end()) {
      snap.models.emplace(j.id, it->second);
    } else {
      view.to_load.push_back(j.id);
      const scheduler::LearnedSize l = learned.Size(
          service_internal::FingerprintOf(*j.request.model),
          j.demand.gpu_memory_mib,
          service_internal::PoolKind(options.topology, j.request.pool));
      if (l.step_s) view.measured_step_s[j.id] = *l.step_s;
    }
  }
  return view;
}

// 3. Without the lock: models first seen since a restart, then the round
// (scheduler/round.h) on the snapshot: the queue tree's plan, every pool's
// policy (a split's placement can take seconds). A flat quota counts each
// job offered as if the earlier ones all start: a job it could not hold
// beside them waits for the next round.
RoundPlan Service::Impl::Plan(RoundView& view, double now) {
  RoundSnapshot& snap = view.snap;
  for (const JobId id : view.to_load) {
    auto j = std::find_if(snap.queue.begin(), snap.queue.end(),
                          [&](const Job& q) { return q.id == id; });
    const auto step = view.measured_step_s.find(id);
    snap.models[id] =
        LoadModel(*j, step == view.measured_step_s.end() ? 0 : step->second);
  }
  pending_splits.clear();
  pending_decisions.clear();
  std::unordered_map<JobId, const Job*> by_id;
  for (const Job& j : snap.queue) by_id[j.id] = &j;
  scheduler::RoundInput in;
  in.state = &snap.state;
  in.now = now;
  const std::vector<std::string>& pools = snap.state.topology().pools;
  std::vector<std::vector<QueuedJob>> queued(pools.size());
  std::vector<std::vector<RunningJob>> running(pools.size());
  for (size_t i = 0; i < pools.size(); ++i) {
    for (const Job& j : snap.queue) {
      if (j.request.pool == pools[i]) {
        queued[i].push_back(service_internal::AsQueued(j));
      }
    }
    for (const Job& j : snap.running) {
      if (j.request.pool == pools[i]) {
        running[i].push_back(service_internal::AsRunning(j));
      }
    }
    auto policy = policies.find(pools[i]);
    in.pools.push_back(
        {pools[i], policy == policies.end() ? nullptr : policy->second.get(),
         &queued[i], &running[i]});
  }
  in.allocate = [&](const ClusterState& s, const QueuedJob& q) TESSERA_REQUIRES(
                    round_mu) { return Allocate(snap, s, *by_id.at(q.id)); };
  if (!tree.empty()) in.tree = TreeRound(snap, view.reclaiming, view.owners);
  Holdings planned;
  if (!options.quotas.empty()) {
    for (const Job& j : snap.held) planned.Add(j, HeldBy(j.allocation));
    in.hold_back = [&](const QueuedJob& q) {
      const Job& j = *by_id.at(q.id);
      const QuotaUse more = EstimateHeld(j, snap.state.topology());
      std::string why = planned.Over(options.quotas, j, more);
      if (why.empty()) planned.Add(j, more);
      return why;
    };
  }
  return scheduler::PlanRound(in);
}

// 4. Under the lock, the decisions against the state now: each start
// reserved and stored as `starting` before anything is launched.
std::vector<PendingStart> Service::Impl::Commit(RoundView& view,
                                                RoundPlan& plan) {
  for (const JobId id : view.to_load) {
    if (view.snap.models[id]) models.emplace(id, view.snap.models[id]);
  }
  // Quotas against what is held now, this round's starts included.
  const bool flat_quotas = !options.quotas.empty();
  Holdings held;
  if (flat_quotas) held = service_internal::QuotaBook::Held(jobs);
  quotas.SetWaits(std::move(plan.held));
  QueueTree tree_held;
  if (plan.tree) {
    ApplyQueuePlan(*plan.tree);
    tree_held = HeldTree();
  }
  for (auto& [id, d] : pending_decisions) {
    // Only for jobs still queued (not cancelled since the snapshot).
    const bool queued = std::any_of(jobs.queue.begin(), jobs.queue.end(),
                                    [id](const Job& j) { return j.id == id; });
    if (queued) start_decisions[id] = std::move(d);
  }
  std::vector<PendingStart> starts;
  for (const scheduler::PoolPlan& pd : plan.pools) {
    metrics.decision_latency.Observe(pd.seconds);
    if (!pd.decision.preempt.empty()) {
      // Start nothing until the victims have exited and freed their GPUs.
      RequestPreemptions(pd);
      continue;
    }
    for (const auto& [id, chosen] : pd.decision.start) {
      std::optional<PendingStart> p =
          CommitStart(view, pd.pool, id, chosen, flat_quotas ? &held : nullptr,
                      plan.tree ? &tree_held : nullptr);
      if (p) starts.push_back(std::move(*p));
    }
  }
  return starts;
}

void Service::Impl::RequestPreemptions(const scheduler::PoolPlan& pd) {
  for (const JobId v : pd.decision.preempt) {
    if (jobs.running.count(v) && preempt_requested.insert(v).second) {
      stop_requests.push_back(v);
      (void)Record(Event(v, nullptr, "preemption requested",
                         "for a higher-priority job of pool " + pd.pool));
    }
  }
}

// One start the policy chose, if it can begin now. Planned on elastic
// jobs' extras: placed on free GPUs if it fits there now, else the extras
// are asked back and it waits. Both the flat quotas (`held`) and the tree
// (`tree_held`; each null when not configured) are checked before either
// counts the job: a job one of them refuses stays queued and is counted by
// neither (else a job the tree refused would still hold the flat quota
// against this round's later starts).
std::optional<PendingStart> Service::Impl::CommitStart(
    RoundView& view, const std::string& pool, JobId id,
    const Allocation& chosen, Holdings* held, QueueTree* tree_held) {
  auto it = std::find_if(jobs.queue.begin(), jobs.queue.end(),
                         [&](const Job& j) { return j.id == id; });
  if (it == jobs.queue.end()) return std::nullopt;  // cancelled meanwhile
  Allocation allocation = chosen;
  if (!MakeRoom(view, *it, pool, allocation)) return std::nullopt;
  if (held) {
    std::string why = held->Over(options.quotas, *it, HeldBy(allocation));
    if (!why.empty()) {
      quotas.Wait(id, std::move(why));
      return std::nullopt;  // stays queued
    }
  }
  if (tree_held) {
    std::string why;
    if (!MarkStart(*tree_held, *it, allocation, &why)) {
      quotas.Wait(id, std::move(why));
      return std::nullopt;  // stays queued
    }
  }
  if (held) held->Add(*it, HeldBy(allocation));
  Job job = std::move(*it);
  jobs.queue.erase(it);
  // A split job's plan: the one made for the allocation it starts at
  // (DecideModelStart, this round).
  service_internal::PlannedSplit split;
  if (auto p = pending_splits.find(id); p != pending_splits.end()) {
    for (service_internal::PlannedSplit& planned : p->second) {
      if (planned.allocation == allocation) split = std::move(planned);
    }
  }
  std::optional<Job> begun =
      BeginStart(std::move(job), allocation, std::move(split.plan));
  if (!begun) return std::nullopt;
  PendingStart p;
  p.job = std::move(*begun);
  if (auto m = models.find(id); m != models.end()) p.model = m->second;
  p.pictures = std::move(split.pictures);
  return p;
}

// 5. The launcher, without the lock: the job's environment (plan files
// written for a split job), then the start itself.
std::vector<Result<launch::Launched>> Service::Impl::Launch(
    std::vector<PendingStart>& starts, const Topology& t) {
  std::vector<Result<launch::Launched>> outcomes;
  for (PendingStart& p : starts) {
    if (p.pictures) WritePlanPictures(p.job.id, p.pictures());
    p.spec = LaunchSpecFor(p.job, t, p.model.get());
    outcomes.push_back(launcher->Start(p.spec));
  }
  return outcomes;
}

launch::LaunchSpec Service::Impl::LaunchSpecFor(
    const Job& job, const Topology& t, const SizedModel* sized,
    const std::vector<int>* workers) {
  launch::LaunchSpec spec;
  spec.id = job.id;
  spec.name = job.request.name;
  spec.user = job.user;
  spec.command = job.request.command;
  spec.env = LaunchEnv(job, t, sized);
  spec.log_dir = options.log_dir;
  spec.parts = LaunchParts(t, job.allocation);
  spec.ignore_sigusr1 = job.request.elastic.has_value();
  if (PerWorker(job)) {  // a process per worker
    spec.workers =
        WorkerLaunches(job, t, workers ? *workers : job.elastic.workers);
    spec.guaranteed_workers = job.request.elastic->min;
  }
  return spec;
}

// 6. Under the lock, the launcher calls decided meanwhile: preemptions and
// cancels, per-worker jobs' workers to start and stop, and elastic jobs
// whose allocation changed; made without it.
Service::Impl::LauncherCalls Service::Impl::TakeLauncherCalls() {
  LauncherCalls calls;
  calls.stops.swap(stop_requests);
  calls.elastic = elastic.Take();
  return calls;
}

void Service::Impl::Flush(LauncherCalls calls) {
  for (const JobId id : calls.stops) launcher->Stop(id, options.kill_grace_s);
  const std::vector<launch::WorkerExited> not_started =
      RunWorkerCalls(std::move(calls.elastic.worker_starts),
                     std::move(calls.elastic.worker_stops));
  for (const JobId id : calls.elastic.notices) launcher->Notify(id, SIGUSR1);
  if (!not_started.empty()) {
    MutexLock lock(mu);
    std::map<JobId, std::vector<launch::WorkerExited>> by_job;
    for (const launch::WorkerExited& w : not_started) by_job[w.id].push_back(w);
    for (const auto& [id, ended] : by_job) WorkersEnded(id, ended);
  }
}

void Service::Impl::Loop() {
  while (true) {
    {
      MutexLock lock(mu);
      if (stopping) return;
      dirty = false;
    }
    if (leading) {
      RunRound();
    } else {  // a follower: the store's jobs, every tick
      MutexLock lock(mu);
      (void)Mirror();
    }
    MutexLock lock(mu);
    // The predicate is called with mu held (the wait's own rule).
    lock.WaitFor(wake, std::chrono::duration<double>(options.tick_s),
                 [&]() TESSERA_REQUIRES(mu) { return stopping || dirty; });
  }
}

}  // namespace tessera::service
