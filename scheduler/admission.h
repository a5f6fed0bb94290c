#ifndef TESSERA_SCHEDULER_ADMISSION_H_
#define TESSERA_SCHEDULER_ADMISSION_H_

// Where a job can go: the placement scorers (the published baselines of
// Weng et al., ATC'23, and tessera's own), shared by the queue service and
// the trace replay, and FindAllocation, which every queue policy and the
// replay call. docs/simulate.md describes each scorer.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "scheduler/fragmentation.h"
#include "scheduler/topology.h"

namespace tessera::scheduler {

// What a placement needs: the resources, and the GPU kinds it may run on.
// A request with no GPU (gpus == 0, gpu_milli == 0, gpu_memory_mib == 0)
// takes CPU and memory only.
struct PlacementRequest {
  Resources demand;
  std::vector<std::string> gpu_kinds;  // empty: any kind
  bool operator==(const PlacementRequest&) const = default;
};

// A node where the request fits, as the scorer sees it.
struct NodeFit {
  int node = -1;
  // The node's GPUs (global indices, by index on the node) that could take
  // the request: for a fraction those with the milli and memory free, for
  // whole GPUs those nobody holds; empty for a CPU-only request.
  std::span<const int> gpus;
};

// Ranks the nodes a request fits on and picks the GPUs it takes there.
// Scores: higher is better; FindAllocation keeps the first best node in its
// tie order. A scorer instance is not thread-safe (random draws).
class GpuScorer {
 public:
  virtual ~GpuScorer() = default;
  virtual std::string_view name() const = 0;
  // Whether Score is a function of the node's state and the request alone,
  // so that FindAllocation may reuse it while the node's stamp holds.
  virtual bool deterministic() const { return true; }
  // The score of placing `request` on `fit.node`; sets `gpus` to the GPUs
  // taken (for a fraction one of fit.gpus, for whole GPUs request.gpus of
  // them, none for a CPU-only request).
  virtual double Score(const ClusterState& state,
                       const PlacementRequest& request, const NodeFit& fit,
                       std::vector<int>& gpus) const = 0;
};

struct ScorerOptions {
  // fgd and tessera: the workload whose fragmentation they descend
  // (default: OpenbWorkload()). Must outlive the scorer.
  const Workload* workload = nullptr;
  uint64_t seed = 1;  // random
};

// "random", "best-fit", "worst-fit", "first-fit", "dot-product",
// "gpu-packing", "gpu-clustering", "fgd", "tessera". kBadInput naming the
// known ones otherwise.
Result<std::unique_ptr<GpuScorer>> MakeScorer(
    std::string_view name, const ScorerOptions& options = {});
std::vector<std::string> ScorerNames();

// Remembers the scores of (node, request) pairs while the node's stamp
// holds; FindAllocation then re-scores only the nodes that changed. One
// per scorer (and per thread); valid across copies of a ClusterState.
class AdmissionCache {
 public:
  AdmissionCache();
  ~AdmissionCache();
  AdmissionCache(const AdmissionCache&) = delete;
  AdmissionCache& operator=(const AdmissionCache&) = delete;
  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

struct AdmissionOptions {
  // The order in which nodes are considered: ties go to the earliest.
  // Empty: by index. Otherwise a permutation of the topology's nodes.
  std::span<const int> node_order;
  AdmissionCache* cache = nullptr;  // for a deterministic scorer
};

// A placement for `request` in `pool` now: a fraction of one GPU, or
// `demand.gpus` whole free GPUs of one node (exclusive), or no GPU for a
// CPU-only request, with the node's CPU and memory; the best-scored node.
// nullopt when nothing fits now. Drained nodes are skipped; "" names the
// default pool.
std::optional<Allocation> FindAllocation(const ClusterState& state,
                                         std::string_view pool,
                                         const PlacementRequest& request,
                                         const GpuScorer& scorer,
                                         const AdmissionOptions& options = {});
std::optional<Allocation> FindAllocation(const ClusterState& state,
                                         std::string_view pool,
                                         const Resources& demand,
                                         const GpuScorer& scorer);

// A placement on one given node and the scorer's score for it.
struct ScoredAllocation {
  Allocation allocation;
  double score = 0;
};

// The placement of `request` on `node` alone, now, as FindAllocation would
// make it there (the same feasibility, GPUs and score), whatever the node's
// pool: for the Kubernetes extender, which is asked about given nodes.
// nullopt when it does not fit now or the node is drained.
std::optional<ScoredAllocation> FitOnNode(const ClusterState& state, int node,
                                          const PlacementRequest& request,
                                          const GpuScorer& scorer);
// Whether `request` could ever fit `node` (empty; drained or not).
bool CouldEverFitOnNode(const Topology& topology, int node,
                        const PlacementRequest& request);

// Whether `request` could ever fit `pool` (an empty cluster of that pool):
// false means it is larger than any GPU or node it could get.
bool CouldEverFit(const Topology& topology, std::string_view pool,
                  const PlacementRequest& request);
bool CouldEverFit(const Topology& topology, std::string_view pool,
                  const Resources& demand);

}  // namespace tessera::scheduler

#endif  // TESSERA_SCHEDULER_ADMISSION_H_
