// RunTimed: the trace's pods mapped to queue jobs, the event loop on a
// virtual clock (arrivals, departures, a policy round after each batch of
// events at one instant), the figures, and the runs in parallel.
#include "sim/timed_replay.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <queue>
#include <random>
#include <utility>

#include "common/stats.h"
#include "scheduler/admission.h"
#include "scheduler/parallel.h"
#include "sim/replay.h"

namespace tessera::scheduler {
namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

// How often RunTimed reports progress, as a fraction of the arrivals.
constexpr double kProgressStep = 0.01;

// The trace's QoS classes as queue priorities: latency-sensitive (and
// Kubernetes' Guaranteed) above Burstable above best-effort.
int QosPriority(const std::string& qos) {
  if (qos == "LS" || qos == "Guaranteed") return 2;
  if (qos == "Burstable") return 1;
  return 0;
}

// The GPU milli an allocation takes (whole GPUs count 1000 each).
int64_t GpuMilliOf(const Allocation& a) {
  int64_t milli = 0;
  for (const GpuShare& share : a.gpus) {
    milli += a.exclusive ? kFullGpuMilli : share.milli;
  }
  return milli;
}

// Arrivals `factor` times faster, from the first one on.
void Compress(std::vector<TimedPod>& pods, double factor) {
  double first = kNever;
  for (const TimedPod& p : pods) first = std::min(first, p.arrival);
  for (TimedPod& p : pods) {
    p.arrival = first + (p.arrival - first) / factor;
    p.job.submitted_at = p.arrival;
  }
}

std::string PodName(const TracePod& pod, size_t index) {
  return "pod '" + pod.name + "' (number " + std::to_string(index + 1) +
         " in the list)";
}

// A quantity that changes in steps over time: its integral, peak and
// change points, from the first Set on.
class StepSeries {
 public:
  void Set(double t, double value) {
    if (points_.empty()) {
      start_ = t;
    } else {
      integral_ += value_ * (t - time_);
    }
    time_ = t;
    if (!points_.empty() && value == value_) return;
    value_ = value;
    peak_ = std::max(peak_, value);
    if (!points_.empty() && points_.back().first == t) {
      points_.back().second = value;
    } else {
      points_.emplace_back(t, value);
    }
  }
  double peak() const { return peak_; }
  // The mean over [start, t], t at or after the last Set.
  double MeanUntil(double t) const {
    if (points_.empty() || t <= start_) return 0;
    return (integral_ + value_ * (t - time_)) / (t - start_);
  }
  // `n` buckets splitting [start, end] evenly: (bucket start - start, the
  // time-weighted mean over the bucket).
  std::vector<std::pair<double, double>> Buckets(double end, int n) const {
    std::vector<std::pair<double, double>> out;
    if (points_.empty() || n < 1 || !(end > start_)) return out;
    const double width = (end - start_) / n;
    std::vector<double> sum(n, 0.0);
    for (size_t i = 0; i < points_.size(); ++i) {
      const double a = points_[i].first;
      const double b = i + 1 < points_.size() ? points_[i + 1].first : end;
      const double v = points_[i].second;
      auto k = static_cast<int>((a - start_) / width);
      for (k = std::clamp(k, 0, n - 1); k < n; ++k) {
        const double lo = start_ + k * width;
        const double hi = k + 1 == n ? end : lo + width;
        if (lo >= b) break;
        sum[k] += v * (std::min(b, hi) - std::max(a, lo));
      }
    }
    for (int k = 0; k < n; ++k) out.emplace_back(k * width, sum[k] / width);
    return out;
  }

 private:
  double start_ = 0, integral_ = 0, peak_ = 0;
  double time_ = 0, value_ = 0;  // the last Set
  std::vector<std::pair<double, double>> points_;
};

// One replay: the queue, the running pods and the clock. Pod p is job p+1.
class Replay {
 public:
  Replay(const Topology& topology, const std::vector<TimedPod>& pods,
         const GpuScorer& scorer, QueuePolicy& policy,
         const TimedOptions& options, TimedRun& run)
      : pods_(pods),
        scorer_(scorer),
        policy_(policy),
        options_(options),
        run_(run),
        state_(topology),
        pool_(topology.pools.empty() ? "" : topology.pools[0]),
        capacity_milli_(static_cast<double>(GpuCapacityMilli(topology))),
        running_at_(pods.size(), -1),
        queued_since_(pods.size(), 0),
        waited_(pods.size(), 0),
        epoch_(pods.size(), 0) {
    // Ties between nodes go by one fixed random order per seed, as in the
    // snapshot replay.
    node_order_.resize(topology.nodes.size());
    std::iota(node_order_.begin(), node_order_.end(), 0);
    std::mt19937_64 rng(options.seed);
    std::shuffle(node_order_.begin(), node_order_.end(), rng);
    admission_.node_order = node_order_;
    admission_.cache = &cache_;
    arrivals_.resize(pods.size());
    std::iota(arrivals_.begin(), arrivals_.end(), 0);
    std::stable_sort(arrivals_.begin(), arrivals_.end(), [&](int a, int b) {
      return pods[a].arrival < pods[b].arrival;
    });
  }

  Status Run() {
    run_.pods = static_cast<int64_t>(pods_.size());
    run_.pod_delay_s.assign(pods_.size(), -1);
    run_.first_arrival = pods_.empty() ? 0 : pods_[arrivals_[0]].arrival;
    double now = run_.first_arrival;
    double last_departure = run_.first_arrival;
    double next_report = 0;
    while (true) {
      const double t = std::min(NextArrival(), NextDeparture());
      if (t == kNever) break;
      now = t;
      while (NextDeparture() <= now) {
        const int p = departures_.top().pod;
        departures_.pop();
        Depart(p, now);
        last_departure = now;
      }
      while (NextArrival() <= now) Arrive(arrivals_[next_arrival_++], now);
      TESSERA_RETURN_IF_ERROR(Round(now));
      const double done =
          static_cast<double>(next_arrival_) / static_cast<double>(run_.pods);
      if (options_.progress && done >= next_report) {
        options_.progress(done);
        next_report = done + kProgressStep;
      }
    }
    run_.stuck = static_cast<int64_t>(queue_.size());
    run_.makespan_s = last_departure - run_.first_arrival;
    run_.delay_s = SummarizeDelays(std::move(delays_));
    const double end = std::max(last_departure, now);
    run_.mean_utilization_pct =
        100 * utilization_.MeanUntil(end) / capacity_milli_;
    run_.peak_utilization_pct = 100 * utilization_.peak() / capacity_milli_;
    for (auto [t, milli] :
         utilization_.Buckets(end, options_.utilization_points)) {
      run_.utilization.emplace_back(t, 100 * milli / capacity_milli_);
    }
    if (const double waiting = waiting_.MeanUntil(end); waiting > 0) {
      run_.queued_utilization_pct =
          100 * waiting_milli_.MeanUntil(end) / waiting / capacity_milli_;
    }
    run_.mean_queue = queue_length_.MeanUntil(end);
    run_.peak_queue = static_cast<int64_t>(queue_length_.peak());
    return {};
  }

 private:
  struct Departure {
    double time;
    int pod;
    int epoch;  // the run it ends; stale once the pod was preempted
    bool operator>(const Departure& o) const {
      return time != o.time ? time > o.time : pod > o.pod;
    }
  };

  double NextArrival() const {
    return next_arrival_ < arrivals_.size()
               ? pods_[arrivals_[next_arrival_]].arrival
               : kNever;
  }
  double NextDeparture() {
    while (!departures_.empty() &&
           departures_.top().epoch != epoch_[departures_.top().pod]) {
      departures_.pop();
    }
    return departures_.empty() ? kNever : departures_.top().time;
  }

  void Arrive(int p, double now) {
    if (!CouldEverFit(state_.topology(), pool_, pods_[p].request)) {
      ++run_.unplaceable;
      return;
    }
    Enqueue(p, now);
  }

  // Into the queue at its place by (submitted_at, id): a preempted pod
  // keeps its place, as in the service.
  void Enqueue(int p, double now) {
    const QueuedJob& job = pods_[p].job;
    const auto at = std::upper_bound(queue_.begin(), queue_.end(), job,
                                     [](const auto& a, const auto& b) {
                                       return std::pair(a.submitted_at, a.id) <
                                              std::pair(b.submitted_at, b.id);
                                     });
    queue_.insert(at, job);
    queued_since_[p] = now;
  }

  void Start(int p, double now) {
    const QueuedJob& job = pods_[p].job;
    waited_[p] += now - queued_since_[p];
    running_at_[p] = static_cast<int>(running_.size());
    running_.push_back({job.id, job.user, job.team, job.priority,
                        job.preemptible, now, job.time_limit_s});
    departures_.push({now + pods_[p].duration, p, ++epoch_[p]});
    milli_ += GpuMilliOf(*state_.AllocationOf(job.id));
  }

  // Releases a running pod's resources and forgets its run.
  void Stop(int p, double now) {
    const JobId id = pods_[p].job.id;
    if (const Allocation* a = state_.AllocationOf(id)) {
      const int64_t milli = GpuMilliOf(*a);
      milli_ -= milli;
      if (now < running_[running_at_[p]].started_at + pods_[p].duration) {
        run_.lost_gpu_hours += static_cast<double>(milli) / kFullGpuMilli *
                               (now - running_[running_at_[p]].started_at) /
                               3600;
      }
    }
    state_.Release(id);
    const int i = running_at_[p];
    running_at_[running_.back().id - 1] = i;
    running_[i] = std::move(running_.back());
    running_.pop_back();
    running_at_[p] = -1;
    ++epoch_[p];
  }

  void Depart(int p, double now) {
    Stop(p, now);
    ++run_.started;
    delays_.push_back(waited_[p]);
    run_.pod_delay_s[p] = waited_[p];
  }

  Status Round(double now) {
    if (!queue_.empty()) {
      ++run_.rounds;
      const Allocator allocate = [this](const ClusterState& s,
                                        const QueuedJob& job) {
        return FindAllocation(s, pool_, pods_[job.id - 1].request, scorer_,
                              admission_);
      };
      const Decision d =
          policy_.Schedule(queue_, running_, state_, allocate, now);
      for (const JobId victim : d.preempt) {
        const auto p = static_cast<int>(victim - 1);
        if (running_at_[p] < 0) continue;
        Stop(p, now);
        ++run_.preemptions;
        Enqueue(p, now);
      }
      for (const auto& [id, allocation] : d.start) {
        const auto p = static_cast<int>(id - 1);
        if (running_at_[p] >= 0 || !state_.Reserve(id, allocation).ok()) {
          return Internal("timed replay: the " + std::string(policy_.name()) +
                          " policy started job " + std::to_string(id) +
                          " where it does not fit");
        }
        Start(p, now);
      }
      if (!d.start.empty()) {
        std::erase_if(queue_, [this](const QueuedJob& q) {
          return running_at_[q.id - 1] >= 0;
        });
      }
    }
    utilization_.Set(now, static_cast<double>(milli_));
    queue_length_.Set(now, static_cast<double>(queue_.size()));
    waiting_.Set(now, queue_.empty() ? 0 : 1);
    waiting_milli_.Set(now, queue_.empty() ? 0 : static_cast<double>(milli_));
    if (options_.on_round) options_.on_round(now, state_);
    return {};
  }

  const std::vector<TimedPod>& pods_;
  const GpuScorer& scorer_;
  QueuePolicy& policy_;
  const TimedOptions& options_;
  TimedRun& run_;
  ClusterState state_;
  const std::string pool_;
  const double capacity_milli_;
  std::vector<int> node_order_;
  AdmissionCache cache_;
  AdmissionOptions admission_;

  std::vector<int> arrivals_;  // pods by arrival
  size_t next_arrival_ = 0;
  std::priority_queue<Departure, std::vector<Departure>, std::greater<>>
      departures_;
  std::vector<QueuedJob> queue_;  // by (submitted_at, id)
  std::vector<RunningJob> running_;
  std::vector<int> running_at_;  // pod -> index in running_, or -1
  std::vector<double> queued_since_, waited_;
  std::vector<int> epoch_;  // runs started or ended, per pod
  std::vector<double> delays_;
  int64_t milli_ = 0;  // allocated GPU milli
  StepSeries utilization_, queue_length_;
  StepSeries waiting_, waiting_milli_;  // 1 / milli_ while the queue is not
                                        // empty, else 0
};

}  // namespace

Result<std::vector<TimedPod>> MakeTimedPods(const std::vector<TracePod>& pods) {
  std::vector<TimedPod> out;
  out.reserve(pods.size());
  const bool any_times = std::any_of(pods.begin(), pods.end(), [](auto& p) {
    return p.creation_time >= 0 || p.deletion_time >= 0;
  });
  if (!pods.empty() && !any_times) {
    return BadInput(
        "no pod has a creation_time or deletion_time: timed mode needs "
        "them (the openb multigpu* samples have only the five request "
        "columns; use --mode snapshot for those)");
  }
  for (size_t i = 0; i < pods.size(); ++i) {
    const TracePod& p = pods[i];
    if (p.creation_time < 0 || p.deletion_time < 0) {
      return BadInput(
          PodName(p, i) + " has no " +
          (p.creation_time < 0 ? "creation_time" : "deletion_time") +
          ": timed mode needs both");
    }
    const double start =
        p.scheduled_time >= 0 ? p.scheduled_time : p.creation_time;
    if (start < p.creation_time || p.deletion_time < start) {
      return BadInput(PodName(p, i) + ": times out of order (creation_time " +
                      std::to_string(static_cast<int64_t>(p.creation_time)) +
                      ", scheduled_time " +
                      std::to_string(static_cast<int64_t>(p.scheduled_time)) +
                      ", deletion_time " +
                      std::to_string(static_cast<int64_t>(p.deletion_time)) +
                      ")");
    }
    TimedPod t;
    t.arrival = p.creation_time;
    t.duration = p.deletion_time - start;
    t.request = PodRequest(p);
    QueuedJob& job = t.job;
    job.id = static_cast<JobId>(i + 1);
    job.user = p.qos.empty() ? "none" : p.qos;
    job.priority = QosPriority(p.qos);
    job.preemptible = job.priority == 0;
    job.submitted_at = t.arrival;
    // 0 would mean "unknown" to backfill; a pod that ends at once gets 1 s.
    job.time_limit_s = std::max(t.duration, 1.0);
    job.demand = t.request.demand;
    out.push_back(std::move(t));
  }
  return out;
}

DelayStats SummarizeDelays(std::vector<double> delays) {
  DelayStats s;
  if (delays.empty()) return s;
  std::sort(delays.begin(), delays.end());
  const size_t n = delays.size();
  s.mean = std::accumulate(delays.begin(), delays.end(), 0.0) / n;
  s.p50 = PercentileOfSorted(delays, 0.50);
  s.p95 = PercentileOfSorted(delays, 0.95);
  s.p99 = PercentileOfSorted(delays, 0.99);
  s.max = delays.back();
  return s;
}

Topology SampleCluster(const Topology& topology, double fraction,
                       uint64_t seed) {
  std::map<std::string, std::vector<int>> by_kind;  // "" = CPU-only
  for (size_t n = 0; n < topology.nodes.size(); ++n) {
    const NodeInfo& node = topology.nodes[n];
    by_kind[node.gpus.empty() ? "" : topology.gpus[node.gpus[0]].kind]
        .push_back(static_cast<int>(n));
  }
  std::mt19937_64 rng(seed);
  std::vector<int> keep;
  for (auto& [kind, nodes] : by_kind) {
    const auto count = std::max<size_t>(
        1, static_cast<size_t>(std::lround(fraction * nodes.size())));
    std::shuffle(nodes.begin(), nodes.end(), rng);
    keep.insert(keep.end(), nodes.begin(),
                nodes.begin() + std::min(count, nodes.size()));
  }
  std::sort(keep.begin(), keep.end());
  Topology out;
  out.pools = topology.pools;
  for (const int n : keep) {
    NodeInfo node = topology.nodes[n];
    node.gpus.clear();
    for (const int g : topology.nodes[n].gpus) {
      GpuInfo gpu = topology.gpus[g];
      gpu.node = static_cast<int>(out.nodes.size());
      node.gpus.push_back(static_cast<int>(out.gpus.size()));
      out.gpus.push_back(std::move(gpu));
    }
    out.nodes.push_back(std::move(node));
  }
  return out;
}

Result<TimedRun> RunTimed(const Topology& topology,
                          const std::vector<TracePod>& pods,
                          const TimedOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  if (pods.empty()) return BadInput("the pod list has no pods");
  if (topology.gpus.empty()) return BadInput("the cluster has no GPUs");
  if (!(options.load_factor > 0) || !std::isfinite(options.load_factor)) {
    return BadInput("load factor: must be positive, got " +
                    std::to_string(options.load_factor));
  }
  auto timed = MakeTimedPods(pods);
  if (!timed) return timed.error();
  if (options.load_factor != 1) Compress(*timed, options.load_factor);
  PolicyConfig config;
  config.name = options.queue_policy;
  config.preemption = options.preemption;
  auto policy = MakePolicy(config);
  if (!policy) return policy.error();
  const Workload own =
      options.workload != nullptr ? Workload{} : PodWorkload(pods);
  ScorerOptions scorer_options;
  scorer_options.workload =
      options.workload != nullptr ? options.workload : &own;
  scorer_options.seed = options.seed;
  auto scorer = MakeScorer(options.scorer, scorer_options);
  if (!scorer) return scorer.error();

  TimedRun run;
  run.scorer = options.scorer;
  run.queue_policy = options.queue_policy;
  run.load_factor = options.load_factor;
  Replay replay(topology, *timed, **scorer, **policy, options, run);
  TESSERA_RETURN_IF_ERROR(replay.Run());
  run.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return run;
}

Result<std::vector<TimedRun>> RunTimedAll(
    const Topology& topology, const std::vector<TracePod>& pods,
    const std::vector<TimedOptions>& runs, int threads,
    const std::function<void(double done)>& progress) {
  // Fail fast on bad input, before any thread starts.
  if (pods.empty()) return BadInput("the pod list has no pods");
  if (auto timed = MakeTimedPods(pods); !timed) return timed.error();
  const Workload workload = PodWorkload(pods);
  std::vector<std::optional<Result<TimedRun>>> results(runs.size());
  std::vector<double> fraction(runs.size(), 0.0);
  std::mutex mu;
  auto report = [&](size_t r, double f) {
    std::lock_guard lock(mu);
    fraction[r] = f;
    if (progress) {
      progress(std::accumulate(fraction.begin(), fraction.end(), 0.0) /
               static_cast<double>(runs.size()));
    }
  };
  ParallelFor(static_cast<int>(runs.size()), threads, [&](int r) {
    TimedOptions o = runs[r];
    if (o.workload == nullptr) o.workload = &workload;
    o.progress = [&, r](double f) { report(r, f); };
    results[r] = RunTimed(topology, pods, o);
    report(r, 1.0);
  });
  std::vector<TimedRun> out;
  for (auto& r : results) {
    if (!*r) return r->error();
    out.push_back(std::move(r->value()));
  }
  return out;
}

}  // namespace tessera::scheduler
