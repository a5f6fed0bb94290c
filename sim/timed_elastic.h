#ifndef TESSERA_SIM_TIMED_ELASTIC_H_
#define TESSERA_SIM_TIMED_ELASTIC_H_

// Elastic jobs in the timed replay (docs/simulate_timed.md, "Elastic
// jobs"): a share of the multi-GPU pods become elastic jobs (min..max
// whole GPUs on one node, docs/elastic.md), and the same arrivals are
// replayed gang-only and elastic. The decisions are the scheduler's own,
// the service's code: the policy plans on PlanOnGuaranteed's state, an
// elastic job starts where ElasticStartAllocation puts its `min` workers,
// a start planned on extras goes beside them if it fits on free GPUs
// (StartBesideExtras), else the extras in its way (ExtrasInTheWay) are
// taken back at once, and free GPUs of an elastic job's node are grown
// into in GrowOrder (FreeWorkerGpus, WithWorkers).

#include <cstdint>
#include <vector>

#include "common/result.h"
#include "scheduler/topology.h"
#include "sim/timed_replay.h"
#include "sim/trace.h"

namespace tessera::sim {

struct ElasticTimedOptions {
  // The replay's scorer, queue policy, preemption, seed, load factor,
  // workload, teams, on_round and progress. Model pods and the queue tree
  // are not modelled with elastic jobs (kBadInput if set).
  TimedOptions base;
  // This % of the eligible pods (multi-GPU pods asking whole GPUs) are
  // elastic, picked by name with the --model-pods rule (DeclaresModel:
  // FNV-1a 64 of the name mod 100 below the %). 0..100.
  int elastic_pct = 0;
  // An elastic pod's min workers: min(this, its GPUs); max = its GPUs.
  int min_workers = 1;
  // Speedup of k workers: 1 + (k - 1) x this (1: linear). An elastic pod's
  // work is its trace duration at max workers; with k workers it progresses
  // at speedup(k) / speedup(max) of that, so at max it takes exactly its
  // trace duration and with 1 worker (linear) duration x max. In (0, 1].
  double scaling_efficiency = 1;
  // When not empty (one entry per pod): exactly the pods marked here are
  // elastic, whole-GPU pods of any size, instead of elastic_pct's rule
  // (the models mode's data-parallel sweeps, sim/model_elastic.h).
  std::vector<char> elastic_pods;
};

// Whether trace pod `pod` is elastic at `pct`%: asks two or more whole
// GPUs and DeclaresModel(name, pct).
bool IsElasticPod(const TracePod& pod, int pct);

// One replay, gang-only (`elastic` false: every pod as in the trace, the
// elastic ones included) or elastic.
struct ElasticTimedRun {
  bool elastic = false;
  int64_t pods = 0, started = 0, unplaceable = 0, stuck = 0;
  int64_t elastic_pods = 0;  // pods IsElasticPod picks (in both runs)
  int64_t preemptions = 0;
  double first_arrival = 0;
  double makespan_s = 0;  // last departure - first arrival
  // Over the pods that started (all; the elastic ones), in seconds.
  double mean_jct_s = 0, mean_elastic_jct_s = 0;
  double mean_wait_s = 0, mean_elastic_wait_s = 0;  // queueing delay
  // Allocated GPU milli / the cluster's, time-weighted over the makespan.
  double mean_utilization_pct = 0;
  // Elastic run: grow events (a job gets workers) and the workers added;
  // shrink events (extras taken back for a start) and the workers taken.
  int64_t grows = 0, workers_grown = 0, shrinks = 0, workers_taken_back = 0;
  // Per pod, in the order of the list: JCT and queueing delay (-1: never
  // started), whether elastic, and the GPU-seconds its last run held.
  std::vector<double> pod_jct_s, pod_delay_s, pod_gpu_seconds;
  std::vector<char> pod_elastic;
  // Per pod: min and max workers (0 for a pod that is not elastic).
  std::vector<int> pod_min, pod_max;
  int64_t rounds = 0;
  double seconds = 0;  // wall time
};

// kBadInput as RunTimed, and for elastic_pct outside 0..100, min_workers
// below 1, scaling_efficiency outside (0, 1], model pods or queues set,
// elastic_pods of another size than the pods or marking a pod that does
// not ask whole GPUs;
// kInternal if the policy starts a pod that runs already.
Result<ElasticTimedRun> RunTimedElastic(const Topology& topology,
                                        const std::vector<TracePod>& pods,
                                        const ElasticTimedOptions& options,
                                        bool elastic);

// The same arrivals gang-only and elastic (two replays, `threads` at a
// time; 0: one per core). base.on_round is not called (the two replays
// run on two threads); base.progress reports the elastic one's.
struct ElasticComparison {
  ElasticTimedRun gang, elastic;
};
Result<ElasticComparison> CompareElastic(const Topology& topology,
                                         const std::vector<TracePod>& pods,
                                         const ElasticTimedOptions& options,
                                         int threads = 0);

}  // namespace tessera::sim

#endif  // TESSERA_SIM_TIMED_ELASTIC_H_
