// RunTimedElastic: the timed replay's event loop (arrivals, departures, a
// policy round after each batch of events at one instant) with elastic
// jobs: the policy plans on the state with every extra free, its starts go
// beside the extras where they fit now, else the extras in their way are
// taken back at once, and free GPUs on an elastic job's node go to the
// running elastic jobs, oldest first, after every round. Without elastic pods
// it is RunTimed's loop (tested equal).
#include "sim/timed_elastic.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "scheduler/admission.h"
#include "scheduler/elastic.h"
#include "scheduler/parallel.h"
#include "scheduler/policy.h"
#include "scheduler/round.h"
#include "sim/replay.h"
#include "sim/timed_events.h"

namespace tessera::sim {

// What this file uses of scheduler/, beyond what its headers name.
using scheduler::Allocation;
using scheduler::Allocator;
using scheduler::ElasticGuaranteedDemand;
using scheduler::ElasticHolding;
using scheduler::ElasticRequest;
using scheduler::ElasticStartAllocation;
using scheduler::ExtrasBack;
using scheduler::ExtrasInTheWay;
using scheduler::FindAllocation;
using scheduler::FreeWorkerGpus;
using scheduler::GpuShare;
using scheduler::GrowOrder;
using scheduler::kFullGpuMilli;
using scheduler::ParallelFor;
using scheduler::PlanOnGuaranteed;
using scheduler::PlanPoolRound;
using scheduler::RoundPool;
using scheduler::WithoutWorkers;
using scheduler::WithWorkers;

namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();
// Policy passes in one round at most (ElasticReplay::Round): each takes
// extras back, so a few suffice; the bound keeps a round finite.
constexpr int kMaxPasses = 10;

int64_t GpuMilliOf(const Allocation& a) {
  int64_t milli = 0;
  for (const GpuShare& share : a.gpus) {
    milli += a.exclusive ? kFullGpuMilli : share.milli;
  }
  return milli;
}

// Speedup of k workers (ElasticTimedOptions::scaling_efficiency).
double Speedup(int k, double efficiency) { return 1 + (k - 1) * efficiency; }

// An elastic pod's worker, request and run.
struct ElasticPod {
  Resources worker;  // one whole GPU and 1/max of the pod's CPU and memory
  ElasticRequest request;
  std::vector<int> workers;  // ids, parallel to the allocation's GPUs
  // Work left at `since` in seconds at max workers, and the rate since.
  double remaining = 0, rate = 0, since = 0;
};

// The node order and arrival order are RunTimed's (TimedReplayBase).
class ElasticReplay : private TimedReplayBase {
 public:
  // `pods` must outlive the replay.
  ElasticReplay(const Topology& topology, const std::vector<TimedPod>& pods,
                std::vector<std::optional<ElasticPod>> elastic,
                const GpuScorer& scorer, QueuePolicy& policy,
                const ElasticTimedOptions& options, ElasticTimedRun& run)
      : TimedReplayBase(topology, pods, options.base.seed,
                        options.base.seeded_node_order),
        elastic_(std::move(elastic)),
        scorer_(scorer),
        policy_(policy),
        options_(options),
        run_(run),
        gpu_seconds_(pods.size(), 0),
        held_since_(pods.size(), 0) {}

  Status Run() {
    const size_t n = pods_.size();
    run_.pods = static_cast<int64_t>(n);
    run_.pod_jct_s.assign(n, -1);
    run_.pod_delay_s.assign(n, -1);
    run_.first_arrival = events_.first_arrival();
    Result<TimedEvents::End> ran = events_.Run(
        {[this](double t) { AccountUtilization(t); },
         [this](int p, double now) { Depart(p, now); },
         [this](int p, double now) { Arrive(p, now); },
         [this](double now) { return Round(now); }, options_.base.progress});
    TESSERA_RETURN_IF_ERROR(ran);
    const double now = ran->now;
    const double last_departure = ran->last_departure;
    run_.stuck = static_cast<int64_t>(queue_.size());
    run_.makespan_s = last_departure - run_.first_arrival;
    const double span = std::max(last_departure, now) - run_.first_arrival;
    run_.mean_utilization_pct =
        span > 0 ? 100 * milli_seconds_ / span / capacity_milli_ : 0;
    Summarize();
    return {};
  }

 private:
  void AccountUtilization(double t) {
    milli_seconds_ += static_cast<double>(milli_) * (t - clock_);
    clock_ = t;
  }

  void Arrive(int p, double now) {
    if (!Queue(p, now)) ++run_.unplaceable;
  }

  // The GPUs pod p holds now (its workers, for an elastic pod).
  int Held(int p) const {
    const Allocation* a = state_.AllocationOf(pods_[p].job.id);
    return a == nullptr ? 0 : static_cast<int>(a->gpus.size());
  }

  // An elastic pod's progress until now at its rate so far, then its new
  // rate with the workers it holds now and its new end.
  void Reschedule(int p, double now) {
    ElasticPod& e = *elastic_[p];
    e.remaining = std::max(0.0, e.remaining - e.rate * (now - e.since));
    e.since = now;
    const double eff = options_.scaling_efficiency;
    e.rate = Speedup(Held(p), eff) / Speedup(e.request.max, eff);
    events_.ScheduleDeparture(p, now + e.remaining / e.rate);
  }

  // Changes what pod p holds to `next` (its GPU time so far counted).
  void Change(int p, const Allocation& next, double now) {
    const JobId id = pods_[p].job.id;
    const Allocation before = *state_.AllocationOf(id);
    gpu_seconds_[p] +=
        static_cast<double>(before.gpus.size()) * (now - held_since_[p]);
    held_since_[p] = now;
    milli_ -= GpuMilliOf(before);
    state_.Release(id);
    (void)state_.Reserve(id, next);
    milli_ += GpuMilliOf(next);
    Reschedule(p, now);
  }

  void Start(int p, double now) {
    const QueuedJob& job = pods_[p].job;
    AddRunning(p, now);
    const Allocation& a = *state_.AllocationOf(job.id);
    milli_ += GpuMilliOf(a);
    gpu_seconds_[p] = 0;
    held_since_[p] = now;
    if (elastic_[p]) {
      // Its whole work again (a preempted pod restarts from scratch).
      ElasticPod& e = *elastic_[p];
      e.workers.clear();
      for (int w = 0; w < static_cast<int>(a.gpus.size()); ++w) {
        e.workers.push_back(w);
      }
      e.remaining = pods_[p].duration;
      e.since = now;
      e.rate = 0;
      Reschedule(p, now);
      return;
    }
    events_.ScheduleDeparture(p, now + pods_[p].duration);
  }

  void Stop(int p, double now) {
    const JobId id = pods_[p].job.id;
    if (const Allocation* a = state_.AllocationOf(id)) {
      milli_ -= GpuMilliOf(*a);
      gpu_seconds_[p] +=
          static_cast<double>(a->gpus.size()) * (now - held_since_[p]);
    }
    state_.Release(id);
    RemoveRunning(p);
  }

  void Depart(int p, double now) {
    Stop(p, now);
    ++run_.started;
    run_.pod_delay_s[p] = waited_[p];
    run_.pod_jct_s[p] = now - pods_[p].arrival;
  }

  // The running elastic pods as the round's elastic rules see them.
  std::vector<ElasticHolding> Holdings() const {
    std::vector<ElasticHolding> out;
    for (const RunningJob& r : running_) {
      const auto p = static_cast<int>(r.id - 1);
      if (!elastic_[p]) continue;
      const ElasticPod& e = *elastic_[p];
      out.push_back({r.id, state_.AllocationOf(r.id), &e.workers, e.worker,
                     e.request, r.started_at, nullptr});
    }
    return out;
  }

  // Takes back, at once, the extras in the way of `a` (ExtrasInTheWay; the
  // service asks for them with notice, a replay has no grace to give).
  // Whether there were any.
  bool TakeBackFor(const Allocation& a, double now) {
    const std::vector<ExtrasBack> in_the_way =
        ExtrasInTheWay(state_, a, Holdings());
    for (const ExtrasBack& back : in_the_way) {
      const auto p = static_cast<int>(back.id - 1);
      ElasticPod& e = *elastic_[p];
      const Allocation next =
          WithoutWorkers(*state_.AllocationOf(back.id), e.worker, e.workers,
                         {back.workers.begin(), back.workers.end()});
      Change(p, next, now);
      ++run_.shrinks;
      run_.workers_taken_back += static_cast<int64_t>(back.workers.size());
    }
    return !in_the_way.empty();
  }

  // Free GPUs on an elastic pod's node to the running elastic pods, in
  // GrowOrder, up to their max.
  void Grow(double now) {
    std::vector<JobId> order;
    {
      const std::vector<ElasticHolding> jobs = Holdings();
      for (const size_t i : GrowOrder(jobs)) order.push_back(jobs[i].id);
    }
    for (const JobId id : order) {
      const auto p = static_cast<int>(id - 1);
      ElasticPod& e = *elastic_[p];
      const Allocation& held = *state_.AllocationOf(id);
      const std::vector<int> gpus =
          FreeWorkerGpus(state_, held, e.worker, e.request.max - Held(p));
      if (gpus.empty()) continue;
      const Allocation next = WithWorkers(held, e.worker, e.workers, gpus);
      Change(p, next, now);
      ++run_.grows;
      run_.workers_grown += static_cast<int64_t>(gpus.size());
    }
  }

  // A policy round, then growth. A start planned on extras is placed
  // beside them if it fits now, else they are taken back (StartBesideExtras,
  // the service's rule); one that fits even then nowhere (an earlier start
  // of the round took its GPUs) stays queued. When extras were taken back
  // for it, the round is planned again at the same instant, and nothing
  // grows meanwhile: the service, which asks for them with notice, plans
  // again once they are gone (with no grace, at once).
  Status Round(double now) {
    if (!queue_.empty()) {
      ++run_.rounds;
      for (int pass = 0; pass < kMaxPasses; ++pass) {
        Result<bool> again = Plan(now);
        TESSERA_RETURN_IF_ERROR(again);
        if (!*again) break;
      }
    }
    Grow(now);
    if (options_.base.on_round) options_.base.on_round(now, state_);
    return {};
  }

  // One pass of the policy over the queue; whether a start waits for
  // extras taken back in this pass.
  Result<bool> Plan(double now) {
    const Allocator allocate = [this](const ClusterState& s,
                                      const QueuedJob& job) {
      const auto p = static_cast<int>(job.id - 1);
      if (elastic_[p]) {
        return ElasticStartAllocation(s, pool_, elastic_[p]->worker,
                                      elastic_[p]->request, scorer_, admission_,
                                      pods_[p].request.gpu_kinds);
      }
      return FindAllocation(s, pool_, pods_[p].request, scorer_, admission_);
    };
    // A round that preempts starts nothing (PlanPastPreemptions).
    const Decision d = PlanPastPreemptions(
        [&] {
          const bool any_elastic = std::any_of(
              running_.begin(), running_.end(), [this](const RunningJob& r) {
                return elastic_[r.id - 1].has_value();
              });
          const RoundPool pool{pool_, &policy_, &queue_, &running_};
          return any_elastic
                     ? PlanPoolRound(PlanOnGuaranteed(state_, Holdings()), now,
                                     pool, allocate)
                     : PlanPoolRound(state_, now, pool, allocate);
        },
        [&](int p) {
          Stop(p, now);
          ++run_.preemptions;
          Enqueue(p, now);
        });
    bool waits = false;
    std::set<int> waited_for;  // GPUs of starts that wait for extras
    for (const auto& [id, allocation] : d.start) {
      const auto p = static_cast<int>(id - 1);
      if (running_at_[p] >= 0) {
        return Internal("elastic timed replay: the " +
                        std::string(policy_.name()) + " policy started job " +
                        std::to_string(id) + ", which runs already");
      }
      const QueuedJob& job = pods_[p].job;
      std::optional<Allocation> at = StartBesideExtras(
          state_, allocation,
          [&](const ClusterState& s) { return allocate(s, job); }, waited_for);
      if (!at) {
        const bool took = TakeBackFor(allocation, now);
        if (!state_.Fits(allocation)) {
          if (took) {
            waits = true;
            for (const GpuShare& g : allocation.gpus) waited_for.insert(g.gpu);
          }
          continue;
        }
        at = allocation;
      }
      (void)state_.Reserve(id, *at);
      Start(p, now);
    }
    if (!d.start.empty()) {
      std::erase_if(queue_, [this](const QueuedJob& q) {
        return running_at_[q.id - 1] >= 0;
      });
    }
    return waits;
  }

  void Summarize() {
    const size_t n = pods_.size();
    run_.pod_gpu_seconds = gpu_seconds_;
    run_.pod_elastic.assign(n, 0);
    run_.pod_min.assign(n, 0);
    run_.pod_max.assign(n, 0);
    double jct = 0, wait = 0;
    int64_t started = 0;
    for (size_t p = 0; p < n; ++p) {
      if (run_.pod_jct_s[p] < 0) continue;
      ++started;
      jct += run_.pod_jct_s[p];
      wait += run_.pod_delay_s[p];
    }
    if (started > 0) {
      run_.mean_jct_s = jct / static_cast<double>(started);
      run_.mean_wait_s = wait / static_cast<double>(started);
    }
  }

  std::vector<std::optional<ElasticPod>> elastic_;
  const GpuScorer& scorer_;
  QueuePolicy& policy_;
  const ElasticTimedOptions& options_;
  ElasticTimedRun& run_;
  std::vector<double> gpu_seconds_, held_since_;  // the current run's
  int64_t milli_ = 0;                             // allocated GPU milli
  double milli_seconds_ = 0, clock_ = 0;
};

// kBadInput for what RunTimedElastic cannot replay (its header's list), in
// the order the checks are made.
Status CheckElasticInput(const Topology& topology,
                         const std::vector<TracePod>& pods,
                         const ElasticTimedOptions& options) {
  const TimedOptions& base = options.base;
  if (pods.empty()) return BadInput("the pod list has no pods");
  if (topology.gpus.empty()) return BadInput("the cluster has no GPUs");
  if (!(base.load_factor > 0) || !std::isfinite(base.load_factor)) {
    return BadInput("load factor: must be positive, got " +
                    std::to_string(base.load_factor));
  }
  if (options.elastic_pct < 0 || options.elastic_pct > 100) {
    return BadInput("elastic_pct: a percentage in 0..100, got " +
                    std::to_string(options.elastic_pct));
  }
  if (options.min_workers < 1) {
    return BadInput("min_workers: at least 1, got " +
                    std::to_string(options.min_workers));
  }
  if (!(options.scaling_efficiency > 0 && options.scaling_efficiency <= 1)) {
    return BadInput("scaling_efficiency: in (0, 1], got " +
                    std::to_string(options.scaling_efficiency));
  }
  if (!options.elastic_pods.empty()) {
    if (options.elastic_pods.size() != pods.size()) {
      return BadInput(
          "elastic pods: " + std::to_string(options.elastic_pods.size()) +
          " marks for " + std::to_string(pods.size()) + " pods");
    }
    for (size_t i = 0; i < pods.size(); ++i) {
      if (options.elastic_pods[i] &&
          (pods[i].num_gpu < 1 || pods[i].gpu_milli < kFullGpuMilli)) {
        return BadInput("elastic pods: " + pods[i].name +
                        " does not ask whole GPUs");
      }
    }
  }
  if (base.model_pods_pct != 0) {
    return BadInput("elastic_pct: not combined with base.model_pods_pct");
  }
  if (!base.queues.empty()) {
    return BadInput("elastic_pct: not combined with base.queues");
  }
  return {};
}

// The trace's pods as RunTimed maps them, arriving load_factor times
// faster, each in its team when there are teams.
Result<std::vector<TimedPod>> ElasticTimedPods(
    const std::vector<TracePod>& pods, const TimedOptions& base) {
  auto timed = MakeTimedPods(pods);
  if (!timed) return timed.error();
  if (base.load_factor != 1) {
    double first = kNever;
    for (const TimedPod& p : *timed) first = std::min(first, p.arrival);
    for (TimedPod& p : *timed) {
      p.arrival = first + (p.arrival - first) / base.load_factor;
      p.job.submitted_at = p.arrival;
    }
  }
  if (base.teams > 0) {
    for (size_t i = 0; i < pods.size(); ++i) {
      (*timed)[i].job.team =
          "team" + std::to_string(TeamOfPod(pods[i].name, base.teams));
    }
  }
  return timed;
}

// The pods that are elastic (IsElasticPod, or options.elastic_pods), the
// same in both runs: each one's min and max workers. Only the elastic run
// (`elastic`) replays them as such.
struct ElasticMarks {
  int64_t count = 0;
  std::vector<int> min, max;  // 0 for a pod that is not elastic
  // The elastic run's: each elastic pod's worker and request.
  std::vector<std::optional<ElasticPod>> pods;
};

// Marks the elastic pods; in the elastic run, each one's queue request
// becomes its guaranteed part (its `min` workers) and backfill's estimate
// its run on those.
ElasticMarks MarkElasticPods(const std::vector<TracePod>& pods,
                             const ElasticTimedOptions& options, bool elastic,
                             std::vector<TimedPod>& timed) {
  ElasticMarks marks;
  marks.pods.resize(pods.size());
  marks.min.assign(pods.size(), 0);
  marks.max.assign(pods.size(), 0);
  for (size_t i = 0; i < pods.size(); ++i) {
    if (options.elastic_pods.empty()
            ? !IsElasticPod(pods[i], options.elastic_pct)
            : !options.elastic_pods[i]) {
      continue;
    }
    ++marks.count;
    const int max = pods[i].num_gpu;
    marks.min[i] = std::min(options.min_workers, max);
    marks.max[i] = max;
    if (!elastic) continue;
    ElasticPod e;
    e.worker.gpus = 1;
    e.worker.cpu_milli = pods[i].cpu_milli / max;
    e.worker.memory_mib = pods[i].memory_mib / max;
    e.request.min = marks.min[i];
    e.request.max = max;
    TimedPod& t = timed[i];
    t.request.demand = ElasticGuaranteedDemand(e.worker, e.request);
    t.job.demand = t.request.demand;
    // Backfill's estimate: its run on `min` workers (the longest it takes).
    const double eff = options.scaling_efficiency;
    t.job.time_limit_s = std::max(
        t.duration * Speedup(max, eff) / Speedup(e.request.min, eff), 1.0);
    marks.pods[i] = std::move(e);
  }
  return marks;
}

// The run's per-pod marks, and the mean JCT and wait of the elastic pods
// that started.
void SummarizeElasticPods(const ElasticMarks& marks, ElasticTimedRun& run) {
  const size_t pods = marks.max.size();
  for (size_t i = 0; i < pods; ++i) {
    run.pod_elastic[i] = marks.max[i] > 0 ? 1 : 0;
  }
  run.pod_min = marks.min;
  run.pod_max = marks.max;
  double jct = 0, wait = 0;
  int64_t n = 0;
  for (size_t i = 0; i < pods; ++i) {
    if (!run.pod_elastic[i] || run.pod_jct_s[i] < 0) continue;
    ++n;
    jct += run.pod_jct_s[i];
    wait += run.pod_delay_s[i];
  }
  if (n > 0) {
    run.mean_elastic_jct_s = jct / static_cast<double>(n);
    run.mean_elastic_wait_s = wait / static_cast<double>(n);
  }
}

}  // namespace

bool IsElasticPod(const TracePod& pod, int pct) {
  return pod.num_gpu >= 2 && pod.gpu_milli >= kFullGpuMilli &&
         DeclaresModel(pod.name, pct);
}

Result<ElasticTimedRun> RunTimedElastic(const Topology& topology,
                                        const std::vector<TracePod>& pods,
                                        const ElasticTimedOptions& options,
                                        bool elastic) {
  const auto wall = std::chrono::steady_clock::now();
  const TimedOptions& base = options.base;
  TESSERA_RETURN_IF_ERROR(CheckElasticInput(topology, pods, options));
  auto timed = ElasticTimedPods(pods, base);
  if (!timed) return timed.error();
  auto deciders = MakeTimedDeciders(base, pods);
  if (!deciders) return deciders.error();

  ElasticTimedRun run;
  run.elastic = elastic;
  ElasticMarks marks = MarkElasticPods(pods, options, elastic, *timed);
  run.elastic_pods = marks.count;
  ElasticReplay replay(topology, *timed, std::move(marks.pods),
                       *deciders->scorer, *deciders->policy, options, run);
  TESSERA_RETURN_IF_ERROR(replay.Run());
  SummarizeElasticPods(marks, run);
  run.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall)
          .count();
  return run;
}

Result<ElasticComparison> CompareElastic(const Topology& topology,
                                         const std::vector<TracePod>& pods,
                                         const ElasticTimedOptions& options,
                                         int threads) {
  if (pods.empty()) return BadInput("the pod list has no pods");
  if (auto timed = MakeTimedPods(pods); !timed) return timed.error();
  const Workload workload = PodWorkload(pods);
  ElasticTimedOptions o = options;
  if (o.base.workload == nullptr) o.base.workload = &workload;
  o.base.on_round = nullptr;
  std::optional<Result<ElasticTimedRun>> runs[2];
  ParallelFor(2, threads, [&](int r) {
    ElasticTimedOptions mine = o;
    if (options.base.progress) {
      mine.base.progress = [&, r](double f) {
        if (r == 1) options.base.progress(f);
      };
    }
    runs[r] = RunTimedElastic(topology, pods, mine, r == 1);
  });
  if (!*runs[0]) return runs[0]->error();
  if (!*runs[1]) return runs[1]->error();
  return ElasticComparison{std::move(runs[0]->value()),
                           std::move(runs[1]->value())};
}

}  // namespace tessera::sim
