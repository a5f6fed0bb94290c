#ifndef TESSERA_SIM_TIMED_EVENTS_H_
#define TESSERA_SIM_TIMED_EVENTS_H_

// What the timed replays share (timed_replay.cc, and timed_elastic.cc for
// elastic pods): the virtual clock (the pods' arrivals in order, their
// departures, and the loop that hands both to the replay and runs a policy
// round after each instant), and the bookkeeping of a queue on a cluster
// (TimedReplayBase). Internal to sim/.

#include <cstdint>
#include <functional>
#include <memory>
#include <queue>
#include <vector>

#include "common/result.h"
#include "scheduler/admission.h"
#include "scheduler/policy.h"
#include "sim/timed_replay.h"

namespace tessera::sim {

// The queue's policy, scorer and admission, as the service runs them
// (scheduler/).
using scheduler::AdmissionCache;
using scheduler::AdmissionOptions;
using scheduler::Decision;
using scheduler::GpuScorer;
using scheduler::JobId;
using scheduler::QueuePolicy;
using scheduler::RunningJob;

class TimedEvents {
 public:
  // Arrivals by time, ties in the order of `pods`.
  explicit TimedEvents(const std::vector<TimedPod>& pods);

  // The first pod's arrival (0 without pods).
  double first_arrival() const { return first_arrival_; }

  // Pod p leaves at `t`; a departure scheduled for it before goes stale.
  void ScheduleDeparture(int p, double t);
  // Pod p's scheduled departure, if any, goes stale (it stopped early).
  void CancelDeparture(int p);

  struct Hooks {
    // Called with each instant before its events (may be empty).
    std::function<void(double t)> advance;
    std::function<void(int p, double now)> depart;  // departures first
    std::function<void(int p, double now)> arrive;  // then arrivals
    std::function<Status(double now)> round;        // then one round
    // The fraction of arrivals handed over, now and then (may be empty).
    std::function<void(double fraction)> progress;
  };
  struct End {
    double now = 0;             // the last instant
    double last_departure = 0;  // first_arrival() if nobody left
  };
  // Runs until no arrival or live departure is left; the first error of a
  // round stops it.
  Result<End> Run(const Hooks& hooks);

 private:
  struct Departure {
    double time;
    int pod;
    int epoch;  // the pod's run (or rate) it ends; stale once changed
    bool operator>(const Departure& o) const {
      return time != o.time ? time > o.time : pod > o.pod;
    }
  };
  double NextArrival() const;
  double NextDeparture();

  const std::vector<TimedPod>& pods_;
  std::vector<int> arrivals_;  // pods by arrival
  size_t next_arrival_ = 0;
  double first_arrival_ = 0;
  std::priority_queue<Departure, std::vector<Departure>, std::greater<>>
      departures_;
  std::vector<int> epoch_;  // per pod: departures scheduled or cancelled
};

// The queue policy and node scorer a timed replay runs with, as `options`
// name them; the scorer's workload is `options.workload`, or else the
// pods' own, kept here (the fragmentation scorers hold a reference to it,
// so it is declared before them and outlives them).
struct TimedDeciders {
  std::unique_ptr<Workload> own_workload;  // null when options carry one
  std::unique_ptr<QueuePolicy> policy;
  std::unique_ptr<GpuScorer> scorer;
};
Result<TimedDeciders> MakeTimedDeciders(const TimedOptions& options,
                                        const std::vector<TracePod>& pods);

// The state both timed replays keep: the pods (pod p is job p + 1), the
// cluster, the node order and admission options, the queue in (submitted_at,
// id) order, the running pods, each pod's wait, and the clock.
class TimedReplayBase {
 protected:
  // `pods` must outlive the replay. The nodes' tie order: one fixed random
  // order per `seed`, or by index when `seeded_node_order` is false
  // (TimedOptions::seeded_node_order).
  TimedReplayBase(const Topology& topology, const std::vector<TimedPod>& pods,
                  uint64_t seed, bool seeded_node_order = true);

  // A round's decision under the service's rule: a decision that preempts
  // starts nothing; `preempt(p)` stops each victim p that runs (and queues
  // it at its place), and `plan()` decides again with them queued, until a
  // decision preempts nobody. Each pass stops a running pod, so it ends; a
  // decision whose victims all stopped already starts nothing either.
  template <typename Plan, typename Preempt>
  Decision PlanPastPreemptions(const Plan& plan, const Preempt& preempt) {
    while (true) {
      Decision d = plan();
      if (d.preempt.empty()) return d;
      bool stopped = false;
      for (const JobId victim : d.preempt) {
        const auto p = static_cast<int>(victim - 1);
        if (running_at_[p] < 0) continue;
        preempt(p);
        stopped = true;
      }
      if (!stopped) return {};
    }
  }

  // Queues pod p; false (and not queued) when it could fit no node of the
  // pool even on an empty cluster.
  bool Queue(int p, double now);
  // Puts pod p into the queue at its place (a preempted pod keeps it).
  void Enqueue(int p, double now);
  // Pod p starts now: its time queued since it was queued is counted.
  void AddRunning(int p, double now);
  // Pod p no longer runs; its scheduled departure goes stale.
  void RemoveRunning(int p);

  const std::vector<TimedPod>& pods_;
  ClusterState state_;
  const std::string pool_;  // the first pool: a trace is one pool
  const double capacity_milli_;
  std::vector<int> node_order_;  // admission_.node_order's storage
  AdmissionCache cache_;
  AdmissionOptions admission_;
  std::vector<QueuedJob> queue_;  // by (submitted_at, id)
  std::vector<RunningJob> running_;
  std::vector<int> running_at_;  // pod -> index in running_, or -1
  std::vector<double> queued_since_, waited_;
  TimedEvents events_;  // arrivals and departures
};

}  // namespace tessera::sim

#endif  // TESSERA_SIM_TIMED_EVENTS_H_
