// Service: the queue's core. One mutex guards the state; a thread runs a
// scheduling round on every submission, exit and tick.
#include "scheduler/service.h"

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

#include "scheduler/admission.h"
#include "scheduler/metrics.h"
#include "scheduler/model_jobs.h"
#include "scheduler/store.h"
#include "split/split.h"

namespace tessera::scheduler {
namespace {

namespace fs = std::filesystem;

double WallClock() {
  return std::chrono::duration<double>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The GPU kind a pool's model jobs are sized for: its first GPU's.
std::string PoolKind(const Topology& t, const std::string& pool) {
  for (const NodeInfo& n : t.nodes) {
    if (n.pool == pool && !n.gpus.empty()) return t.gpus[n.gpus[0]].kind;
  }
  return "";
}

}  // namespace

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
  Metrics metrics;

  explicit Impl(ServiceOptions o)
      : options(std::move(o)), state(options.topology) {}

  double Now() const { return options.clock ? options.clock() : WallClock(); }

  // The sized model of a model job, loading it again after a restart.
  const SizedModel* ModelOf(const Job& job) {
    if (!job.request.model) return nullptr;
    auto it = models.find(job.id);
    if (it != models.end()) return &it->second;
    auto sized = SizeModel(*job.request.model,
                           PoolKind(state.topology(), job.request.pool));
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
        SplitAcrossSlivers(s, job.request.pool, *sized, options.model_headroom);
    if (!gang) return std::nullopt;
    pending_plans[job.id] = gang->plan;
    return gang->allocation;
  }

  // The environment a job starts with (README, "Launching").
  std::map<std::string, std::string> LaunchEnv(const Job& job) {
    const Topology& t = state.topology();
    std::map<std::string, std::string> env = job.request.env;
    std::string visible, limits, ids;
    for (size_t i = 0; i < job.allocation.gpus.size(); ++i) {
      const GpuShare& s = job.allocation.gpus[i];
      const std::string sep = i ? "," : "";
      visible += sep + std::to_string(t.gpus[s.gpu].index);
      limits +=
          sep + std::to_string(i) + "=" + std::to_string(s.memory_mib) + "M";
      ids += sep + t.gpus[s.gpu].id;
    }
    env["CUDA_VISIBLE_DEVICES"] = visible;
    if (!job.allocation.exclusive && !job.allocation.gpus.empty()) {
      int milli = kFullGpuMilli;
      for (const GpuShare& s : job.allocation.gpus) {
        milli = std::min(milli, s.milli);
      }
      env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] =
          std::to_string(std::max(1, (milli + 9) / 10));
      env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] = limits;
    }
    env["TESSERA_JOB_ID"] = std::to_string(job.id);
    env["TESSERA_GPUS"] = ids;
    if (job.allocation.node >= 0) {
      env["TESSERA_NODE"] = t.nodes[job.allocation.node].name;
    }
    if (!job.plan.is_null()) {
      const fs::path dir(options.log_dir);
      std::error_code ec;
      fs::create_directories(dir, ec);
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
    if (cancel_requested.erase(job.id)) {
      job.state = JobState::kCancelled;
      if (job.reason.empty()) job.reason = "cancelled";
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

  // Starts `job` (removed from the queue by the caller) on `allocation`.
  void Launch(Job job, const Allocation& allocation) {
    if (!state.Fits(allocation)) return;  // the policy's view was stale
    const double now = Now();
    job.allocation = allocation;
    if (auto p = pending_plans.find(job.id); p != pending_plans.end()) {
      job.plan = p->second;
    }
    (void)state.Reserve(job.id, allocation);
    LaunchSpec spec;
    spec.id = job.id;
    spec.command = job.request.command;
    spec.env = LaunchEnv(job);
    spec.log_dir = options.log_dir;
    auto launched = launcher->Start(spec);
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

Service::Service(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Service::~Service() {
  {
    std::lock_guard lock(impl_->mu);
    impl_->stopping = true;
  }
  impl_->wake.notify_all();
  if (impl_->thread.joinable()) impl_->thread.join();
}

Result<std::unique_ptr<Service>> Service::Start(
    ServiceOptions options, std::unique_ptr<Launcher> launcher) {
  if (options.topology.pools.empty()) {
    return BadInput("the cluster has no pools");
  }
  auto impl = std::make_unique<Impl>(std::move(options));
  impl->launcher = std::move(launcher);
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
  auto store = Store::Open(impl->options.db_path);
  if (!store) return store.error();
  impl->store = std::move(store).value();
  TESSERA_RETURN_IF_ERROR(impl->Recover());
  std::unique_ptr<Service> service(new Service(std::move(impl)));
  if (service->impl_->options.start_thread) {
    service->impl_->thread =
        std::thread([s = service.get()] { s->impl_->Loop(); });
  }
  return service;
}

Result<Job> Service::Submit(const User& user, JobRequest request) {
  Impl& m = *impl_;
  const Topology& t = m.state.topology();
  if (request.pool.empty()) request.pool = t.pools.front();
  if (!t.HasPool(request.pool)) {
    std::string known;
    for (const std::string& p : t.pools) {
      known += (known.empty() ? "" : ", ") + p;
    }
    return BadInput("pool: unknown pool '" + request.pool +
                    "' (known: " + known + ")");
  }
  Job job;
  job.user = user.name;
  std::optional<SizedModel> sized;
  if (request.model) {
    // Loading and sizing can take a while: outside the lock.
    auto s = SizeModel(*request.model, PoolKind(t, request.pool));
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
    if (!CouldEverFit(t, request.pool, job.demand)) {
      return BadInput("resources: no GPU or node of pool '" + request.pool +
                      "' could ever hold this request");
    }
  }
  std::lock_guard lock(m.mu);
  auto queued = m.store->CountQueued(user.name);
  if (!queued) return queued.error();
  if (*queued >= m.options.max_queued_per_user) {
    return BadInput("user '" + user.name + "' already has " +
                    std::to_string(*queued) + " queued jobs (the limit is " +
                    std::to_string(m.options.max_queued_per_user) + ")");
  }
  job.request = std::move(request);
  job.submitted_at = m.Now();
  auto id = m.store->Insert(job);  // committed before the caller hears back
  if (!id) return id.error();
  job.id = *id;
  if (sized) m.models.emplace(job.id, std::move(*sized));
  m.queue.push_back(job);
  m.metrics.submitted++;
  m.dirty = true;
  m.wake.notify_all();
  return job;
}

Result<std::vector<Job>> Service::List(const JobFilter& filter) {
  auto jobs = impl_->store->LoadAll();
  if (!jobs) return jobs.error();
  std::vector<Job> out;
  for (auto it = jobs->rbegin(); it != jobs->rend(); ++it) {
    if (filter.state && it->state != *filter.state) continue;
    if (!filter.user.empty() && it->user != filter.user) continue;
    if (!filter.pool.empty() && it->request.pool != filter.pool) continue;
    out.push_back(std::move(*it));
    if (static_cast<int64_t>(out.size()) >= filter.limit) break;
  }
  return out;
}

Result<std::optional<Job>> Service::Get(JobId id) {
  return impl_->store->Get(id);
}

Result<Job> Service::Cancel(JobId id, const std::string& reason) {
  Impl& m = *impl_;
  std::lock_guard lock(m.mu);
  auto q = std::find_if(m.queue.begin(), m.queue.end(),
                        [&](const Job& j) { return j.id == id; });
  if (q != m.queue.end()) {
    Job job = std::move(*q);
    m.queue.erase(q);
    job.state = JobState::kCancelled;
    job.reason = reason;
    job.finished_at = m.Now();
    TESSERA_RETURN_IF_ERROR(m.store->Update(job));
    return job;
  }
  if (auto r = m.running.find(id); r != m.running.end()) {
    r->second.reason = reason;
    if (m.cancel_requested.insert(id).second) {
      m.launcher->Stop(id, m.options.kill_grace_s);
    }
    return r->second;
  }
  auto stored = m.store->Get(id);
  if (!stored) return stored.error();
  if (!*stored) return BadInput("job " + std::to_string(id) + ": no such job");
  return **stored;
}

Status Service::SetDrained(const std::string& node, bool drained) {
  std::lock_guard lock(impl_->mu);
  const int n = impl_->state.topology().FindNode(node);
  if (n < 0) return BadInput("node '" + node + "': no such node");
  impl_->state.SetDrained(n, drained);
  impl_->dirty = true;
  impl_->wake.notify_all();
  return {};
}

nlohmann::json Service::ClusterJson() {
  Impl& m = *impl_;
  std::lock_guard lock(m.mu);
  const Topology& t = m.state.topology();
  nlohmann::json pools = nlohmann::json::array();
  for (const std::string& p : t.pools) {
    int queued = 0, running = 0, gpus = 0;
    for (const Job& j : m.queue) queued += j.request.pool == p;
    for (const auto& [id, j] : m.running) running += j.request.pool == p;
    for (const NodeInfo& n : t.nodes) {
      if (n.pool == p) gpus += static_cast<int>(n.gpus.size());
    }
    pools.push_back({{"name", p},
                     {"policy", std::string(m.policies.at(p)->name())},
                     {"gpus", gpus},
                     {"queued", queued},
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
         {"drained", node.drained},
         {"jobs", holders}});
  }
  return {{"pools", std::move(pools)}, {"gpus", std::move(gpus)}};
}

std::string Service::MetricsText() {
  Impl& m = *impl_;
  std::lock_guard lock(m.mu);
  std::map<std::pair<std::string, std::string>, int64_t> by_state;
  for (const Job& j : m.queue) {
    ++by_state[{std::string(JobStateName(j.state)), j.request.pool}];
  }
  for (const auto& [id, j] : m.running) {
    ++by_state[{std::string(JobStateName(j.state)), j.request.pool}];
  }
  return m.metrics.Render(m.state, by_state);
}

const Topology& Service::topology() const { return impl_->state.topology(); }

std::string Service::LogPath(JobId id, bool stderr_log) const {
  return impl_->launcher->LogPath(id, stderr_log);
}

void Service::Tick() {
  std::lock_guard lock(impl_->mu);
  impl_->Round();
}

std::string Service::CheckInvariants() {
  std::lock_guard lock(impl_->mu);
  return impl_->state.CheckInvariants();
}

}  // namespace tessera::scheduler
