#ifndef TESSERA_SIM_TIMED_REPLAY_H_
#define TESSERA_SIM_TIMED_REPLAY_H_

// Trace replay, timed mode: the pods of a trace arrive at their
// creation_time, wait in the queue until the queue's policy (fifo,
// backfill, priority, fair-share: policy.h) starts them with a placement
// from FindAllocation and a named scorer, and leave after their duration.
// The replay owns the virtual clock and the bookkeeping only; every
// decision is the service's own policy and admission code.
// docs/simulate_timed.md has the semantics and the field mapping.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "scheduler/fragmentation.h"
#include "scheduler/policy.h"
#include "scheduler/queue_tree.h"
#include "scheduler/start_decision.h"
#include "scheduler/topology.h"
#include "sim/trace.h"

namespace tessera::sim {

// The queue the replay drives (scheduler/).
using scheduler::ClusterState;
using scheduler::InterferenceLaw;
using scheduler::QueuedJob;
using scheduler::QueueSpec;

// A trace pod as the queue sees it. The mapping (docs/simulate_timed.md):
// arrival = creation_time; duration = deletion_time - scheduled_time, or
// deletion_time - creation_time for a pod the trace never scheduled;
// priority from qos (LS and Guaranteed 2, Burstable 1, BE and others 0);
// the account for fair-share is the qos class; BE pods are preemptible;
// time_limit_s is the true duration (an oracle estimate for backfill).
struct TimedPod {
  double arrival = 0;
  double duration = 0;
  QueuedJob job;  // id = the pod's index in the pod list + 1
  PlacementRequest request;
};

// The pods in the order of the list. kBadInput naming the pod (name and
// 1-based position) for a pod without creation_time or deletion_time (and
// saying so for the whole list when no pod has them: the multigpu samples)
// or with times out of order (deletion before creation or scheduling).
Result<std::vector<TimedPod>> MakeTimedPods(const std::vector<TracePod>& pods);

// How model pods (TimedOptions::model_pods_pct) are admitted: fixed, on
// their request like any pod; tessera, by DecideStart (their request now,
// a GPU of their own now, or wait for one).
enum class TimedAdmission { kFixed, kTessera };
// "fixed", "tessera".
std::string_view TimedAdmissionName(TimedAdmission a);

// Whether the pod named `name` declares a model when `pct`% of the GPU
// pods do: FNV-1a 64 of the name, mod 100, below pct. A pure function of
// the name, so the same pods declare one in every run.
bool DeclaresModel(std::string_view name, int pct);

// The team of the pod named `name` when the pods are split into `teams`
// teams: FNV-1a 64 of the name, mod teams (0-based). REQUIRES: teams > 0.
int TeamOfPod(std::string_view name, int teams);

// How the pods are split into teams (docs/quotas.md, "Replay").
//  kHash: every pod by TeamOfPod(name, teams): the teams get the same mix.
//  kSkewed: the pods asking a fraction of one GPU (or none) go to the
//   first ceil(teams/2) teams (the steady base load of small pods), those
//   asking whole GPUs to the other floor(teams/2) (the larger, burstier
//   ones); within each side by FNV-1a 64 of the name mod that side's team
//   count. With one team, all pods are team 0.
enum class TeamSplit { kHash, kSkewed };
// "hash", "skewed".
std::string_view TeamSplitName(TeamSplit s);
// Pod i's team (0-based). REQUIRES: teams > 0.
int TeamOf(const TracePod& pod, int teams, TeamSplit split);

struct TimedOptions {
  std::string scorer = "fgd";         // ScorerNames()
  std::string queue_policy = "fifo";  // PolicyNames()
  // priority: LS and Burstable pods may preempt BE pods (which restart
  // from scratch when they start again).
  bool preemption = true;
  uint64_t seed = 42;  // random scorer and the nodes' tie order
  // The nodes' tie order (AdmissionOptions::node_order): shuffled by
  // `seed`, as the FGD paper's replays break ties at random, or by index
  // (false), as the service does (tests/sim/round_equivalence_test.cc
  // sets it, and `workload` to the service's, to compare the two).
  bool seeded_node_order = true;
  // Offered load x this factor: arrivals come this many times faster
  // (arrival = first + (creation_time - first) / load_factor), durations
  // stay. The openb samples are a few thousand pods of a cluster that ran
  // far more: at 1 they use about 1% of its GPUs and nobody waits.
  double load_factor = 1;
  // The typical tasks fgd and tessera descend. Default: the pod list's.
  const Workload* workload = nullptr;
  // Points of TimedRun::utilization (time-weighted bucket means).
  int utilization_points = 400;
  // Model pods (docs/simulate_timed.md, "Model pods: split or wait"):
  // this % of the GPU pods (DeclaresModel) declare a model. Their work is
  // their duration; they progress at InterferenceRate(law,
  // kTrainingBusyFraction, k) while k pods hold their GPU, and are admitted
  // by `admission`. Other pods run at rate 1 as in the trace. 0: none (the
  // replay is the plain one).
  int model_pods_pct = 0;
  TimedAdmission admission = TimedAdmission::kFixed;
  InterferenceLaw law;  // default: measured, timeslicing
  // Teams (docs/quotas.md, "Replay"): with teams > 0 pod i's team is
  // "team<k>", k = TeamOfPod(its name, teams), and fair-share's account is
  // the team (else the qos class, as without teams).
  int teams = 0;
  TeamSplit team_split = TeamSplit::kHash;
  // The queue tree (docs/quotas.md): empty, none. A pod goes to the queue
  // named after its team; every pod may borrow (a reclaimed pod restarts
  // from scratch, as a preempted one), and a reclaim's victims stop at
  // once (no grace period on the virtual clock).
  std::vector<QueueSpec> queues;
  // How the queues' guarantees were set, a label for the output ("equal",
  // "gpu-hours"); "" without the tree.
  std::string quota_guarantees;
  // Called after every policy round with the clock and the cluster (tests
  // check invariants with it); may be empty.
  std::function<void(double now, const ClusterState& state)> on_round;
  // Called now and then with the fraction of arrivals processed, from the
  // thread running the replay; may be empty.
  std::function<void(double fraction)> progress;
};

// Queueing delay statistics over the started pods, in seconds: a pod's
// delay is all the time it spent queued (after arrival, and after each
// preemption until it started again). Percentiles are nearest-rank.
struct DelayStats {
  double mean = 0, p50 = 0, p95 = 0, p99 = 0, max = 0;
};

// The model pods of one run (TimedOptions::model_pods_pct > 0).
struct ModelPodStats {
  int64_t pods = 0;        // declare a model (GPU pods only)
  int64_t fractional = 0;  // of which ask a fraction of one GPU: the ones
                           // that can share a GPU, and so have a choice
  int64_t finished = 0;
  double mean_jct_s = 0;    // finish - arrival, over the finished ones
  double mean_delay_s = 0;  // queueing delay, over the finished ones
  // Last run's time / duration, over the finished ones (>= 1).
  double mean_slowdown = 1;
  // tessera: pods the decision held back at least once while their
  // request fitted (it chose to wait for a whole GPU to free).
  int64_t waited = 0;
  // tessera: pods that started on a whole GPU of their own although their
  // request was a fraction (it chose not to share).
  int64_t whole = 0;
};

struct TimedRun {
  std::string scorer, queue_policy;
  std::string admission;         // "fixed" or "tessera"; "" without model pods
  bool quotas = false;           // under the queue tree (TimedOptions::queues)
  std::string quota_guarantees;  // TimedOptions::quota_guarantees
  double load_factor = 1;
  int64_t pods = 0;         // in the list
  int64_t started = 0;      // ran to their end
  int64_t unplaceable = 0;  // fit no node even on an empty cluster (never
                            // queued)
  int64_t stuck = 0;        // still queued when nothing else could happen
  int64_t never_started() const { return unplaceable + stuck; }
  int64_t preemptions = 0;    // runs cut short (priority with preemption,
                              // or reclaimed by the queue tree)
  int64_t reclaims = 0;       // of which reclaimed
  double lost_gpu_hours = 0;  // GPU time of the runs cut short
  DelayStats delay_s;
  // Each pod's queueing delay, in the order of the pod list; -1 for a pod
  // that never started.
  std::vector<double> pod_delay_s;
  // Each pod's JCT (departure - arrival), -1 for a pod that never started;
  // and whether it declared a model (empty without model pods).
  std::vector<double> pod_jct_s;
  std::vector<char> pod_model;
  ModelPodStats model;
  double first_arrival = 0;  // trace seconds
  double makespan_s = 0;     // last departure - first arrival
  // Allocated GPU milli / the cluster's, time-weighted over the makespan,
  // and its highest value.
  double mean_utilization_pct = 0, peak_utilization_pct = 0;
  // The mean over the times when pods were waiting (0 if none ever did):
  // how well a policy packs the cluster while demand exceeds what it
  // places.
  double queued_utilization_pct = 0;
  // (seconds since first_arrival, mean utilization % over the bucket that
  // starts there); the buckets split the makespan evenly.
  std::vector<std::pair<double, double>> utilization;
  double mean_queue = 0;  // time-weighted queue length
  int64_t peak_queue = 0;
  int64_t rounds = 0;  // policy rounds
  double seconds = 0;  // wall time of the replay
};

// One replay on this thread. kBadInput for an unknown scorer or policy, no
// pods, a cluster without GPUs, pods without times (MakeTimedPods), a
// load factor that is not positive, model_pods_pct outside 0..100 or a
// negative linear interference factor;
// kInternal if a policy returned starts that do not fit.
Result<TimedRun> RunTimed(const Topology& topology,
                          const std::vector<TracePod>& pods,
                          const TimedOptions& options);

// RunTimed for each entry of `runs`, `threads` at a time (0: one per core),
// results in the order of `runs`. `progress` (may be empty) is called with
// the fraction of the work done, from the worker threads one at a time.
// The first error of any run is returned.
Result<std::vector<TimedRun>> RunTimedAll(
    const Topology& topology, const std::vector<TracePod>& pods,
    const std::vector<TimedOptions>& runs, int threads,
    const std::function<void(double done)>& progress = {});

// A smaller cluster of the same make-up: of each GPU kind's nodes (and of
// the CPU-only ones) a seeded random `fraction`, at least one, in their
// order in `topology`. The openb pod lists load their 6,212-GPU cluster to
// about 1% in time, so timed replays shrink it to see queueing at all.
// REQUIRES: fraction in (0, 1].
Topology SampleCluster(const Topology& topology, double fraction,
                       uint64_t seed);

// Where the tessera admission changes the outcome: the same pods (same
// scorer, queue policy, seed and arrivals) under fixed and under tessera.
struct AdmissionComparison {
  // Model pods that finished in both runs: their mean JCT in each, and how
  // many finished earlier / later under tessera (by more than 1 ms).
  int64_t model_pods = 0;
  double fixed_jct_s = 0, tessera_jct_s = 0;
  int64_t earlier = 0, later = 0;
  // The other pods that started in both: their mean queueing delay.
  int64_t other_pods = 0;
  double fixed_other_delay_s = 0, tessera_other_delay_s = 0;
  double fixed_makespan_s = 0, tessera_makespan_s = 0;
};
// REQUIRES: both runs of the same pods with model pods.
AdmissionComparison CompareAdmissions(const TimedRun& fixed,
                                      const TimedRun& tessera);

// The delay statistics of `delays` (any order; empty gives zeros).
DelayStats SummarizeDelays(std::vector<double> delays);

}  // namespace tessera::sim

#endif  // TESSERA_SIM_TIMED_REPLAY_H_
