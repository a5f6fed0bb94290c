// SimulateModelJobs: the event-driven replay of model jobs on the queue's
// policy and admission code; RunModelExperiment. The split placements it
// looks up are model_split_cache.cc's (SplitCache).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "common/stats.h"
#include "scheduler/admission.h"
#include "scheduler/fragmentation.h"
#include "scheduler/parallel.h"
#include "scheduler/policy.h"
#include "scheduler/round.h"
#include "sim/model_workload.h"

namespace tessera::sim {

// What this file uses of scheduler/, beyond what its headers name.
using scheduler::AdmissionCache;
using scheduler::AdmissionOptions;
using scheduler::Allocator;
using scheduler::BuildStartRequest;
using scheduler::CouldEverFit;
using scheduler::DecideStart;
using scheduler::Decision;
using scheduler::FindAllocation;
using scheduler::GpuScorer;
using scheduler::GpuShare;
using scheduler::InterferenceRate;
using scheduler::JobId;
using scheduler::kFullGpuMilli;
using scheduler::MakePolicy;
using scheduler::MakeScorer;
using scheduler::NodeInfo;
using scheduler::Occupant;
using scheduler::OptionForecast;
using scheduler::ParallelFor;
using scheduler::PlacementRequest;
using scheduler::PlanPoolRound;
using scheduler::PolicyConfig;
using scheduler::QueuedJob;
using scheduler::QueuePolicy;
using scheduler::RunningJob;
using scheduler::ScorerOptions;
using scheduler::SquaredCv;
using scheduler::StartCandidate;
using scheduler::StartDecision;
using scheduler::StartInputs;
using scheduler::StartOption;
using scheduler::StartRequest;
using scheduler::TypicalTask;
using scheduler::TypicalWorkload;
using scheduler::Workload;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The typical tasks of the kinds under `admission`, equally weighted: the
// workload the fgd and tessera scorers descend.
Workload KindsWorkload(const std::vector<ModelJobKind>& kinds,
                       Admission admission, int64_t gpu_memory_mib) {
  std::vector<TypicalTask> tasks;
  for (const ModelJobKind& k : kinds) {
    TypicalTask task;
    if (admission == Admission::kWhole) {
      task.gpus = WholeDemand(k, gpu_memory_mib).gpus;
      task.milli = kFullGpuMilli;
    } else {
      task.gpus = 1;
      task.milli = FractionDemand(k, gpu_memory_mib).gpu_milli;
    }
    tasks.push_back(task);
  }
  return TypicalWorkload(tasks, 1.0);
}

// One replay: the queue, the running jobs and the clock.
class Replay {
 public:
  Replay(const Topology& topology, const std::vector<ModelJobKind>& kinds,
         const std::vector<ModelJob>& jobs, const ModelSimOptions& options,
         std::string pool, const GpuInfo& gpu, SplitCache& cache)
      : kinds_(kinds),
        jobs_(jobs),
        options_(options),
        pool_(std::move(pool)),
        gpu_(gpu),
        cache_(cache),
        state_(topology) {
    for (const NodeInfo& n : topology.nodes) {
      if (n.pool != pool_) continue;
      for (const int g : n.gpus) {
        pool_gpus_.push_back(g);
        capacity_mib_ += topology.gpus[g].memory_mib;
      }
    }
  }

  Status Init() {
    PolicyConfig config;
    config.name = options_.queue_policy;
    auto policy = MakePolicy(config);
    if (!policy) return policy.error().WithContext("queue_policy");
    policy_ = std::move(policy).value();
    workload_ = KindsWorkload(kinds_, options_.admission, gpu_.memory_mib);
    ScorerOptions so;
    so.workload = &workload_;
    so.seed = options_.seed;
    auto scorer = MakeScorer(options_.scorer, so);
    if (!scorer) return scorer.error().WithContext("scorer");
    scorer_ = std::move(scorer).value();
    for (const ModelJob& j : jobs_) {
      if (j.kind < 0 || j.kind >= static_cast<int>(kinds_.size())) {
        return BadInput("a job's kind " + std::to_string(j.kind) +
                        " is out of range");
      }
    }
    for (const ModelJobKind& k : kinds_) {
      demand_.push_back(options_.admission == Admission::kWhole
                            ? WholeDemand(k, gpu_.memory_mib)
                            : FractionDemand(k, gpu_.memory_mib));
      whole_demand_.push_back(WholeDemand(k, gpu_.memory_mib));
    }
    return {};
  }

  ModelSimResult Run() {
    const auto wall = std::chrono::steady_clock::now();
    result_.admission = options_.admission;
    result_.interference = options_.interference;
    result_.seed = options_.seed;
    result_.jobs = static_cast<int64_t>(jobs_.size());
    result_.outcomes.assign(jobs_.size(), {});
    for (size_t j = 0; j < jobs_.size(); ++j) {
      result_.outcomes[j].arrival_s = jobs_[j].arrival_s;
    }
    std::vector<char> ever(kinds_.size());
    for (size_t k = 0; k < kinds_.size(); ++k) ever[k] = CouldEverRun(k);
    size_t next = 0;
    double t = 0;
    Record(0);
    while (true) {
      const double t_arrival =
          next < jobs_.size() ? jobs_[next].arrival_s : kInf;
      const double t_next = std::min(t_arrival, NextFinish(t));
      if (t_next == kInf) break;
      Advance(t, t_next);
      t = t_next;
      Finish(t);
      for (; next < jobs_.size() && jobs_[next].arrival_s <= t; ++next) {
        if (ever[jobs_[next].kind]) {
          queue_.push_back(Queued(static_cast<int>(next)));
        } else {
          ++result_.never_ran;
        }
      }
      Schedule(t);
      Record(t);
    }
    // Jobs that could run on an empty cluster always start eventually;
    // anything left is a policy that blocks forever.
    result_.never_ran += static_cast<int64_t>(queue_.size());
    Summarize(t);
    result_.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall)
            .count();
    return std::move(result_);
  }

 private:
  struct Running {
    int job = 0;
    double remaining = 0;  // seconds of work at speed 1
    double speed = 1;      // a split's step penalty
    double rate = 1;       // speed x interference
    int64_t memory_mib = 0;
  };

  bool CouldEverRun(size_t k) const {
    const Topology& t = state_.topology();
    if (CouldEverFit(t, pool_, demand_[k])) return true;
    if (options_.admission == Admission::kTessera &&
        CouldEverFit(t, pool_, whole_demand_[k])) {
      return true;
    }
    if (options_.admission != Admission::kSplit &&
        options_.admission != Admission::kTessera) {
      return false;
    }
    const ClusterState empty(t);
    return cache_
        .Find(empty, pool_, static_cast<int>(k), kinds_[k], options_.headroom)
        .allocation.has_value();
  }

  QueuedJob Queued(int j) const {
    QueuedJob q;
    q.id = j + 1;
    q.user = "sim";
    q.submitted_at = jobs_[j].arrival_s;
    q.time_limit_s = jobs_[j].duration_s;
    q.demand = demand_[jobs_[j].kind];
    return q;
  }

  std::optional<Allocation> Allocate(const ClusterState& s,
                                     const QueuedJob& q) {
    const int kind = jobs_[q.id - 1].kind;
    AdmissionOptions admission;
    admission.cache = &admission_cache_;
    if (options_.admission == Admission::kTessera) {
      return Decide(s, q, admission);
    }
    if (auto a = FindAllocation(s, pool_, PlacementRequest{q.demand, {}},
                                *scorer_, admission)) {
      return a;
    }
    if (options_.admission != Admission::kSplit) return std::nullopt;
    SplitCache::Entry e =
        cache_.Find(s, pool_, kind, kinds_[kind], options_.headroom);
    if (!e.allocation) return std::nullopt;
    const double shared =
        e.shared_step_s > 0 && kinds_[kind].step_s > 0
            ? std::min(1.0, kinds_[kind].step_s / e.shared_step_s)
            : 1.0;
    split_speed_[q.id] = {e.speed, shared};
    return e.allocation;
  }

  // The tessera admission: the options that fit now, the wait for whole
  // capacity, and the earliest predicted finish (DecideStart), re-taken
  // at every event while the job is queued. The running jobs' predicted
  // ends are their remaining work at their current rates (what the
  // service reads from time limits and progress reports).
  std::optional<Allocation> Decide(const ClusterState& s, const QueuedJob& q,
                                   const AdmissionOptions& admission) {
    const StartRequest r = Request(s, q, admission);
    const StartDecision d =
        DecideStart(r, s, [this](JobId id) { return OccupantOf(id); });
    const OptionForecast* c = d.Chosen();
    if (!c || d.waits()) {
      if (c && d.options.size() > 1) waited_.insert(q.id);
      return std::nullopt;
    }
    if (c->option == StartOption::kSplit) {
      const int kind = jobs_[q.id - 1].kind;
      const SplitCache::Entry split =
          cache_.Find(s, pool_, kind, kinds_[kind], options_.headroom);
      const double shared =
          split.shared_step_s > 0 && kinds_[kind].step_s > 0
              ? std::min(1.0, kinds_[kind].step_s / split.shared_step_s)
              : 1.0;
      split_speed_[q.id] = {split.speed, shared};
    }
    return c->allocation;
  }

  // The first GPU of the pool nobody holds with room for `demand`, as a
  // fraction share of it; nullopt if none.
  std::optional<Allocation> IdleGpu(const ClusterState& s,
                                    const Resources& demand) const {
    const Topology& t = s.topology();
    for (const int g : pool_gpus_) {
      const int node = t.gpus[g].node;
      if (t.nodes[node].drained || s.holders_on(g) > 0 ||
          s.free_memory_mib(g) < demand.gpu_memory_mib ||
          s.free_milli(g) < demand.gpu_milli) {
        continue;
      }
      Allocation a;
      a.node = node;
      a.gpus.push_back({g, demand.gpu_milli, demand.gpu_memory_mib});
      if (s.Fits(a)) return a;
    }
    return std::nullopt;
  }

  // Whether a queued job needs several whole GPUs (StartRequest::gang_queued).
  bool GangQueued() const {
    return std::any_of(queue_.begin(), queue_.end(),
                       [this](const QueuedJob& q) {
                         return whole_demand_[jobs_[q.id - 1].kind].gpus > 1;
                       });
  }

  // The squared coefficient of variation of the queued and running jobs'
  // work (StartRequest::work_cv2).
  double WorkCv2() const {
    std::vector<double> work;
    for (const QueuedJob& q : queue_) {
      work.push_back(jobs_[q.id - 1].duration_s);
    }
    for (const auto& [id, r] : running_) {
      work.push_back(jobs_[r.job].duration_s);
    }
    return SquaredCv(work);
  }

  // The options `q` has in `s` (what fits now and the capacity that
  // frees) and its queue.
  StartRequest Request(const ClusterState& s, const QueuedJob& q,
                       const AdmissionOptions& admission) {
    const int kind = jobs_[q.id - 1].kind;
    const ModelJobKind& k = kinds_[kind];
    const Resources& whole = whole_demand_[kind];
    StartInputs in;
    in.now = now_;
    in.work_s = jobs_[q.id - 1].duration_s;
    in.busy_fraction = k.busy_fraction;
    in.law = options_.interference;
    if (whole.gpus == 1) {
      // A GPU of its own, but not exclusively: others may join it when
      // their own decision (charged for slowing it) says so.
      if (auto a = IdleGpu(s, q.demand)) {
        in.candidates.push_back({StartOption::kWhole, *a, 1.0});
      }
    } else if (auto a = FindAllocation(s, pool_, PlacementRequest{whole, {}},
                                       *scorer_, admission)) {
      in.candidates.push_back({StartOption::kWhole, *a, 1.0});
    }
    if (auto a = FindAllocation(s, pool_, PlacementRequest{q.demand, {}},
                                *scorer_, admission)) {
      // The replay runs a fraction uncapped, at the speed the co-location
      // law leaves it (the MPS law was measured without thread caps), so
      // it is offered at 1, not at the service's capped FractionSpeed.
      in.candidates.push_back({StartOption::kFraction, *a, 1.0});
    }
    if (in.candidates.empty()) {
      const SplitCache::Entry split =
          cache_.Find(s, pool_, kind, k, options_.headroom);
      if (split.allocation) {
        in.candidates.push_back(
            {StartOption::kSplit, *split.allocation, split.speed});
      }
    }
    // Later: `whole` GPUs, or (a model that fits one GPU) its fraction.
    in.pool = pool_;
    in.whole_gpus = whole.gpus;
    in.fraction_wait = k.demand_mib <= gpu_.memory_mib;
    in.fraction_milli = q.demand.gpu_milli;
    in.fraction_memory_mib = q.demand.gpu_memory_mib;
    in.ends_at = [this](JobId id) { return now_ + RemainingSeconds(id); };
    in.held_back = QueuedBehind(q.id);
    in.pool_gpus = static_cast<int>(pool_gpus_.size());
    in.work_cv2 = WorkCv2();
    in.gang_queued = GangQueued();
    return BuildStartRequest(s, std::move(in));
  }

  // The jobs queued after `id` (FIFO: all of them wait while it waits).
  int QueuedBehind(JobId id) const {
    auto it = std::find_if(queue_.begin(), queue_.end(),
                           [id](const QueuedJob& q) { return q.id == id; });
    return it == queue_.end() ? 0 : static_cast<int>(queue_.end() - it - 1);
  }

  // A job holding a share: running (its remaining work at its rate), or
  // started earlier this round (all its work, at full speed).
  double RemainingSeconds(JobId id) const {
    if (auto it = running_.find(id); it != running_.end()) {
      return it->second.remaining / it->second.rate;
    }
    return jobs_[id - 1].duration_s;
  }
  Occupant OccupantOf(JobId id) const {
    return {kinds_[jobs_[id - 1].kind].busy_fraction, RemainingSeconds(id)};
  }

  double NextFinish(double t) const {
    double best = kInf;
    for (const auto& [id, r] : running_) {
      best = std::min(best, t + r.remaining / r.rate);
    }
    return best;
  }

  void Advance(double from, double to) {
    const double dt = to - from;
    for (auto& [id, r] : running_) r.remaining -= r.rate * dt;
    milli_seconds_ += static_cast<double>(AllocatedMilli()) * dt;
    mib_seconds_ += static_cast<double>(memory_in_use_) * dt;
  }

  void Finish(double t) {
    bool any = false;
    for (auto it = running_.begin(); it != running_.end();) {
      const Running& r = it->second;
      // Done, up to rounding; or so nearly that the clock could not move.
      const double tolerance = 1e-9 * std::max(1.0, jobs_[r.job].duration_s);
      if (r.remaining > tolerance && t + r.remaining / r.rate > t) {
        ++it;
        continue;
      }
      result_.outcomes[r.job].finish_s = t;
      ++result_.completed;
      memory_in_use_ -= r.memory_mib;
      state_.Release(it->first);
      it = running_.erase(it);
      any = true;
    }
    if (any) UpdateRates();
  }

  void Schedule(double t) {
    if (queue_.empty()) return;
    std::vector<RunningJob> active;
    for (const auto& [id, r] : running_) {
      RunningJob rj;
      rj.id = id;
      rj.user = "sim";
      rj.started_at = result_.outcomes[r.job].start_s;
      rj.time_limit_s = jobs_[r.job].duration_s;
      active.push_back(rj);
    }
    split_speed_.clear();
    now_ = t;
    const Allocator allocate = [this](const ClusterState& s,
                                      const QueuedJob& q) {
      return Allocate(s, q);
    };
    const Decision d = PlanPoolRound(
        state_, t, {pool_, policy_.get(), &queue_, &active}, allocate);
    for (const auto& [id, allocation] : d.start) Start(id, allocation, t);
    if (!d.start.empty()) UpdateRates();
    if (options_.check_invariants && result_.violation.empty()) {
      result_.violation = state_.CheckInvariants();
    }
  }

  void Start(JobId id, const Allocation& a, double t) {
    if (Status st = state_.Reserve(id, a); !st.ok()) {
      // The policy started something that does not fit: a bug.
      if (result_.violation.empty()) result_.violation = st.error().message;
      return;
    }
    const int j = static_cast<int>(id - 1);
    queue_.erase(std::find_if(queue_.begin(), queue_.end(),
                              [id](const QueuedJob& q) { return q.id == id; }));
    JobOutcome& o = result_.outcomes[j];
    o.ran = true;
    o.start_s = t;
    o.gpus = static_cast<int>(a.gpus.size());
    Running r;
    r.job = j;
    r.remaining = jobs_[j].duration_s;
    if (auto it = split_speed_.find(id); it != split_speed_.end()) {
      o.split = true;
      r.speed = it->second.first;
      ++result_.split_jobs;
      split_speed_sum_ += r.speed;
      shared_speed_sum_ += it->second.second;
    }
    const ModelJobKind& kind = kinds_[jobs_[j].kind];
    if (a.exclusive) {
      int64_t held = 0;
      for (const GpuShare& s : a.gpus) {
        held += state_.topology().gpus[s.gpu].memory_mib;
      }
      r.memory_mib = std::min(kind.demand_mib, held);
    } else {
      for (const GpuShare& s : a.gpus) r.memory_mib += s.memory_mib;
    }
    memory_in_use_ += r.memory_mib;
    running_.emplace(id, r);
    result_.max_running =
        std::max(result_.max_running, static_cast<int>(running_.size()));
  }

  // Each job's rate from the number of jobs on its busiest GPU.
  void UpdateRates() {
    for (auto& [id, r] : running_) {
      int k = 1;
      for (const GpuShare& s : state_.AllocationOf(id)->gpus) {
        k = std::max(k, state_.holders_on(s.gpu));
      }
      r.rate = r.speed *
               InterferenceRate(options_.interference,
                                kinds_[jobs_[r.job].kind].busy_fraction, k);
    }
  }

  int64_t AllocatedMilli() const {
    int64_t milli = 0;
    for (const int g : pool_gpus_) {
      milli += state_.exclusive(g) ? kFullGpuMilli : state_.reserved_milli(g);
    }
    return milli;
  }

  void Record(double t) {
    if (!options_.record_utilization) return;
    UtilizationPoint p;
    p.t = t;
    p.gpu_pct = 100.0 * static_cast<double>(AllocatedMilli()) / CapacityMilli();
    p.memory_pct = 100.0 * static_cast<double>(memory_in_use_) /
                   static_cast<double>(capacity_mib_);
    p.queued = static_cast<int>(queue_.size());
    p.running = static_cast<int>(running_.size());
    result_.utilization.push_back(p);
  }

  double CapacityMilli() const {
    return static_cast<double>(pool_gpus_.size()) * kFullGpuMilli;
  }

  void Summarize(double end) {
    std::vector<double> delays;
    double jct = 0, stretch = 0;
    for (size_t j = 0; j < jobs_.size(); ++j) {
      const JobOutcome& o = result_.outcomes[j];
      if (!o.ran) continue;
      delays.push_back(o.start_s - jobs_[j].arrival_s);
      jct += o.finish_s - jobs_[j].arrival_s;
      stretch += (o.finish_s - jobs_[j].arrival_s) / jobs_[j].duration_s;
    }
    const auto n = static_cast<double>(result_.completed);
    if (n > 0) {
      result_.mean_jct_s = jct / n;
      result_.mean_stretch = stretch / n;
    }
    if (!delays.empty()) {
      double sum = 0;
      for (const double d : delays) sum += d;
      result_.delay_mean_s = sum / static_cast<double>(delays.size());
      result_.delay_p50_s = Percentile(delays, 0.50);
      result_.delay_p95_s = Percentile(delays, 0.95);
    }
    if (result_.split_jobs > 0) {
      const auto splits = static_cast<double>(result_.split_jobs);
      result_.mean_split_speed = split_speed_sum_ / splits;
      result_.mean_split_shared_speed = shared_speed_sum_ / splits;
    }
    result_.decided_waits = static_cast<int64_t>(waited_.size());
    result_.makespan_s = end;
    if (end > 0) {
      result_.gpu_util_pct = 100.0 * milli_seconds_ / (CapacityMilli() * end);
      result_.memory_util_pct =
          100.0 * mib_seconds_ / (static_cast<double>(capacity_mib_) * end);
    }
  }

  const std::vector<ModelJobKind>& kinds_;
  const std::vector<ModelJob>& jobs_;
  const ModelSimOptions& options_;
  const std::string pool_;
  const GpuInfo& gpu_;
  SplitCache& cache_;
  ClusterState state_;
  std::unique_ptr<QueuePolicy> policy_;
  Workload workload_;  // outlives scorer_
  std::unique_ptr<GpuScorer> scorer_;
  AdmissionCache admission_cache_;
  std::vector<Resources> demand_;        // by kind, under this admission
  std::vector<Resources> whole_demand_;  // by kind: whole GPUs
  double now_ = 0;                       // the round's time
  std::set<JobId> waited_;               // jobs the tessera decision held back
  std::vector<int> pool_gpus_;
  int64_t capacity_mib_ = 0;
  std::vector<QueuedJob> queue_;      // in arrival order
  std::map<JobId, Running> running_;  // by id
  // This round's split starts: their speed and their speed at the
  // slivers' compute shares.
  std::map<JobId, std::pair<double, double>> split_speed_;
  int64_t memory_in_use_ = 0;
  double milli_seconds_ = 0, mib_seconds_ = 0;
  double split_speed_sum_ = 0, shared_speed_sum_ = 0;
  ModelSimResult result_;
};

}  // namespace

std::vector<double> MeanJctOfCommonJobs(
    const std::vector<const ModelSimResult*>& runs) {
  std::vector<double> sums(runs.size(), 0);
  if (runs.empty()) return sums;
  int64_t common = 0;
  for (size_t j = 0; j < runs.front()->outcomes.size(); ++j) {
    const bool everywhere =
        std::all_of(runs.begin(), runs.end(), [j](const ModelSimResult* r) {
          return r->outcomes[j].ran && r->outcomes[j].finish_s > 0;
        });
    if (!everywhere) continue;
    ++common;
    for (size_t r = 0; r < runs.size(); ++r) {
      const JobOutcome& o = runs[r]->outcomes[j];
      sums[r] += o.finish_s - o.arrival_s;
    }
  }
  for (double& s : sums) s = common > 0 ? s / static_cast<double>(common) : 0;
  return sums;
}

Result<ModelSimResult> SimulateModelJobs(const Topology& topology,
                                         const std::vector<ModelJobKind>& kinds,
                                         const std::vector<ModelJob>& jobs,
                                         const ModelSimOptions& options,
                                         SplitCache* cache) {
  auto pool = ResolveModelPool(topology, options.pool);
  if (!pool) return pool.error();
  const GpuInfo* gpu = PoolGpu(topology, *pool);
  if (gpu == nullptr) return BadInput("pool '" + *pool + "' has no GPUs");
  if (options.interference.alpha && !(*options.interference.alpha >= 0)) {
    return BadInput("interference.alpha: must be >= 0");
  }
  SplitCache local;
  Replay replay(topology, kinds, jobs, options, *pool, *gpu,
                cache ? *cache : local);
  TESSERA_RETURN_IF_ERROR(replay.Init());
  return replay.Run();
}

Result<std::vector<ModelSimResult>> RunModelExperiment(
    const Topology& topology, const std::vector<ModelJobKind>& kinds,
    const ModelExperimentOptions& options, SplitCache& cache,
    const std::function<void(int done, int total)>& progress) {
  if (kinds.empty()) return BadInput("no model job kinds");
  if (options.seeds < 1) return BadInput("seeds: must be at least 1");
  if (options.workload.jobs < 1)
    return BadInput("workload.jobs: must be at least 1");
  if (!(options.workload.arrival_per_hour > 0)) {
    return BadInput("workload.arrival_per_hour: must be > 0");
  }
  if (options.interference.empty()) {
    return BadInput("interference: no values");
  }
  for (const InterferenceLaw& law : options.interference) {
    if (law.alpha && !(*law.alpha >= 0)) {
      return BadInput("interference.alpha: must be >= 0");
    }
  }
  std::vector<std::vector<ModelJob>> arrivals;
  for (int s = 0; s < options.seeds; ++s) {
    arrivals.push_back(GenerateModelJobs(static_cast<int>(kinds.size()),
                                         options.workload,
                                         options.first_seed + s));
  }
  const size_t per_seed = options.interference.size() * std::size(kAdmissions);
  const int total = static_cast<int>(per_seed) * options.seeds;
  std::vector<std::optional<Result<ModelSimResult>>> out(total);
  std::mutex mu;
  int done = 0;
  ParallelFor(total, options.threads, [&](int i) {
    const size_t s = static_cast<size_t>(i) / per_seed;
    const size_t r = static_cast<size_t>(i) % per_seed;
    ModelSimOptions sim = options.sim;
    sim.interference = options.interference[r / std::size(kAdmissions)];
    sim.admission = kAdmissions[r % std::size(kAdmissions)];
    sim.seed = options.first_seed + s;
    out[i] = SimulateModelJobs(topology, kinds, arrivals[s], sim, &cache);
    std::lock_guard lock(mu);
    ++done;
    if (progress) progress(done, total);
  });
  std::vector<ModelSimResult> results;
  results.reserve(total);
  for (auto& r : out) {
    if (!*r) return r->error();
    results.push_back(std::move(*r).value());
  }
  return results;
}

}  // namespace tessera::sim
