#ifndef TESSERA_SCHEDULER_ELASTIC_H_
#define TESSERA_SCHEDULER_ELASTIC_H_

// Elastic jobs (docs/elastic.md): a worker's share, the guaranteed part
// (the first `min` workers) and the extras, and where more workers fit
// beside a running job. All on the job's node: a worker is one GPU (whole
// or a fraction), and the local launcher runs a job on one machine, like
// today's gangs. Plain functions on the cluster state; the service's
// rounds (service/service_elastic.cc) and the replays call them.

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "scheduler/admission.h"
#include "scheduler/job.h"
#include "scheduler/topology.h"

namespace tessera::scheduler {

std::optional<ElasticMode> ParseElasticMode(std::string_view text);

// What the queue reserves for the guaranteed part: `min` whole GPUs on one
// node, or (a fraction) one worker's share per GPU (like a split job's
// per-GPU demand), with `min` workers' CPU and memory.
Resources ElasticGuaranteedDemand(const Resources& worker,
                                  const ElasticRequest& e);

// One worker's share of `gpu`.
GpuShare WorkerShare(const Resources& worker, int gpu);

// Up to `count` more GPUs for workers beside `a` on its node, as free now
// in `s` (a whole GPU nobody holds, or a GPU with the worker's fraction
// free and not held exclusively), each GPU at most one worker of the job,
// and as many as the node's free CPU and memory allow. None on a drained
// node.
std::vector<int> FreeWorkerGpus(const ClusterState& s, const Allocation& a,
                                const Resources& worker, int count);

// How many workers (up to `max`) a job could hold on `node` now, counting
// from none: the GPUs FreeWorkerGpus would give it there, capped by the
// node's free CPU and memory. 0 on a drained node.
int ElasticRoomOnNode(const ClusterState& s, int node, const Resources& worker,
                      int max);

// Where `min` workers fit now in `pool`, placed where the job can grow:
// among the nodes with room for all `min` (and, when `gpu_kinds` is not
// empty, whose GPUs are of one of those kinds), the one with the most room
// for workers up to `max` (ElasticRoomOnNode); among equals, the one the
// scorer ranks best for the guaranteed part, then the earliest in
// `options.node_order`. With min = max this is the scorer's choice alone.
// nullopt when no node has room for `min`. docs/elastic.md, "Where an
// elastic job starts".
std::optional<Allocation> ElasticStartAllocation(
    const ClusterState& s, std::string_view pool, const Resources& worker,
    const ElasticRequest& e, const GpuScorer& scorer,
    const AdmissionOptions& options = {},
    const std::vector<std::string>& gpu_kinds = {});

// `a` with the workers of `drop` (ids in `workers`, parallel to a.gpus)
// removed, and their CPU and memory; `workers` is updated alike.
Allocation WithoutWorkers(const Allocation& a, const Resources& worker,
                          std::vector<int>& workers, const std::set<int>& drop);
// `a` with one worker per GPU of `gpus` added, given the lowest free ids.
Allocation WithWorkers(const Allocation& a, const Resources& worker,
                       std::vector<int>& workers, const std::vector<int>& gpus);

// The guaranteed part of an elastic job's allocation (its workers below
// `min`), or `job.allocation` itself for any other job.
Allocation GuaranteedPart(const Job& job);

}  // namespace tessera::scheduler

#endif  // TESSERA_SCHEDULER_ELASTIC_H_
