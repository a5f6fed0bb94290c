// gpu-packing and gpu-clustering, as the paper's simulator defines them
// (docs/simulate.md).

#include <algorithm>

#include "scheduler/scorers_internal.h"

namespace tessera::scheduler::scorers_internal {
namespace {

// GPU packing: prefer GPUs already in use, then free GPUs on a node in use,
// then an empty node. Scores 100 - (free % of the GPUs used)/10 (at least
// 50); 50 - (free GPUs it breaks into) (at least 33); max(33 - free GPUs,
// free GPUs) for a node with every GPU free. CPU-only requests score 0.
class GpuPacking final : public GpuScorer {
 public:
  std::string_view name() const override { return "gpu-packing"; }
  double Score(const ClusterState& state, const PlacementRequest& request,
               const NodeFit& fit, std::vector<int>& gpus) const override {
    const Resources& d = request.demand;
    if (fit.gpus.empty()) {
      gpus.clear();
      return 0;
    }
    const int tightest = TightestGpu(state, fit.gpus);
    TakeGpus(d, fit, tightest, gpus);
    const std::vector<int>& node_gpus = state.topology().nodes[fit.node].gpus;
    int fully_free = 0;
    for (const int g : node_gpus) {
      fully_free += state.free_milli(g) == kFullGpuMilli;
    }
    if (fully_free == static_cast<int>(node_gpus.size())) {
      return std::max(33 - fully_free, fully_free);
    }
    int breaks = 0;
    int free_pct = 0;
    for (const int g : gpus) {
      breaks += state.free_milli(g) == kFullGpuMilli;
      free_pct += state.free_milli(g) * 100 / kFullGpuMilli;
    }
    if (breaks > 0) return std::max(50 - breaks, 33);
    return std::max(100 - free_pct / 10, 50);
  }
};

// GPU clustering: put alike jobs together (fractions with fractions, k-GPU
// jobs with k-GPU jobs). Tiers of 25: a node holding only the request's
// kind, a node holding it among others, an empty node, a node holding
// other kinds only; within a tier, the fuller node. CPU-only requests
// score 0.
class GpuClustering final : public GpuScorer {
 public:
  std::string_view name() const override { return "gpu-clustering"; }
  double Score(const ClusterState& state, const PlacementRequest& request,
               const NodeFit& fit, std::vector<int>& gpus) const override {
    const Resources& d = request.demand;
    if (fit.gpus.empty()) {
      gpus.clear();
      return 0;
    }
    TakeGpus(d, fit, TightestGpu(state, fit.gpus), gpus);
    const int tag = d.gpus > 0 ? std::min(d.gpus, kOtherTag) : kShareTag;
    int kinds = 0;
    for (int k = 0; k < kTags; ++k) kinds += state.tag_count(fit.node, k) > 0;
    const auto max_gpu =
        static_cast<int64_t>(spec_.Get(state.topology()).gpu_milli);
    const int64_t fullness =
        25 * (max_gpu - NodeFreeMilli(state, fit.node)) / max_gpu;
    int64_t tier = 0;
    if (state.tag_count(fit.node, tag) > 0) {
      tier = kinds == 1 ? 75 : 50;
    } else if (kinds == 0) {
      tier = 25;
    }
    return static_cast<double>(fullness + tier);
  }

 private:
  mutable MaxSpecCache spec_;
};

}  // namespace

std::unique_ptr<GpuScorer> MakeGpuPacking() {
  return std::make_unique<GpuPacking>();
}
std::unique_ptr<GpuScorer> MakeGpuClustering() {
  return std::make_unique<GpuClustering>();
}

}  // namespace tessera::scheduler::scorers_internal
