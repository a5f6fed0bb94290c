#ifndef TESSERA_SCHEDULER_SCORERS_INTERNAL_H_
#define TESSERA_SCHEDULER_SCORERS_INTERNAL_H_

// Shared by the scorers (scorers*.cc); nobody else includes it.

#include <cstdint>
#include <memory>
#include <vector>

#include "scheduler/admission.h"

namespace tessera::scheduler::scorers_internal {

// The GPU milli a request takes in all (whole GPUs count 1000 each).
int64_t RequestMilli(const Resources& d);
// The free GPU milli of `node`.
int64_t NodeFreeMilli(const ClusterState& state, int node);

// The largest node's CPU and GPU milli: the paper's simulator normalises
// best-fit and dot-product by them (128,000 and 8,000 on openb).
struct MaxSpec {
  double cpu_milli = 1;
  double gpu_milli = 1;
};
// Computed once per topology and remembered (not thread-safe: one per
// scorer).
class MaxSpecCache {
 public:
  const MaxSpec& Get(const Topology& t);

 private:
  const Topology* topology_ = nullptr;
  MaxSpec spec_;
};

// The fitting GPU with the least free milli (then memory), the first of
// equals: the paper's "tightest-fitting GPU".
int TightestGpu(const ClusterState& state, std::span<const int> fitting);

// The GPUs a request takes on a node: for a fraction `fraction_gpu`, for
// whole GPUs the lowest-index free ones, none for a CPU-only request.
void TakeGpus(const Resources& d, const NodeFit& fit, int fraction_gpu,
              std::vector<int>& gpus);

std::unique_ptr<GpuScorer> MakeRandom(uint64_t seed);
std::unique_ptr<GpuScorer> MakeBestFit();
std::unique_ptr<GpuScorer> MakeWorstFit();
std::unique_ptr<GpuScorer> MakeFirstFit();
std::unique_ptr<GpuScorer> MakeDotProduct();
std::unique_ptr<GpuScorer> MakeGpuPacking();
std::unique_ptr<GpuScorer> MakeGpuClustering();
std::unique_ptr<GpuScorer> MakeFgd(const Workload& workload);
std::unique_ptr<GpuScorer> MakeTessera(const Workload& workload);

}  // namespace tessera::scheduler::scorers_internal

#endif  // TESSERA_SCHEDULER_SCORERS_INTERNAL_H_
