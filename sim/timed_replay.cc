// RunTimed: the event loop on a virtual clock (arrivals, departures, a
// policy round after each batch of events at one instant), the figures,
// and the runs in parallel. The pods it replays are made in
// timed_inputs.cc, a round under the queue tree is timed_tree.cc's.
#include "sim/timed_replay.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <mutex>
#include <numeric>
#include <optional>
#include <utility>

#include "common/stats.h"
#include "estimator/interference.h"
#include "scheduler/admission.h"
#include "scheduler/parallel.h"
#include "scheduler/round.h"
#include "sim/replay.h"
#include "sim/timed_events.h"
#include "sim/timed_tree_internal.h"

namespace tessera::sim {

// What this file uses of scheduler/, beyond what its headers name.
using scheduler::BuildStartRequest;
using scheduler::DecideStart;
using scheduler::FindAllocation;
using scheduler::GpuShare;
using scheduler::InterferenceRate;
using scheduler::kFullGpuMilli;
using scheduler::NodeInfo;
using scheduler::Occupant;
using scheduler::OptionForecast;
using scheduler::ParallelFor;
using scheduler::PlanPoolRound;
using scheduler::SquaredCv;
using scheduler::StartDecision;
using scheduler::StartInputs;
using scheduler::StartOption;
using scheduler::StartRequest;

namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

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
class Replay : private TimedReplayBase {
 public:
  Replay(const Topology& topology, const std::vector<TimedPod>& pods,
         std::vector<char> model, const GpuScorer& scorer, QueuePolicy& policy,
         const TimedOptions& options, TimedRun& run)
      : TimedReplayBase(topology, pods, options.seed,
                        options.seeded_node_order),
        model_(std::move(model)),
        scorer_(scorer),
        policy_(policy),
        options_(options),
        run_(run) {
    for (const char m : model_) any_model_ = any_model_ || m != 0;
    if (any_model_) {
      remaining_.assign(pods.size(), 0);
      rate_.assign(pods.size(), 1);
      since_.assign(pods.size(), 0);
      ends_at_.assign(pods.size(), 0);
      started_at_.assign(pods.size(), 0);
      held_back_once_.assign(pods.size(), 0);
      whole_once_.assign(pods.size(), 0);
      for (const NodeInfo& n : topology.nodes) {
        if (n.pool == pool_) pool_gpus_ += static_cast<int>(n.gpus.size());
      }
    }
  }

  // Replays under the queue tree `tree`.
  void SetTree(QueueTree tree) {
    tree_.emplace(std::move(tree), pods_, state_.topology(), pool_);
  }

  Status Run() {
    run_.pods = static_cast<int64_t>(pods_.size());
    run_.pod_delay_s.assign(pods_.size(), -1);
    run_.pod_jct_s.assign(pods_.size(), -1);
    run_.first_arrival = events_.first_arrival();
    Result<TimedEvents::End> ran =
        events_.Run({{},
                     [this](int p, double now) { Depart(p, now); },
                     [this](int p, double now) { Arrive(p, now); },
                     [this](double now) { return Round(now); },
                     options_.progress});
    TESSERA_RETURN_IF_ERROR(ran);
    const double now = ran->now;
    const double last_departure = ran->last_departure;
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
    if (any_model_) SummarizeModelPods();
    return {};
  }

 private:
  void Arrive(int p, double now) {
    if (!Queue(p, now)) ++run_.unplaceable;
  }

  void Start(int p, double now) {
    const QueuedJob& job = pods_[p].job;
    AddRunning(p, now);
    const Allocation& a = *state_.AllocationOf(job.id);
    if (tree_) tree_->Started(p, a, now);
    milli_ += GpuMilliOf(a);
    if (!model_.empty() && model_[p]) {
      // Its whole work again (a preempted pod restarts from scratch), at
      // the rate of its GPU's holders now.
      remaining_[p] = pods_[p].duration;
      since_[p] = now;
      started_at_[p] = now;
      rate_[p] = ModelRate(p);
      ends_at_[p] = now + remaining_[p] / rate_[p];
      events_.ScheduleDeparture(p, ends_at_[p]);
      if (options_.admission == TimedAdmission::kTessera && a.exclusive &&
          pods_[p].request.demand.gpus == 0 && !whole_once_[p]) {
        whole_once_[p] = 1;
        ++run_.model.whole;
      }
      return;
    }
    events_.ScheduleDeparture(p, now + pods_[p].duration);
  }

  // A model pod's progress rate with the holders of its GPUs now.
  double ModelRate(int p) const {
    int k = 1;
    for (const GpuShare& s : state_.AllocationOf(pods_[p].job.id)->gpus) {
      k = std::max(k, state_.holders_on(s.gpu));
    }
    return InterferenceRate(options_.law, estimator::kTrainingBusyFraction, k);
  }

  // The running model pods on `gpus` (whose holders just changed): their
  // progress so far at the old rate, and their end at the new one.
  void UpdateRates(const std::vector<int>& gpus, double now) {
    if (!any_model_) return;
    for (const int g : gpus) {
      for (const JobId id : state_.JobsOn(g)) {
        const auto p = static_cast<int>(id - 1);
        if (!model_[p] || running_at_[p] < 0) continue;
        const double rate = ModelRate(p);
        if (rate == rate_[p]) continue;
        remaining_[p] =
            std::max(0.0, remaining_[p] - rate_[p] * (now - since_[p]));
        since_[p] = now;
        rate_[p] = rate;
        ends_at_[p] = now + remaining_[p] / rate;
        events_.ScheduleDeparture(p, ends_at_[p]);
      }
    }
  }

  static std::vector<int> GpusOf(const Allocation* a) {
    std::vector<int> gpus;
    if (a != nullptr) {
      for (const GpuShare& s : a->gpus) gpus.push_back(s.gpu);
    }
    return gpus;
  }

  // Releases a running pod's resources and forgets its run; a preempted
  // one's GPU time counts as lost.
  void Stop(int p, double now, bool preempted) {
    const JobId id = pods_[p].job.id;
    const std::vector<int> gpus =
        any_model_ ? GpusOf(state_.AllocationOf(id)) : std::vector<int>{};
    if (const Allocation* a = state_.AllocationOf(id)) {
      const int64_t milli = GpuMilliOf(*a);
      milli_ -= milli;
      if (preempted) {
        run_.lost_gpu_hours += static_cast<double>(milli) / kFullGpuMilli *
                               (now - running_[running_at_[p]].started_at) /
                               3600;
      }
    }
    if (tree_) tree_->Stopped(p);
    state_.Release(id);
    RemoveRunning(p);
    UpdateRates(gpus, now);
  }

  void Depart(int p, double now) {
    Stop(p, now, false);
    ++run_.started;
    delays_.push_back(waited_[p]);
    run_.pod_delay_s[p] = waited_[p];
    run_.pod_jct_s[p] = now - pods_[p].arrival;
  }

  Status Round(double now) {
    if (!queue_.empty()) {
      ++run_.rounds;
      now_ = now;
      const Allocator allocate = [this](const ClusterState& s,
                                        const QueuedJob& job) {
        std::optional<Allocation> a = FindAllocation(
            s, pool_, pods_[job.id - 1].request, scorer_, admission_);
        if (a && options_.admission == TimedAdmission::kTessera &&
            model_[job.id - 1]) {
          return Decide(s, job, *a);
        }
        return a;
      };
      // A round that preempts starts nothing: the victims go back to the
      // queue and the policy plans again at the same instant, as the
      // service starts nothing in a pool until its victims have exited.
      const Decision d = PlanPastPreemptions(
          [&] {
            if (!tree_) {
              return PlanPoolRound(
                  state_, now, {pool_, &policy_, &queue_, &running_}, allocate);
            }
            return tree_->Schedule({policy_, queue_, running_, state_, allocate,
                                    now, [&](int p) { Reclaim(p, now); }});
          },
          [&](int p) {
            Stop(p, now, true);
            ++run_.preemptions;
            Enqueue(p, now);
          });
      for (const auto& [id, allocation] : d.start) {
        const auto p = static_cast<int>(id - 1);
        if (running_at_[p] >= 0 || !state_.Reserve(id, allocation).ok()) {
          return Internal("timed replay: the " + std::string(policy_.name()) +
                          " policy started job " + std::to_string(id) +
                          " where it does not fit");
        }
        Start(p, now);
      }
      if (any_model_) {
        // The pods that joined a GPU slow the model pods already there.
        std::vector<int> gpus;
        for (const auto& [id, allocation] : d.start) {
          for (const GpuShare& s : allocation.gpus) gpus.push_back(s.gpu);
        }
        std::sort(gpus.begin(), gpus.end());
        gpus.erase(std::unique(gpus.begin(), gpus.end()), gpus.end());
        UpdateRates(gpus, now);
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

  // Stops pod p, reclaimed by the queue tree, if it still runs, and
  // queues it again.
  void Reclaim(int p, double now) {
    if (running_at_[p] < 0) return;
    Stop(p, now, true);
    ++run_.preemptions;
    ++run_.reclaims;
    Enqueue(p, now);
  }

  // The tessera admission of model pod `job`, whose request fits `s` at
  // `fraction`: that, a whole GPU of its own now (FindAllocation for one
  // whole GPU, exclusive), or wait for one to free (CapacityFreesAt with
  // the running pods' predicted ends), by DecideStart. Re-taken in every
  // state a policy asks about while the pod is queued. No split: trace
  // pods have no graph.
  std::optional<Allocation> Decide(const ClusterState& s, const QueuedJob& job,
                                   const Allocation& fraction) {
    const auto p = static_cast<int>(job.id - 1);
    const PlacementRequest& request = pods_[p].request;
    // Whole GPUs (exclusive) never share; a fraction on a GPU nobody holds
    // is as good as a GPU of its own (DecideStart's ties go to it).
    if (fraction.exclusive || request.demand.gpu_milli == 0) return fraction;
    const bool shares =
        std::any_of(fraction.gpus.begin(), fraction.gpus.end(),
                    [&](const GpuShare& g) { return s.holders_on(g.gpu) > 0; });
    if (!shares) return fraction;
    StartInputs in;
    in.now = now_;
    in.work_s = pods_[p].duration;
    in.busy_fraction = estimator::kTrainingBusyFraction;
    in.law = options_.law;
    PlacementRequest whole = request;
    whole.demand.gpus = 1;
    whole.demand.gpu_milli = 0;
    whole.demand.gpu_memory_mib = 0;
    const std::optional<Allocation> own =
        FindAllocation(s, pool_, whole, scorer_, admission_);
    if (own) in.candidates.push_back({StartOption::kWhole, *own, 1.0});
    in.candidates.push_back({StartOption::kFraction, fraction, 1.0});
    // No GPU is free for it now: when one of its kinds empties. An empty
    // GPU now that FindAllocation would not give it (its node's CPU or
    // memory is taken) is no opening: waiting for it could last forever.
    in.pool = pool_;
    in.ends_at = [this](JobId id) {
      return now_ + RemainingSeconds(static_cast<int>(id - 1));
    };
    in.held_back = QueuedBehind(job);
    in.pool_gpus = pool_gpus_;
    in.work_cv2 = WorkCv2();
    // The openings are looked for among its kinds' GPUs only (a copy of
    // the state, made only when it waits for one).
    std::optional<ClusterState> of_kinds;
    if (!own && !request.gpu_kinds.empty()) {
      of_kinds = OfKinds(s, request.gpu_kinds);
    }
    const StartRequest r =
        BuildStartRequest(of_kinds ? *of_kinds : s, std::move(in));
    const StartDecision d = DecideStart(r, s, [this](JobId id) {
      return OccupantOf(static_cast<int>(id - 1));
    });
    const OptionForecast* c = d.Chosen();
    if (c == nullptr) return std::nullopt;
    if (d.waits()) {
      // Counted where `s` is the cluster of this round (not a policy's
      // what-if with running pods released).
      if (!held_back_once_[p] && HoldsEveryRunningPod(s)) {
        held_back_once_[p] = 1;
        ++run_.model.waited;
      }
      return std::nullopt;
    }
    return c->allocation;
  }

  // `s` with the nodes whose GPUs are none of `kinds` drained.
  static ClusterState OfKinds(const ClusterState& s,
                              const std::vector<std::string>& kinds) {
    ClusterState out = s;
    const Topology& t = s.topology();
    for (size_t n = 0; n < t.nodes.size(); ++n) {
      const NodeInfo& node = t.nodes[n];
      const bool any =
          std::any_of(node.gpus.begin(), node.gpus.end(), [&](int g) {
            return std::find(kinds.begin(), kinds.end(), t.gpus[g].kind) !=
                   kinds.end();
          });
      if (!any && !node.drained) out.SetDrained(static_cast<int>(n), true);
    }
    return out;
  }

  bool HoldsEveryRunningPod(const ClusterState& s) const {
    return std::all_of(
        running_.begin(), running_.end(),
        [&](const RunningJob& r) { return s.AllocationOf(r.id) != nullptr; });
  }

  // Seconds until pod `p` (holding a share) ends: a model pod at its rate
  // now, another at start + duration (the oracle the replay also gives
  // backfill); one started in this round's plan, its whole duration.
  double RemainingSeconds(int p) const {
    if (running_at_[p] < 0) return pods_[p].duration;
    if (model_[p]) return std::max(0.0, ends_at_[p] - now_);
    return std::max(
        0.0, running_[running_at_[p]].started_at + pods_[p].duration - now_);
  }
  // A model pod is slowed by its GPU's holders; another pod runs at rate
  // 1 whatever shares its GPU, which the measured law says of a job that
  // keeps the GPU busy 0% of the time.
  Occupant OccupantOf(int p) const {
    return {model_[p] ? estimator::kTrainingBusyFraction : 0.0,
            RemainingSeconds(p)};
  }

  // The pods queued after `job` (fifo: all of them wait while it waits).
  int QueuedBehind(const QueuedJob& job) const {
    const auto it = std::upper_bound(queue_.begin(), queue_.end(), job,
                                     [](const auto& a, const auto& b) {
                                       return std::pair(a.submitted_at, a.id) <
                                              std::pair(b.submitted_at, b.id);
                                     });
    return static_cast<int>(queue_.end() - it);
  }

  // StartRequest::work_cv2 over the queued and running pods' durations,
  // once per round.
  double WorkCv2() {
    if (cv2_round_ != run_.rounds) {
      std::vector<double> work;
      work.reserve(queue_.size() + running_.size());
      for (const QueuedJob& q : queue_)
        work.push_back(pods_[q.id - 1].duration);
      for (const RunningJob& r : running_) {
        work.push_back(pods_[r.id - 1].duration);
      }
      cv2_ = SquaredCv(work);
      cv2_round_ = run_.rounds;
    }
    return cv2_;
  }

  void SummarizeModelPods() {
    ModelPodStats& m = run_.model;
    run_.pod_model = model_;
    double jct = 0, delay = 0, slowdown = 0;
    for (size_t p = 0; p < pods_.size(); ++p) {
      if (!model_[p]) continue;
      ++m.pods;
      m.fractional += pods_[p].request.demand.gpu_milli > 0 ? 1 : 0;
      if (run_.pod_jct_s[p] < 0) continue;
      ++m.finished;
      jct += run_.pod_jct_s[p];
      delay += run_.pod_delay_s[p];
      const double end = pods_[p].arrival + run_.pod_jct_s[p];
      slowdown += pods_[p].duration > 0
                      ? (end - started_at_[p]) / pods_[p].duration
                      : 1.0;
    }
    if (m.finished > 0) {
      const auto n = static_cast<double>(m.finished);
      m.mean_jct_s = jct / n;
      m.mean_delay_s = delay / n;
      m.mean_slowdown = slowdown / n;
    }
  }

  const std::vector<char> model_;  // per pod: declares a model
  bool any_model_ = false;
  const GpuScorer& scorer_;
  QueuePolicy& policy_;
  const TimedOptions& options_;
  TimedRun& run_;
  std::optional<TimedTree> tree_;  // the queue tree, if any
  std::vector<double> delays_;
  int64_t milli_ = 0;  // allocated GPU milli
  StepSeries utilization_, queue_length_;
  StepSeries waiting_, waiting_milli_;  // 1 / milli_ while the queue is not
                                        // empty, else 0
  // Model pods (sized only when there are any): the work left at `since_`
  // in seconds at rate 1, the rate since then, the predicted end, the last
  // start; whether the decision held one back while its request fitted.
  std::vector<double> remaining_, rate_, since_, ends_at_, started_at_;
  std::vector<char> held_back_once_, whole_once_;
  int pool_gpus_ = 0;
  double now_ = 0;  // the round's time
  int64_t cv2_round_ = -1;
  double cv2_ = 0;
};

}  // namespace

std::string_view TimedAdmissionName(TimedAdmission a) {
  return a == TimedAdmission::kTessera ? "tessera" : "fixed";
}

AdmissionComparison CompareAdmissions(const TimedRun& fixed,
                                      const TimedRun& tessera) {
  AdmissionComparison c;
  c.fixed_makespan_s = fixed.makespan_s;
  c.tessera_makespan_s = tessera.makespan_s;
  const size_t n = std::min({fixed.pod_jct_s.size(), tessera.pod_jct_s.size(),
                             fixed.pod_model.size()});
  for (size_t p = 0; p < n; ++p) {
    const double a = fixed.pod_jct_s[p], b = tessera.pod_jct_s[p];
    if (a < 0 || b < 0) continue;
    if (fixed.pod_model[p]) {
      ++c.model_pods;
      c.fixed_jct_s += a;
      c.tessera_jct_s += b;
      c.earlier += b < a - 1e-3 ? 1 : 0;
      c.later += b > a + 1e-3 ? 1 : 0;
    } else {
      ++c.other_pods;
      c.fixed_other_delay_s += fixed.pod_delay_s[p];
      c.tessera_other_delay_s += tessera.pod_delay_s[p];
    }
  }
  if (c.model_pods > 0) {
    c.fixed_jct_s /= static_cast<double>(c.model_pods);
    c.tessera_jct_s /= static_cast<double>(c.model_pods);
  }
  if (c.other_pods > 0) {
    c.fixed_other_delay_s /= static_cast<double>(c.other_pods);
    c.tessera_other_delay_s /= static_cast<double>(c.other_pods);
  }
  return c;
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
  if (options.model_pods_pct < 0 || options.model_pods_pct > 100) {
    return BadInput("model_pods_pct: a percentage in 0..100, got " +
                    std::to_string(options.model_pods_pct));
  }
  if (options.law.alpha && !(*options.law.alpha >= 0)) {
    return BadInput("law.alpha: must be >= 0");
  }
  auto timed = MakeTimedPods(pods);
  if (!timed) return timed.error();
  if (options.load_factor != 1) Compress(*timed, options.load_factor);
  if (options.teams > 0) {
    for (size_t i = 0; i < pods.size(); ++i) {
      (*timed)[i].job.team =
          "team" +
          std::to_string(TeamOf(pods[i], options.teams, options.team_split));
    }
  }
  std::optional<QueueTree> tree;
  if (!options.queues.empty()) {
    auto t = QueueTree::Make(options.queues);
    if (!t) return t.error();
    tree = std::move(t).value();
  }
  auto deciders = MakeTimedDeciders(options, pods);
  if (!deciders) return deciders.error();

  std::vector<char> model(pods.size(), 0);
  for (size_t i = 0; i < pods.size(); ++i) {
    model[i] = pods[i].wants_gpu() &&
               DeclaresModel(pods[i].name, options.model_pods_pct);
  }

  TimedRun run;
  run.scorer = options.scorer;
  run.queue_policy = options.queue_policy;
  run.load_factor = options.load_factor;
  run.quotas = tree.has_value();
  if (run.quotas) run.quota_guarantees = options.quota_guarantees;
  if (options.model_pods_pct > 0) {
    run.admission = TimedAdmissionName(options.admission);
  }
  Replay replay(topology, *timed, std::move(model), *deciders->scorer,
                *deciders->policy, options, run);
  if (tree) replay.SetTree(std::move(*tree));
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

}  // namespace tessera::sim
