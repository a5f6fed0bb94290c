#ifndef TESSERA_SIM_TIMED_EVENTS_H_
#define TESSERA_SIM_TIMED_EVENTS_H_

// The virtual clock shared by the timed replays (timed_replay.cc, and
// timed_elastic.cc for elastic pods): the pods' arrivals in order, their
// departures, and the loop that hands both to the replay and runs a policy
// round after each instant; plus the queue order and the node order both
// replays use. Internal to sim/.

#include <cstdint>
#include <functional>
#include <queue>
#include <vector>

#include "common/result.h"
#include "scheduler/policy.h"
#include "sim/timed_replay.h"

namespace tessera::scheduler {

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

// Puts `job` into `queue` at its place by (submitted_at, id): a preempted
// pod keeps its place, as in the service.
void EnqueueBySubmission(std::vector<QueuedJob>& queue, const QueuedJob& job);

// The nodes' indices in one fixed random order per seed: how ties between
// nodes go, as in the snapshot replay.
std::vector<int> SeededNodeOrder(size_t nodes, uint64_t seed);

}  // namespace tessera::scheduler

#endif  // TESSERA_SIM_TIMED_EVENTS_H_
