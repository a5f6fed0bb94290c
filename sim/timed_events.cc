// What the timed replays share: the virtual clock and the queue's
// bookkeeping (timed_events.h).

#include "sim/timed_events.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <random>
#include <utility>

#include "sim/replay.h"

namespace tessera::sim {

// What this file uses of scheduler/, beyond what its headers name.
using scheduler::CouldEverFit;
using scheduler::MakePolicy;
using scheduler::MakeScorer;
using scheduler::PolicyConfig;
using scheduler::ScorerOptions;

namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();
constexpr double kProgressStep = 0.01;

// The nodes' indices in one fixed random order per seed, as in the
// snapshot replay.
std::vector<int> SeededNodeOrder(size_t nodes, uint64_t seed, bool shuffle) {
  std::vector<int> order(nodes);
  std::iota(order.begin(), order.end(), 0);
  if (!shuffle) return order;
  std::mt19937_64 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  return order;
}

}  // namespace

TimedEvents::TimedEvents(const std::vector<TimedPod>& pods)
    : pods_(pods), arrivals_(pods.size()), epoch_(pods.size(), 0) {
  std::iota(arrivals_.begin(), arrivals_.end(), 0);
  std::stable_sort(arrivals_.begin(), arrivals_.end(), [&](int a, int b) {
    return pods[a].arrival < pods[b].arrival;
  });
  first_arrival_ = pods.empty() ? 0 : pods[arrivals_[0]].arrival;
}

void TimedEvents::ScheduleDeparture(int p, double t) {
  departures_.push({t, p, ++epoch_[p]});
}

void TimedEvents::CancelDeparture(int p) { ++epoch_[p]; }

double TimedEvents::NextArrival() const {
  return next_arrival_ < arrivals_.size()
             ? pods_[arrivals_[next_arrival_]].arrival
             : kNever;
}

double TimedEvents::NextDeparture() {
  while (!departures_.empty() &&
         departures_.top().epoch != epoch_[departures_.top().pod]) {
    departures_.pop();
  }
  return departures_.empty() ? kNever : departures_.top().time;
}

Result<TimedDeciders> MakeTimedDeciders(const TimedOptions& options,
                                        const std::vector<TracePod>& pods) {
  TimedDeciders out;
  PolicyConfig config;
  config.name = options.queue_policy;
  config.preemption = options.preemption;
  auto policy = MakePolicy(config);
  if (!policy) return policy.error();
  out.policy = std::move(policy).value();
  ScorerOptions scorer_options;
  scorer_options.workload = options.workload;
  if (scorer_options.workload == nullptr) {
    out.own_workload = std::make_unique<Workload>(PodWorkload(pods));
    scorer_options.workload = out.own_workload.get();
  }
  scorer_options.seed = options.seed;
  auto scorer = MakeScorer(options.scorer, scorer_options);
  if (!scorer) return scorer.error();
  out.scorer = std::move(scorer).value();
  return out;
}

Result<TimedEvents::End> TimedEvents::Run(const Hooks& hooks) {
  End end{first_arrival_, first_arrival_};
  double next_report = 0;
  while (true) {
    const double t = std::min(NextArrival(), NextDeparture());
    if (t == kNever) break;
    if (hooks.advance) hooks.advance(t);
    end.now = t;
    while (NextDeparture() <= t) {
      const int p = departures_.top().pod;
      departures_.pop();
      hooks.depart(p, t);
      end.last_departure = t;
    }
    while (NextArrival() <= t) hooks.arrive(arrivals_[next_arrival_++], t);
    TESSERA_RETURN_IF_ERROR(hooks.round(t));
    const double done = static_cast<double>(next_arrival_) /
                        static_cast<double>(std::max<size_t>(1, pods_.size()));
    if (hooks.progress && done >= next_report) {
      hooks.progress(done);
      next_report = done + kProgressStep;
    }
  }
  return end;
}

TimedReplayBase::TimedReplayBase(const Topology& topology,
                                 const std::vector<TimedPod>& pods,
                                 uint64_t seed, bool seeded_node_order)
    : pods_(pods),
      state_(topology),
      pool_(topology.pools.empty() ? "" : topology.pools[0]),
      capacity_milli_(static_cast<double>(GpuCapacityMilli(topology))),
      node_order_(
          SeededNodeOrder(topology.nodes.size(), seed, seeded_node_order)),
      running_at_(pods.size(), -1),
      queued_since_(pods.size(), 0),
      waited_(pods.size(), 0),
      events_(pods) {
  admission_.node_order = node_order_;
  admission_.cache = &cache_;
}

bool TimedReplayBase::Queue(int p, double now) {
  if (!CouldEverFit(state_.topology(), pool_, pods_[p].request)) return false;
  Enqueue(p, now);
  return true;
}

void TimedReplayBase::Enqueue(int p, double now) {
  const QueuedJob& job = pods_[p].job;
  const auto at = std::upper_bound(queue_.begin(), queue_.end(), job,
                                   [](const QueuedJob& a, const QueuedJob& b) {
                                     return std::pair(a.submitted_at, a.id) <
                                            std::pair(b.submitted_at, b.id);
                                   });
  queue_.insert(at, job);
  queued_since_[p] = now;
}

void TimedReplayBase::AddRunning(int p, double now) {
  const QueuedJob& job = pods_[p].job;
  waited_[p] += now - queued_since_[p];
  running_at_[p] = static_cast<int>(running_.size());
  running_.push_back({job.id, job.user, job.team, job.priority, job.preemptible,
                      now, job.time_limit_s});
}

void TimedReplayBase::RemoveRunning(int p) {
  const int i = running_at_[p];
  running_at_[running_.back().id - 1] = i;
  running_[i] = std::move(running_.back());
  running_.pop_back();
  running_at_[p] = -1;
  events_.CancelDeparture(p);
}

}  // namespace tessera::sim
