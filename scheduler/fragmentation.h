#ifndef TESSERA_SCHEDULER_FRAGMENTATION_H_
#define TESSERA_SCHEDULER_FRAGMENTATION_H_

// GPU fragmentation as Weng et al. define it ("Beware of Fragmentation",
// USENIX ATC'23; docs/simulate.md): the idle GPU capacity of a node that
// the cluster's typical tasks, weighted by how often they arrive, could
// not use. The fgd and tessera scorers descend it; the trace replay
// reports it.

#include <cstdint>
#include <string>
#include <vector>

#include "scheduler/topology.h"

namespace tessera::scheduler {

// One task shape of a workload and its share of the tasks.
struct TypicalTask {
  int64_t cpu_milli = 0;
  int gpus = 0;   // GPUs per task; 0 for a CPU-only task
  int milli = 0;  // per GPU: 1..999 a fraction of one GPU, 1000 whole GPUs
  std::vector<std::string> kinds;  // GPU kinds it may use; empty = any
  double weight = 0;               // share of the tasks; weights sum to 1
  bool operator==(const TypicalTask&) const = default;
};

// The typical tasks of a workload, most common first, and what its GPU
// tasks ask of the host per GPU milli (0: unknown).
struct Workload {
  std::vector<TypicalTask> tasks;
  double cpu_per_milli = 0;         // CPU milli per GPU milli
  double memory_mib_per_milli = 0;  // host memory MiB per GPU milli
  // Of all the GPU milli the tasks ask, the share that may only run on each
  // GPU kind (a task allowing several kinds counts 1/n to each); empty when
  // no task names kinds.
  std::vector<std::pair<std::string, double>> kind_bound;
};

// The most common shapes of `tasks` (each appears once per task), in order
// of frequency (ties: by CPU, milli, GPUs, kinds), taken until they cover
// `coverage` of the tasks, their weights renormalised to sum to 1 (the
// paper's simulator uses coverage 0.95); cpu_per_milli over all GPU tasks,
// memory_mib_per_milli 0 (tasks carry no memory).
Workload TypicalWorkload(const std::vector<TypicalTask>& tasks,
                         double coverage = 0.95);

// The typical tasks of Alibaba's openb_pod_list_default.csv at coverage
// 0.95, built in: the service's fgd and tessera scorers use it when no
// workload is configured (tests check it against the file).
const Workload& OpenbWorkload();

// What is free on one node, the input of NodeFragmentation.
struct FreeGpu {
  int milli = 0;
  int64_t memory_mib = 0;    // free memory
  int64_t capacity_mib = 0;  // the GPU's memory
  const std::string* kind = nullptr;
  int id = -1;  // the GPU's index in the topology (FreeOn sets it)
};
struct NodeFree {
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;  // host memory
  std::vector<FreeGpu> gpus;
};
NodeFree FreeOn(const ClusterState& state, int node);

// Whether `gpu` could hold one GPU's share of `task`: milli, kind, and
// memory in proportion to the compute (a task that takes m milli of a GPU
// is assumed to need m/1000 of its memory; the openb trace reserves no GPU
// memory, where this never binds).
bool GpuCanTake(const FreeGpu& gpu, const TypicalTask& task);

// F(node) = sum_t weight_t * frag_t in GPU milli, where frag_t is the free
// milli of the GPUs that cannot take t when at least t.gpus of them can and
// the node has t's CPU, and all the node's free milli otherwise (CPU-only
// tasks use no GPU: all of it).
double NodeFragmentation(const NodeFree& node, const Workload& workload);

// The idle GPU milli of a node that its free CPU and host memory cannot
// feed when tasks ask them at the workload's ratios:
//   max(0, idle - cpu / cpu_per_milli, idle - memory / memory_mib_per_milli)
// (a ratio of 0 leaves its term out). tessera's scorer adds it to F: a GPU
// milli stranded by missing CPU is as idle as one no typical task fits
// (docs/simulate.md, "tessera").
double StrandedMilli(const NodeFree& node, const Workload& workload);

// The idle GPU milli of a node that no combination of the workload's typical
// GPU tasks could ever fill. Per GPU: its free milli less the most that any
// number of the typical fractions (one GPU, milli < 1000) allowed on its kind
// and asking at most the node's free CPU add up to within it (whole-GPU tasks
// fill an idle GPU); its memory bounds the milli as GpuCanTake does. With
// fractions of 160 milli and up, a 190-milli hole leaves 30 for good and a
// 60-milli one all 60; no free CPU for any GPU task leaves all of it; a
// workload without GPU tasks, nothing (unknown).
// tessera's scorer adds it to F as it adds StrandedMilli: a milli no mix of
// tasks can fill is as idle as one no CPU feeds (docs/simulate.md).
// The fill tables (per GPU kind the tasks name and per CPU level) are built
// once, in the constructor.
class UnfillableMilli {
 public:
  explicit UnfillableMilli(const Workload& workload);
  double operator()(const NodeFree& node) const;

 private:
  std::vector<std::string> kinds_;   // the kinds tasks name; then "any other"
  std::vector<int64_t> cpu_levels_;  // the GPU tasks' CPU asks, ascending
  // fill_[kind][level][h]: the most of h milli the tasks allowed on `kind`
  // and asking at most cpu_levels_[level] CPU can fill.
  std::vector<std::vector<std::vector<int16_t>>> fill_;
};

struct ClusterFragmentation {
  double idle_milli = 0;  // free GPU milli over the cluster
  double frag_milli = 0;  // sum of F over the nodes
  // frag / idle in percent (0 when nothing is idle).
  double ratio_pct() const;
};
ClusterFragmentation MeasureFragmentation(const ClusterState& state,
                                          const Workload& workload);

}  // namespace tessera::scheduler

#endif  // TESSERA_SCHEDULER_FRAGMENTATION_H_
