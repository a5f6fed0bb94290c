// Service: the queue's core. One mutex guards the state; a thread runs a
// scheduling round on every submission, exit and tick.
#include "service/service.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>

#include "scheduler/elastic.h"
#include "service/service_internal.h"

namespace tessera::service {

// What this file uses of scheduler/, beyond what its headers name.
using scheduler::CouldEverFit;
using scheduler::ElasticGuaranteedDemand;
using scheduler::GpuInfo;
using scheduler::IsolationName;
using scheduler::JobStateName;
using scheduler::MakePolicy;
using scheduler::MakeScorer;
using scheduler::ModelDemand;
using scheduler::SizeModel;

using service_internal::PoolKind;
using service_internal::WallClock;

std::shared_ptr<Service::Impl> Service::Current() const {
  std::lock_guard lock(current_mu_);
  return current_;
}

void Service::Swap(std::shared_ptr<Impl> next) {
  std::lock_guard lock(current_mu_);
  current_.swap(next);
}

void Service::Impl::StartThread() {
  if (options.start_thread) thread = std::thread([this] { Loop(); });
}

void Service::Impl::StopThread() {
  {
    MutexLock lock(mu);
    stopping = true;
  }
  wake.notify_all();
  if (thread.joinable()) thread.join();
}

Result<std::shared_ptr<Service::Impl>> Service::Impl::Create(
    ServiceOptions options, std::shared_ptr<launch::Launcher> launcher,
    const Leadership& lead) {
  auto impl = std::make_shared<Impl>(std::move(options));
  impl->launcher = std::move(launcher);
  impl->replicated = lead.replicated;
  impl->leading = lead.leading;
  impl->may_act = lead.may_act;
  auto scorer = MakeScorer(impl->options.scorer);
  if (!scorer) return scorer.error().WithContext("scorer");
  impl->scorer = std::move(scorer).value();
  for (const std::string& pool : impl->options.topology.pools) {
    PolicyConfig config;
    if (auto it = impl->options.policies.find(pool);
        it != impl->options.policies.end()) {
      config = it->second;
    }
    auto policy = MakePolicy(config);
    if (!policy) return policy.error().WithContext("pools." + pool);
    impl->policies.emplace(pool, std::move(policy).value());
  }
  TESSERA_RETURN_IF_ERROR(impl->SetUpModelFiles());
  TESSERA_RETURN_IF_ERROR(impl->SetUpQueues());
  auto store = Store::Open(impl->options.store, impl->options.db_path);
  if (!store) return store.error();
  impl->store = std::move(store).value();
  // A leader's writes carry its lease's epoch; a follower writes only
  // what goes to the leader's inbox.
  impl->store->SetFence(lead.leading ? lead.epoch : lead.replicated ? -1 : 0);
  {
    // Nobody else can hold mu yet (no round thread, no API call); Recover
    // holds it anyway, as what it calls requires. A leader recovers (a
    // takeover is a restart's recovery); a follower mirrors the store.
    MutexLock lock(impl->mu);
    impl->unrecorded_exits = lead.exits;
    impl->oom_exits = lead.ooms;
    TESSERA_RETURN_IF_ERROR(lead.leading ? impl->Recover() : impl->Mirror());
  }
  impl->StartThread();
  return impl;
}

Result<std::unique_ptr<Service>> Service::Start(
    ServiceOptions options, std::unique_ptr<launch::Launcher> launcher) {
  if (options.topology.pools.empty()) {
    return BadInput("the cluster has no pools");
  }
  if (options.replica) {
    return Replicated(std::move(options),
                      std::shared_ptr<launch::Launcher>(std::move(launcher)));
  }
  Topology topology = options.topology;
  auto impl = Impl::Create(std::move(options), std::move(launcher), {});
  if (!impl) return impl.error();
  return std::unique_ptr<Service>(
      new Service(std::move(impl).value(), std::move(topology)));
}

Result<Job> Service::Submit(const User& user, JobRequest request,
                            const std::string& idempotency_key) {
  const std::shared_ptr<Impl> impl = Current();
  Impl& m = *impl;
  // The configured topology, not the live one (read without the lock):
  // pools and GPUs do not change, and a drain does not make a request
  // wrong.
  const Topology& t = m.options.topology;
  if (request.pool.empty()) request.pool = t.pools.front();
  if (!t.HasPool(request.pool)) {
    std::string known;
    for (const std::string& p : t.pools) {
      known += (known.empty() ? "" : ", ") + p;
    }
    return BadInput("pool: unknown pool '" + request.pool +
                    "' (known: " + known + ")");
  }
  TESSERA_RETURN_IF_ERROR(m.CheckQueue(request));
  Job job;
  job.user = user.name;
  job.team = user.team;
  std::optional<SizedModel> sized;
  if (request.model) {
    // Loading and sizing can take a while: outside the lock.
    auto s =
        SizeModel(*request.model, PoolKind(t, request.pool), m.model_files);
    if (!s) return s.error();
    job.demand = ModelDemand(*s, m.options.model_headroom);
    if (!CouldEverFit(t, request.pool, job.demand) && !request.splittable) {
      return BadInput("model: needs " +
                      std::to_string(job.demand.gpu_memory_mib) +
                      " MiB on one GPU, more than any GPU of pool '" +
                      request.pool + "' has, and splittable is false");
    }
    sized = std::move(s).value();
  } else {
    job.demand = *request.resources;
    if (request.elastic && m.launcher->multi_node()) {
      // A cluster engine holds what it was given at the start: a grow
      // would be in tessera's books only.
      return BadInput(
          "resources: elastic jobs run under the local launcher only "
          "(docs/elastic.md); this service hands jobs to a cluster engine");
    }
    if (request.elastic && request.elastic->mode == ElasticMode::kPerWorker &&
        !m.launcher->per_worker()) {
      return BadInput(
          "elastic.mode: this service's launcher cannot run a process per "
          "worker (docs/elastic.md, \"The two launch modes\"); use "
          "one-process, where the job starts a process per worker itself");
    }
    if (request.elastic) {  // the guaranteed part
      job.demand =
          ElasticGuaranteedDemand(*request.resources, *request.elastic);
    }
    if (!CouldEverFit(t, request.pool, job.demand)) {
      return BadInput("resources: no GPU or node of pool '" + request.pool +
                      "' could ever hold this request");
    }
  }
  std::optional<scheduler::ModelFingerprint> fingerprint;
  if (request.model) {
    fingerprint = service_internal::FingerprintOf(*request.model);
  }
  MutexLock lock(m.mu);
  TESSERA_RETURN_IF_ERROR(m.quotas.Admit(user, m.jobs.queue, m.Now()));
  if (fingerprint) {
    // What jobs of the same model measured sizes it (the estimate is the
    // prior: scheduler/learned_sizing.h has the rule).
    const scheduler::LearnedSize l = m.learned.Size(
        *fingerprint, job.demand.gpu_memory_mib, PoolKind(t, request.pool));
    job.demand.gpu_memory_mib = l.memory_mib;
    job.sized_by = l.source;
    if (l.step_s && sized) sized->step_s = *l.step_s;
  }
  job.request = std::move(request);
  job.submitted_at = m.Now();
  std::string what = "pool " + job.request.pool;
  if (job.request.model) what += ", model job";
  const JobEvent event = m.Event(0, &user, "submitted", what);
  // Committed, with its event, before the caller hears back. A follower's
  // goes to the leader through the store's inbox, in the same transaction.
  InsertOptions how;
  how.idempotency_key = idempotency_key;
  how.tell_leader = !m.leading;
  auto id = m.store->InsertJob(job, &event, how);
  if (!id) {
    m.metrics.store_errors++;
    return Unavailable("the job store failed, the job was not submitted: " +
                       id.error().message);
  }
  if (id->existed) {  // a retry of a submission that was stored
    auto first = m.store->Get(id->id);
    if (!first || !*first) {
      return Unavailable("the job store failed: cannot read job " +
                         std::to_string(id->id));
    }
    return **first;
  }
  job.id = id->id;
  if (!m.leading) {  // the leader's next round takes it; the view has it now
    m.jobs.queue.push_back(job);
    return job;
  }
  if (sized) {
    m.models.emplace(job.id,
                     std::make_shared<const SizedModel>(std::move(*sized)));
  }
  m.jobs.queue.push_back(job);
  m.metrics.submitted++;
  m.dirty = true;
  m.wake.notify_all();
  return job;
}

Result<std::vector<Job>> Service::List(const JobFilter& filter) {
  const std::shared_ptr<Impl> impl = Current();
  auto jobs = impl->store->List(
      filter.state ? std::string(JobStateName(*filter.state)) : "", filter.user,
      filter.pool, filter.limit);
  if (!jobs) {
    return Unavailable("the job store failed: " + jobs.error().message);
  }
  return jobs;
}

Result<std::vector<JobEvent>> Service::Events(JobId id) {
  const std::shared_ptr<Impl> impl = Current();
  auto events = impl->store->Events(id);
  if (!events) {
    return Unavailable("the job store failed: " + events.error().message);
  }
  return events;
}

Result<std::optional<Job>> Service::Get(JobId id) {
  const std::shared_ptr<Impl> impl = Current();
  auto job = impl->store->Get(id);
  if (!job || !*job || !impl->usage.measuring()) return job;
  // A running job's record has its use as last stored (UsagePart); the
  // sampler's since then is in memory.
  MutexLock lock(impl->mu);
  auto it = impl->jobs.running.find(id);
  if (it != impl->jobs.running.end()) (*job)->usage = it->second.usage;
  return job;
}

Result<Job> Service::Cancel(JobId id, const std::string& reason,
                            const User* by) {
  const std::shared_ptr<Impl> impl = Current();
  MutexLock lock(impl->mu);
  return impl->leading ? impl->Cancel(id, reason, by)
                       : impl->AskCancel(id, reason, by);
}

// The drained nodes, by name, as one record of the store.
constexpr const char* kDrainsRecord = "drained_nodes";

Status Service::Impl::StoreDrains(int node, bool drained) {
  const Topology& t = state.topology();
  nlohmann::json names = nlohmann::json::array();
  for (size_t n = 0; n < t.nodes.size(); ++n) {
    const bool d = static_cast<int>(n) == node ? drained : t.nodes[n].drained;
    if (d) names.push_back(t.nodes[n].name);
  }
  if (Status s = store->PutRecord(kDrainsRecord, names.dump()); !s) {
    metrics.store_errors++;
    return Unavailable("the job store failed, the drain was not stored: " +
                       s.error().message);
  }
  return {};
}

Status Service::Impl::LoadDrains() {
  auto stored = store->GetRecord(kDrainsRecord);
  if (!stored) return stored.error();
  std::set<std::string> names;
  if (*stored) {
    const nlohmann::json j = nlohmann::json::parse(**stored, nullptr, false);
    if (j.is_array()) {
      for (const nlohmann::json& name : j) {
        if (name.is_string()) names.insert(name.get<std::string>());
      }
    }
  }
  const Topology& t = state.topology();
  for (size_t n = 0; n < t.nodes.size(); ++n) {
    // A node the configuration no longer has is forgotten.
    const bool d = names.count(t.nodes[n].name) > 0;
    if (t.nodes[n].drained != d) state.SetDrained(static_cast<int>(n), d);
  }
  return {};
}

Result<Job> Service::Impl::Cancel(JobId id, const std::string& reason,
                                  const User* by) {
  auto q = std::find_if(jobs.queue.begin(), jobs.queue.end(),
                        [&](const Job& j) { return j.id == id; });
  if (q != jobs.queue.end()) {
    Job job = *q;
    job.state = JobState::kCancelled;
    job.reason = reason;
    job.finished_at = Now();
    const JobEvent event = Event(id, by, "cancelled", reason);
    TESSERA_RETURN_IF_ERROR(Persist(job, &event));  // else it stays queued
    jobs.queue.erase(q);
    models.erase(id);
    start_decisions.erase(id);
    return job;
  }
  if (auto r = jobs.running.find(id); r != jobs.running.end()) {
    if (!cancel_requested.count(id)) {
      TESSERA_RETURN_IF_ERROR(
          Record(Event(id, by, "cancel requested", reason)));
    }
    r->second.reason = reason;
    if (cancel_requested.insert(id).second) {
      // The round thread signals it: no launcher call under the lock.
      stop_requests.push_back(id);
      dirty = true;
      wake.notify_all();
    }
    return r->second;
  }
  if (auto r = jobs.starting.find(id); r != jobs.starting.end()) {
    // Stopped once its start is done (or not started at all).
    if (!cancel_requested.count(id)) {
      TESSERA_RETURN_IF_ERROR(
          Record(Event(id, by, "cancel requested", reason)));
    }
    r->second.reason = reason;
    cancel_requested.insert(id);
    return r->second;
  }
  if (auto r = jobs.reserved.find(id); r != jobs.reserved.end()) {
    // Only the reservation ends: the outside system owns the process.
    return EndReserved(r, JobState::kCancelled, reason, by);
  }
  auto stored = store->Get(id);
  if (!stored) return stored.error();
  if (!*stored) return BadInput("job " + std::to_string(id) + ": no such job");
  return **stored;
}

Status Service::SetDrained(const std::string& node, bool drained,
                           const User* by) {
  const std::shared_ptr<Impl> impl = Current();
  TESSERA_RETURN_IF_ERROR(impl->LeaderOnly());
  MutexLock lock(impl->mu);
  const int n = impl->state.topology().FindNode(node);
  if (n < 0) return BadInput("node '" + node + "': no such node");
  // Stored first: a restart, and the replica that leads next, keep it.
  TESSERA_RETURN_IF_ERROR(impl->StoreDrains(n, drained));
  TESSERA_RETURN_IF_ERROR(impl->Record(
      impl->Event(0, by, drained ? "drained" : "undrained", "node " + node)));
  impl->state.SetDrained(n, drained);
  impl->dirty = true;
  impl->wake.notify_all();
  return {};
}

nlohmann::json Service::ClusterJson() {
  const ReplicaStatus replica = Replica();  // before mu: it takes it
  const std::shared_ptr<Impl> impl = Current();
  Impl& m = *impl;
  MutexLock lock(m.mu);
  const Topology& t = m.state.topology();
  nlohmann::json pools = nlohmann::json::array();
  for (const std::string& p : t.pools) {
    int queued = 0, starting = 0, running = 0, gpus = 0;
    for (const Job& j : m.jobs.queue) queued += j.request.pool == p;
    for (const auto& [id, j] : m.jobs.starting) starting += j.request.pool == p;
    for (const auto& [id, j] : m.jobs.running) running += j.request.pool == p;
    for (const NodeInfo& n : t.nodes) {
      if (n.pool == p) gpus += static_cast<int>(n.gpus.size());
    }
    pools.push_back({{"name", p},
                     {"policy", std::string(m.policies.at(p)->name())},
                     {"gpus", gpus},
                     {"queued", queued},
                     {"starting", starting},
                     {"running", running}});
  }
  nlohmann::json gpus = nlohmann::json::array();
  const std::vector<std::vector<JobId>> jobs_by_gpu = m.state.JobsByGpu();
  for (size_t g = 0; g < t.gpus.size(); ++g) {
    const GpuInfo& info = t.gpus[g];
    const NodeInfo& node = t.nodes[info.node];
    const std::vector<JobId>& holders = jobs_by_gpu[g];
    gpus.push_back(
        {{"id", info.id},
         {"node", node.name},
         {"pool", node.pool},
         {"kind", info.kind},
         {"memory_mib", info.memory_mib},
         {"reserved_memory_mib",
          m.state.reserved_memory_mib(static_cast<int>(g))},
         {"reserved_milli", m.state.reserved_milli(static_cast<int>(g))},
         {"exclusive", m.state.exclusive(static_cast<int>(g))},
         {"isolation", IsolationName(node.isolation)},
         {"shareable", t.Shareable(static_cast<int>(g))},
         {"drained", node.drained},
         {"jobs", holders}});
    nlohmann::json& gpu = gpus.back();
    if (const auto* r = m.usage.LastOf(t, static_cast<int>(g))) {
      gpu["used_memory_mib"] = r->used_mib;
      gpu["utilization_pct"] = r->utilization_pct;
    }
  }
  nlohmann::json quotas = m.quotas.Json(m.jobs);
  nlohmann::json waits = nlohmann::json::array();
  for (const auto& [id, why] : m.quotas.waits()) {
    waits.push_back({{"job", id}, {"reason", why}});
  }
  return {{"pools", std::move(pools)},
          {"replica", ReplicaStatusJson(replica)},
          {"share_unisolated", t.share_unisolated},
          {"gpu_usage", m.usage.Status()},
          {"gpus", std::move(gpus)},
          {"users", std::move(quotas["users"])},
          {"teams", std::move(quotas["teams"])},
          {"quota_waits", std::move(waits)},
          {"queues", m.QueuesJson()},
          {"interference", m.InterferenceJson()}};
}

std::string Service::MetricsText() {
  const ReplicaStatus replica = Replica();  // before mu: it takes it
  const std::shared_ptr<Impl> impl = Current();
  Impl& m = *impl;
  MutexLock lock(m.mu);
  std::map<std::pair<std::string, std::string>, int64_t> by_state;
  for (const Job& j : m.jobs.queue) {
    ++by_state[{std::string(JobStateName(j.state)), j.request.pool}];
  }
  for (const auto& [id, j] : m.jobs.running) {
    ++by_state[{std::string(JobStateName(j.state)), j.request.pool}];
  }
  for (const auto& [id, j] : m.jobs.starting) {
    ++by_state[{std::string(JobStateName(j.state)), j.request.pool}];
  }
  return m.metrics.Render(m.state, by_state) +
         service_internal::UsageMetrics(m.state.topology(), m.jobs.running,
                                        m.usage) +
         ReplicaMetrics(replica);
}

const Topology& Service::topology() const { return topology_; }

std::string Service::LogPath(JobId id, bool stderr_log) const {
  const std::shared_ptr<Impl> impl = Current();
  return impl->launcher->LogPath(id, stderr_log);
}

void Service::Tick() { Current()->RunRound(); }

std::string Service::CheckInvariants() {
  const std::shared_ptr<Impl> impl = Current();
  Impl& m = *impl;
  MutexLock lock(m.mu);
  auto stored = m.store->LoadAll(/*active_only=*/true);
  if (!stored) {
    return m.state.CheckInvariants() + stored.error().message + "; ";
  }
  return m.jobs.Check(m.state, *stored);
}

}  // namespace tessera::service
