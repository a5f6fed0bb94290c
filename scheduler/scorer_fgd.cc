// fgd and tessera: fragmentation descent. fgd is Weng et al.'s (ATC'23) as
// the paper's simulator scores it: int(100 sigmoid((F(before) - F(after)) /
// 1000)) on the node, F = NodeFragmentation over the workload's typical
// tasks; within the node the GPU whose own score is best (the first of
// equals); ties between nodes go to the first in the tie order. tessera
// descends F + StrandedMilli instead: the GPU capacity a node's CPU and
// memory can no longer feed counts as idle too (docs/simulate.md).

#include <cmath>

#include "scheduler/scorers_internal.h"

namespace tessera::scheduler::scorers_internal {
namespace {

// Where `gpu` sits in the node's list (FreeOn keeps the node's order).
size_t PositionOf(const ClusterState& state, int node, int gpu) {
  const std::vector<int>& gpus = state.topology().nodes[node].gpus;
  size_t p = 0;
  while (gpus[p] != gpu) ++p;
  return p;
}

// The paper's score: 100 sigmoid(drop in milli / 1000), truncated. The
// truncation matters: placements within a few tens of milli of each other
// tie and go to the first node in the tie order, which packs nodes one
// after another (the paper's simulator loses about 3 points on openb with
// the raw value).
double DescentScore(double before, double after) {
  const double drop = (before - after) / 1000.0;
  return static_cast<double>(
      static_cast<int64_t>(100.0 / (1.0 + std::exp(-drop))));
}

class FragmentationDescent final : public GpuScorer {
 public:
  FragmentationDescent(const Workload& workload, bool stranding)
      : workload_(workload), stranding_(stranding) {}
  std::string_view name() const override {
    return stranding_ ? "tessera" : "fgd";
  }

  double Score(const ClusterState& state, const PlacementRequest& request,
               const NodeFit& fit, std::vector<int>& gpus) const override {
    const Resources& d = request.demand;
    NodeFree free = FreeOn(state, fit.node);
    const double before = Measure(free);
    free.cpu_milli -= d.cpu_milli;
    free.memory_mib -= d.memory_mib;
    if (d.gpus > 0 || fit.gpus.empty()) {
      TakeGpus(d, fit, -1, gpus);
      for (const int g : gpus) {
        FreeGpu& f = free.gpus[PositionOf(state, fit.node, g)];
        f.milli = 0;
        f.memory_mib = 0;
      }
      return DescentScore(before, Measure(free));
    }
    // A fraction: each GPU it fits (GPUs alike in what is free score alike).
    double best = -1;
    int best_gpu = -1;
    int last_milli = -1;
    int64_t last_memory = -1;
    double last_score = 0;
    for (const int g : fit.gpus) {
      FreeGpu& f = free.gpus[PositionOf(state, fit.node, g)];
      if (f.milli != last_milli || f.memory_mib != last_memory) {
        last_milli = f.milli;
        last_memory = f.memory_mib;
        const FreeGpu saved = f;
        f.milli -= d.gpu_milli;
        f.memory_mib -= d.gpu_memory_mib;
        last_score = DescentScore(before, Measure(free));
        f = saved;
      }
      if (last_score > best) {
        best = last_score;
        best_gpu = g;
      }
    }
    TakeGpus(d, fit, best_gpu, gpus);
    return best;
  }

 private:
  double Measure(const NodeFree& free) const {
    const double f = NodeFragmentation(free, workload_);
    return stranding_ ? f + StrandedMilli(free, workload_) : f;
  }

  const Workload& workload_;
  const bool stranding_;
};

}  // namespace

std::unique_ptr<GpuScorer> MakeFgd(const Workload& workload) {
  return std::make_unique<FragmentationDescent>(workload, false);
}

std::unique_ptr<GpuScorer> MakeTessera(const Workload& workload) {
  return std::make_unique<FragmentationDescent>(workload, true);
}

}  // namespace tessera::scheduler::scorers_internal
