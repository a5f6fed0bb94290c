#ifndef TESSERA_SCHEDULER_START_DECISION_H_
#define TESSERA_SCHEDULER_START_DECISION_H_

// Split now, run on a fraction now, or wait for whole capacity: the
// decision a model job's admission takes by predicted finish. A pure
// function of the options the caller found placeable now, the cluster
// state (who shares each GPU) and the running jobs' predicted ends, so
// that the service, `tessera simulate --mode models` and the timed replay
// take the same decision. docs/scheduler.md ("Split or wait") has the model.

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "estimator/interference.h"
#include "scheduler/topology.h"

namespace tessera::scheduler {

// How co-located jobs slow each other. By default the law measured on an
// H100 (estimator::CoLocationSlowdown) under `sharing`, by each job's
// busy fraction; with `alpha` set, Big Brain's linear law for every job
// instead: step time x (1 + alpha (k - 1)) with k jobs on the GPU.
struct InterferenceLaw {
  estimator::GpuSharing sharing = estimator::GpuSharing::kTimeslice;
  std::optional<double> alpha;  // set: time x (1 + alpha (k - 1))

  static InterferenceLaw Linear(double alpha) { return {{}, alpha}; }
  static InterferenceLaw Measured(estimator::GpuSharing sharing) {
    return {sharing, std::nullopt};
  }
  auto operator<=>(const InterferenceLaw&) const = default;
};
// "measured (timeslice)", "measured (mps)" or "alpha 0.25".
std::string InterferenceName(const InterferenceLaw& law);

// Big Brain's measurement: a job's process time grows about linearly with
// the number of jobs sharing its GPU, time x (1 + alpha (k - 1)); its
// progress rate is the inverse. REQUIRES: k >= 1, alpha >= 0.
double InterferenceRate(double alpha, int k);
// A job's progress rate with `k` jobs on its GPU under `law`: the inverse
// of its slowdown. `busy_fraction` is the job's; the linear law ignores
// it. REQUIRES: k >= 1.
double InterferenceRate(const InterferenceLaw& law, double busy_fraction,
                        int k);

// The options a model job has.
enum class StartOption {
  kWhole,         // now, on whole GPUs of its own (a GPU's full compute)
  kFraction,      // now, on one GPU's free fraction, beside the jobs there
  kSplit,         // now, split by the placer over several GPUs' slivers
  kWait,          // later, on whole capacity when the running jobs free it
  kWaitFraction,  // later, on one GPU's fraction when enough of it frees
};
// "whole", "fraction", "split", "wait", "wait-fraction".
std::string_view StartOptionName(StartOption o);

// A placement the caller found for the job now.
struct StartCandidate {
  StartOption option = StartOption::kFraction;
  Allocation allocation;
  // Its speed on these GPUs alone, relative to one whole GPU: 1 for whole
  // and a time-sliced fraction; a fraction under MPS, what its share of
  // the threads buys (FractionSpeed); a split's whole-GPU step over its
  // step (transfers, idle stages), at most 1. Co-location is charged
  // separately.
  double speed = 1;
};

// A job already on a GPU, as the decision sees it.
struct Occupant {
  double busy_fraction = estimator::kTrainingBusyFraction;
  // Predicted seconds until it ends at its current rate; infinity when
  // unknown (no time limit, no progress report).
  double remaining_s = std::numeric_limits<double>::infinity();
};

struct StartRequest {
  double now = 0;
  // Its work: seconds alone on one whole GPU of the pool's kind.
  double work_s = 0;
  double busy_fraction = estimator::kTrainingBusyFraction;
  InterferenceLaw law;                     // the pool's GPU kind's
  std::vector<StartCandidate> candidates;  // what fits now
  // Capacity that frees later (CapacityFreesAt): whole GPUs for it
  // (kWait) and, where it fits no GPU now, one GPU's fraction
  // (kWaitFraction); `at` infinity when never known.
  struct Opening {
    double at = std::numeric_limits<double>::infinity();
    int sharing_with = 0;  // jobs still on that GPU then
  };
  Opening whole, fraction;
  double wait_speed = 1;  // its speed on the whole capacity
  // Jobs queued behind it, per GPU of the pool: the backlog that a change
  // in the cluster's throughput delays or advances. With charge_others, a
  // now-option that leaves a GPU doing more work per second than the job
  // waiting for whole capacity would (the co-runners' lost work is less
  // than its own work done) is credited, and one that leaves it doing less
  // is charged, the difference in GPU-seconds once per job per GPU of the
  // backlog (each of them starts that much sooner or later).
  double backlog_per_gpu = 0;
  // Jobs queued behind it that its wait holds back (FIFO: all). When one
  // of its now-options would add to the cluster's throughput, they could
  // start beside it too, and the wait is charged its length once for each.
  int held_back = 0;
  // The squared coefficient of variation of the work of the pool's jobs
  // (queued and running): where sharing neither adds nor takes
  // throughput, it pays for mean JCT only above 1 (as processor sharing
  // against first-come-first-served).
  double work_cv2 = 0;
  // A job needing several whole GPUs is queued in the pool. The backlog
  // terms (backlog_per_gpu, held_back, work_cv2) treat the queue as work
  // any GPU can take a piece of; a gang needs GPUs to drain, which sharing
  // postpones. With one queued, they are left out: the job's own finish
  // and its co-runners' delays decide.
  bool gang_queued = false;
  // Charge an option the delay it adds to the jobs already on its GPUs
  // (their slowdown for as long as both run). Off: the job's own finish
  // alone decides.
  bool charge_others = true;
};

// One option's forecast.
struct OptionForecast {
  StartOption option = StartOption::kWait;
  std::optional<Allocation> allocation;  // the now-options'
  double start_s = 0, finish_s = 0;      // absolute, as StartRequest::now
  double speed = 1;                      // StartCandidate::speed
  double slowdown = 1;   // co-location, on its most shared GPU (>= 1)
  int sharing_with = 0;  // jobs already on that GPU
  // The delay it adds to others, summed: a now-option's slowdown of the
  // jobs on its GPUs, plus or minus its change to the backlog's wait
  // (StartRequest::backlog_per_gpu).
  double cost_to_others_s = 0;
  // A now-option's work done less the co-runners' work lost meanwhile,
  // in seconds of work (with charge_others; 0 for the wait).
  double gained_work_s = 0;
  double score() const { return finish_s + cost_to_others_s; }
};

struct StartDecision {
  double work_s = 0;
  std::vector<OptionForecast> options;  // now-options first, then the wait
  int chosen = -1;                      // -1: no option (nothing fits, ever)
  const OptionForecast* Chosen() const {
    return chosen < 0 ? nullptr : &options[static_cast<size_t>(chosen)];
  }
  bool waits() const {
    return Chosen() && (Chosen()->option == StartOption::kWait ||
                        Chosen()->option == StartOption::kWaitFraction);
  }
};

// Var / mean^2 of `work` (StartRequest::work_cv2); 0 for fewer than two
// values or a mean of 0.
double SquaredCv(const std::vector<double>& work);

// Every option's forecast and the one with the smallest score (own finish
// plus, with charge_others, the delay added to others); ties go to the
// earlier start, then to the order whole, fraction, split, wait.
// `occupant` describes a job already holding a share of a GPU.
StartDecision DecideStart(const StartRequest& request,
                          const ClusterState& state,
                          const std::function<Occupant(JobId)>& occupant);

// When `gpus` GPUs of one undrained node of `pool` have `milli` compute
// and `memory_mib` memory free each (kFullGpuMilli and 0 memory: whole
// GPUs, empty), the jobs on them leaving at `ends_at` (absolute; infinity
// when unknown): the earliest such time (`now` if already), and the jobs
// still on the most shared of those GPUs then. `at` infinity when never
// known.
StartRequest::Opening CapacityFreesAt(
    const ClusterState& state, std::string_view pool, int gpus, int milli,
    int64_t memory_mib, double now,
    const std::function<double(JobId)>& ends_at);

// What a start decision is made of, as its three callers know it (the
// service's split-or-wait, the models replay's tessera admission, the timed
// replay's model pods); BuildStartRequest writes the StartRequest from it,
// one rule for all three. What fits now is each caller's own, on purpose:
// a trace pod cannot split (it has no graph); the replays run a fraction
// uncapped, at speed 1 (the MPS law was measured without thread caps),
// where the service offers FractionSpeed; the models replay gives a
// one-GPU job a GPU nobody holds, not an exclusive one; the service offers
// a fraction only when no whole GPU is free, the replays beside it.
struct StartInputs {
  double now = 0;
  double work_s = 0;  // seconds alone on one whole GPU of the pool's kind
  double busy_fraction = estimator::kTrainingBusyFraction;
  InterferenceLaw law;
  std::vector<StartCandidate> candidates;  // what fits now
  // With no kWhole candidate it may wait for `whole_gpus` whole GPUs of
  // `pool` with `whole_memory_mib` each; with no single-GPU candidate (a
  // split or nothing), and `fraction_wait`, for `fraction_milli` and
  // `fraction_memory_mib` of one GPU. When they free: CapacityFreesAt on
  // the state given to BuildStartRequest, the jobs leaving at `ends_at`.
  // An opening already free now, which the caller's allocator did not give
  // the job (its node's CPU or memory is taken, say), is
  // no opening: waiting for it could last forever.
  std::string pool;
  int whole_gpus = 1;
  int64_t whole_memory_mib = 0;
  bool fraction_wait = true;
  int fraction_milli = kFullGpuMilli;
  int64_t fraction_memory_mib = 0;
  std::function<double(JobId)> ends_at;
  // Its queue (StartRequest's backlog terms): the jobs behind it, the
  // pool's GPUs, the spread of the pool's work, whether a gang is queued.
  int held_back = 0;
  int pool_gpus = 1;
  double work_cv2 = 0;
  bool gang_queued = false;
};

// The StartRequest of `in`, its openings found in `s` (the cluster as the
// caller sees it, or only the GPUs of the job's kinds).
StartRequest BuildStartRequest(const ClusterState& s, StartInputs in);

// A one-line account: "split over node0/gpu2+gpu3 now: ends +14m05s;
// whole GPU frees +3m20s: ends +13m50s -> wait". Times relative to `now`.
std::string DescribeDecision(const StartDecision& d, const Topology& t,
                             double now);
// "node0/gpu2+gpu3".
std::string DescribeGpus(const Topology& t, const Allocation& a);

// The decision as JSON (docs/http_api.md, "decision"): work_s, chosen,
// options [{option, where, start_s, finish_s, speed, slowdown,
// sharing_with, cost_to_others_s}], times absolute.
nlohmann::json DecisionJson(const StartDecision& d, const Topology& t);

}  // namespace tessera::scheduler

#endif  // TESSERA_SCHEDULER_START_DECISION_H_
