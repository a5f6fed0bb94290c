#include "sim/model_elastic.h"

#include <algorithm>
#include <string>
#include <utility>

#include "sim/timed_replay.h"

namespace tessera::sim {

// What this file uses of scheduler/, beyond what its headers name.
using scheduler::kFullGpuMilli;
using scheduler::NodeInfo;

std::vector<TracePod> ModelJobPods(const std::vector<ModelJobKind>& kinds,
                                   const std::vector<ModelJob>& jobs,
                                   int64_t gpu_memory_mib,
                                   const ModelElasticOptions& options,
                                   std::vector<char>& sweep) {
  std::vector<TracePod> pods;
  pods.reserve(jobs.size());
  sweep.assign(jobs.size(), 0);
  for (size_t i = 0; i < jobs.size(); ++i) {
    const ModelJob& j = jobs[i];
    TracePod p;
    p.name = "job-" + std::to_string(i);
    const int gpus = WholeDemand(kinds[j.kind], gpu_memory_mib).gpus;
    sweep[i] = gpus == 1 && DeclaresModel(p.name, options.pct) ? 1 : 0;
    p.num_gpu = sweep[i] ? options.max_workers : gpus;
    p.gpu_milli = kFullGpuMilli;
    p.creation_time = j.arrival_s;
    p.deletion_time = j.arrival_s + j.duration_s;
    pods.push_back(std::move(p));
  }
  return pods;
}

Result<ElasticComparison> CompareModelElastic(
    const Topology& topology, const std::vector<ModelJobKind>& kinds,
    const std::vector<ModelJob>& jobs, const ModelElasticOptions& options,
    int threads) {
  if (options.pct < 0 || options.pct > 100) {
    return BadInput("pct: a percentage in 0..100, got " +
                    std::to_string(options.pct));
  }
  if (options.min_workers < 1 || options.max_workers < options.min_workers) {
    return BadInput(
        "min_workers, max_workers: MIN:MAX with 1 <= MIN <= MAX, got " +
        std::to_string(options.min_workers) + ":" +
        std::to_string(options.max_workers));
  }
  if (jobs.empty()) return BadInput("no jobs");
  for (const ModelJob& j : jobs) {
    if (j.kind < 0 || j.kind >= static_cast<int>(kinds.size())) {
      return BadInput("a job of kind " + std::to_string(j.kind) + " of " +
                      std::to_string(kinds.size()));
    }
  }
  auto pool = ResolveModelPool(topology, options.pool);
  if (!pool) return pool.error();
  const GpuInfo* gpu = PoolGpu(topology, *pool);
  if (gpu == nullptr) return BadInput("pool '" + *pool + "' has no GPUs");
  // The replay runs on the pool's nodes alone (its utilization is the
  // pool's, as the models mode's).
  Topology t;
  t.pools = {*pool};
  for (const NodeInfo& node : topology.nodes) {
    if (node.pool != *pool) continue;
    NodeInfo n = node;
    n.gpus.clear();
    for (const int g : node.gpus) {
      GpuInfo info = topology.gpus[g];
      info.node = static_cast<int>(t.nodes.size());
      n.gpus.push_back(static_cast<int>(t.gpus.size()));
      t.gpus.push_back(std::move(info));
    }
    t.nodes.push_back(std::move(n));
  }

  ElasticTimedOptions o;
  o.base.scorer = options.scorer;
  o.base.queue_policy = options.queue_policy;
  o.base.seed = options.seed;
  o.min_workers = options.min_workers;
  o.scaling_efficiency = options.scaling_efficiency;
  o.elastic_pct = options.pct;
  const std::vector<TracePod> pods =
      ModelJobPods(kinds, jobs, gpu->memory_mib, options, o.elastic_pods);
  return CompareElastic(t, pods, o, threads);
}

}  // namespace tessera::sim
