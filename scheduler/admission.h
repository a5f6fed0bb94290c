#ifndef TESSERA_SCHEDULER_ADMISSION_H_
#define TESSERA_SCHEDULER_ADMISSION_H_

// Where a job can go: the fragmentation-aware choice of GPUs (a pluggable
// scorer, shared with the trace replay) and the allocator the queue policies
// call.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "scheduler/topology.h"

namespace tessera::scheduler {

// Ranks the GPUs (or nodes) a request could go to; lower is better. Only
// called for candidates where the request fits.
class GpuScorer {
 public:
  virtual ~GpuScorer() = default;
  virtual std::string_view name() const = 0;
  // A fractional request (demand.gpus == 0) on GPU `gpu`.
  virtual double ScoreGpu(const ClusterState& state, int gpu,
                          const Resources& demand) const = 0;
  // A whole-GPU request on node `node` taking `gpus` (free, unshared).
  virtual double ScoreNode(const ClusterState& state, int node,
                           const std::vector<int>& gpus,
                           const Resources& demand) const = 0;
};

// "best-fit" (least free milli left on the GPU, then memory), "worst-fit",
// "first-fit" (lowest index), "fgd" (fragmentation gradient descent: the
// least growth of the pool's fragmentation, after Weng et al., ATC'23).
// kBadInput naming the known ones otherwise.
Result<std::unique_ptr<GpuScorer>> MakeScorer(std::string_view name);
std::vector<std::string> ScorerNames();

// A placement for `demand` in `pool` now: a fraction of one GPU, or
// `demand.gpus` whole free GPUs of one node, with the node's CPU and
// memory; the best-scored candidate. nullopt when nothing fits now.
// Drained nodes are skipped.
std::optional<Allocation> FindAllocation(const ClusterState& state,
                                         std::string_view pool,
                                         const Resources& demand,
                                         const GpuScorer& scorer);

// Whether `demand` could ever fit `pool` (an empty cluster of that pool):
// false means the request is larger than any GPU or node it could get.
bool CouldEverFit(const Topology& topology, std::string_view pool,
                  const Resources& demand);

}  // namespace tessera::scheduler

#endif  // TESSERA_SCHEDULER_ADMISSION_H_
