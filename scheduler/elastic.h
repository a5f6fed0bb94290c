#ifndef TESSERA_SCHEDULER_ELASTIC_H_
#define TESSERA_SCHEDULER_ELASTIC_H_

// Elastic jobs (docs/elastic.md): a worker's share, the guaranteed part
// (the first `min` workers) and the extras, and where more workers fit
// beside a running job. All on the job's node: a worker is one GPU (whole
// or a fraction), and the local launcher runs a job on one machine, like
// today's gangs. Plain functions on the cluster state; the service's
// rounds (service/service_elastic.cc) and the replays call them.

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "scheduler/admission.h"
#include "scheduler/job.h"
#include "scheduler/topology.h"

namespace tessera::scheduler {

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

// ---- The elastic rules of a scheduling round ----
// One implementation for the service's rounds and every replay
// (docs/elastic.md, "A round with elastic jobs"): the policies plan on the
// state where elastic jobs hold their guaranteed part only; a start that
// lands on extras takes those extras back (the service asks with notice,
// a replay at once); free GPUs go to the running elastic jobs, oldest
// first.

// A running elastic job as a round sees it. A view: the pointers must
// outlive it.
struct ElasticHolding {
  JobId id = 0;
  const Allocation* allocation = nullptr;     // what it holds now
  const std::vector<int>* workers = nullptr;  // ids, parallel to its GPUs
  Resources worker;                           // one worker's share
  ElasticRequest request;                     // min and max workers
  double started_at = 0;  // when it started (the grow order)
  // Extras asked back already and not yet gone (none in a replay): not
  // asked again.
  const std::vector<int>* releasing = nullptr;
};

// `s` with every holding's extras (its workers from `min` up) free.
ClusterState PlanOnGuaranteed(const ClusterState& s,
                              const std::vector<ElasticHolding>& jobs);

// Whether `held` (a running job's allocation) is on a node `a` uses: its
// node, or the node of one of its GPUs.
bool SharesNode(const Topology& t, const Allocation& held, const Allocation& a);

// The extras in the way of a start at `a` in `s` (the state as held,
// extras included), per job: on the GPUs `a` takes, and when the node of
// `a` is short of CPU or memory for it, every extra on that node. Workers
// already `releasing` are left out; jobs with none to give are not listed.
struct ExtrasBack {
  JobId id = 0;
  std::vector<int> workers;  // ascending
};
std::vector<ExtrasBack> ExtrasInTheWay(const ClusterState& s,
                                       const Allocation& a,
                                       const std::vector<ElasticHolding>& jobs);

// Where a start the policy planned at `planned` (on PlanOnGuaranteed's
// state) goes in `s`, the state as held, extras included: `planned` when
// it fits there; else where `replace` places the job in `s`, on capacity
// free now and on no GPU in `waited_for`, so that no extra is taken back
// for it; else nullopt: it needs the extras in its way back
// (ExtrasInTheWay). `replace` may be empty: a split job's plan is for the
// GPUs it was planned on. `waited_for` holds the GPUs of the round's
// earlier starts that wait for extras given back: free GPUs of their plan
// stay theirs, or a later start placed beside extras could take them and
// the earlier one would wait again, round after round.
using Replacer =
    std::function<std::optional<Allocation>(const ClusterState& s)>;
std::optional<Allocation> StartBesideExtras(const ClusterState& s,
                                            const Allocation& planned,
                                            const Replacer& replace,
                                            const std::set<int>& waited_for);

// The order elastic jobs grow in: below their max, oldest first (by start,
// then id). Indices into `jobs`.
std::vector<size_t> GrowOrder(const std::vector<ElasticHolding>& jobs);

}  // namespace tessera::scheduler

#endif  // TESSERA_SCHEDULER_ELASTIC_H_
