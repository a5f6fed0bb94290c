#ifndef TESSERA_SIM_MODEL_ELASTIC_H_
#define TESSERA_SIM_MODEL_ELASTIC_H_

// Elastic jobs in the models mode (docs/simulate_models.md, "Elastic
// jobs"): a share of the generated model jobs are data-parallel sweeps of
// `max` replicas, each replica one whole GPU, and the same arrivals run
// gang-only (a sweep holds all `max` GPUs for its duration) and elastic
// (it starts with `min` and grows and shrinks). The jobs become pods and
// run through the timed replay's elastic engine (sim/timed_elastic.h), so
// every decision is the scheduler's (ElasticStartAllocation,
// FreeWorkerGpus, WithWorkers / WithoutWorkers) and the speed law is the
// timed mode's: speedup(k) = 1 + (k - 1) x E.

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "scheduler/topology.h"
#include "sim/model_workload.h"
#include "sim/timed_elastic.h"
#include "sim/trace.h"

namespace tessera::sim {

struct ModelElasticOptions {
  // This % of the jobs whose model fits one GPU are sweeps, picked by the
  // name "job-<index>" with the --model-pods rule (DeclaresModel). 0..100.
  int pct = 0;
  int min_workers = 1;            // a sweep's min: min(this, max)
  int max_workers = 4;            // a sweep's replicas, one whole GPU each
  double scaling_efficiency = 1;  // (0, 1], as ElasticTimedOptions
  std::string scorer = "tessera";
  std::string queue_policy = "fifo";
  std::string pool;  // "" = the default pool
  uint64_t seed = 1;
};

// The jobs as pods on whole GPUs: "job-<index>", arriving at arrival_s and
// running duration_s; a sweep asks max_workers GPUs, any other job its
// WholeDemand on `gpu_memory_mib`. `sweep` gets one mark per job. No CPU
// or memory (the models mode reserves GPUs only).
std::vector<TracePod> ModelJobPods(const std::vector<ModelJobKind>& kinds,
                                   const std::vector<ModelJob>& jobs,
                                   int64_t gpu_memory_mib,
                                   const ModelElasticOptions& options,
                                   std::vector<char>& sweep);

// Gang-only and elastic on the same jobs (two replays, `threads` at a
// time; 0: one per core), on the nodes of `options.pool` alone (figures
// such as utilization are the pool's). Elastic pods of the runs are the
// sweeps; pod i is job i.
// kBadInput for pct outside 0..100, min_workers below 1, max_workers below
// min_workers, an efficiency outside (0, 1], an unknown pool, scorer or
// queue policy, a pool without GPUs, no jobs, or a job of an unknown kind.
Result<ElasticComparison> CompareModelElastic(
    const Topology& topology, const std::vector<ModelJobKind>& kinds,
    const std::vector<ModelJob>& jobs, const ModelElasticOptions& options,
    int threads = 0);

}  // namespace tessera::sim

#endif  // TESSERA_SIM_MODEL_ELASTIC_H_
