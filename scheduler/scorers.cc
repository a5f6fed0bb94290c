// The GPU scorers FindAllocation ranks candidates with: best-fit, worst-fit,
// first-fit and fgd (fragmentation gradient descent). Lower is better; ties
// go to the lowest index because FindAllocation keeps the first best.

#include <algorithm>
#include <array>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "scheduler/admission.h"

namespace tessera::scheduler {
namespace {

// best-fit and worst-fit order by free milli, then by free memory: the
// memory term is scaled below one milli so that it only breaks ties (GPU
// memory is far below 1e9 MiB, and doubles are exact to 2^53).
constexpr double kMilliOverMemory = 1e9;

// What stays free on `gpu` after `demand` takes its share.
double LeftAfter(const ClusterState& state, int gpu, const Resources& demand) {
  const double milli = state.free_milli(gpu) - demand.gpu_milli;
  const auto memory =
      static_cast<double>(state.free_memory_mib(gpu) - demand.gpu_memory_mib);
  return milli * kMilliOverMemory + memory;
}

// The free milli a whole-GPU placement leaves on its node.
double NodeMilliLeft(const ClusterState& state, int node,
                     const std::vector<int>& taken) {
  double left = 0;
  for (int g : state.topology().nodes[node].gpus) {
    if (std::find(taken.begin(), taken.end(), g) == taken.end()) {
      left += state.free_milli(g);
    }
  }
  return left;
}

// Packs: the GPU (or node) left with the least free capacity.
class BestFit final : public GpuScorer {
 public:
  std::string_view name() const override { return "best-fit"; }
  double ScoreGpu(const ClusterState& state, int gpu,
                  const Resources& demand) const override {
    return LeftAfter(state, gpu, demand);
  }
  double ScoreNode(const ClusterState& state, int node,
                   const std::vector<int>& gpus,
                   const Resources& /*demand*/) const override {
    return NodeMilliLeft(state, node, gpus);
  }
};

// Spreads: the GPU (or node) left with the most free capacity.
class WorstFit final : public GpuScorer {
 public:
  std::string_view name() const override { return "worst-fit"; }
  double ScoreGpu(const ClusterState& state, int gpu,
                  const Resources& demand) const override {
    return -LeftAfter(state, gpu, demand);
  }
  double ScoreNode(const ClusterState& state, int node,
                   const std::vector<int>& gpus,
                   const Resources& /*demand*/) const override {
    return -NodeMilliLeft(state, node, gpus);
  }
};

class FirstFit final : public GpuScorer {
 public:
  std::string_view name() const override { return "first-fit"; }
  double ScoreGpu(const ClusterState& /*state*/, int gpu,
                  const Resources& /*demand*/) const override {
    return gpu;
  }
  double ScoreNode(const ClusterState& /*state*/, int node,
                   const std::vector<int>& /*gpus*/,
                   const Resources& /*demand*/) const override {
    return node;
  }
};

// ---- Fragmentation gradient descent ----------------------------------------
//
// After Weng et al., "Beware of Fragmentation: Scheduling GPU-Sharing
// Workloads with Fragmentation Gradient Descent", USENIX ATC'23 (the openb
// traces and the paper's figures are in shared/data/openb).
//
// A node's expected fragmentation for a workload of typical tasks t with
// frequencies p_t is
//     F(node) = sum_t p_t * frag_t(node)
// where frag_t is the idle GPU milli that t cannot use:
//   - if at least t.gpus GPUs of the node could each take one of t's shares
//     (free milli >= t.milli and free memory >= t.milli/1000 of the GPU's
//     memory), frag_t = the free milli of the GPUs that could not;
//   - otherwise t cannot run on the node at all and frag_t = all its free
//     milli.
// A placement is scored F(after) - F(before) on the node it touches, which is
// also the change of the pool's fragmentation (the other nodes do not move):
// FGD takes the placement that grows fragmentation least (most negative
// score first). Differences from the paper, on purpose: GPU memory counts
// (a task is assumed to need memory in proportion to its compute, so a GPU
// whose memory is gone is fragmented however much compute it has left), CPU
// is ignored (CPU-only tasks shift every candidate's score by the same
// amount), and scores are raw milli, not the paper's integer sigmoid.

struct TaskShape {
  int gpus;       // GPUs per task
  int milli;      // milli per GPU (1000 = whole GPUs)
  double weight;  // tasks of this shape in the trace
};

// The GPU task shapes of openb_pod_list_default.csv in order of frequency:
// 16 shapes covering 99.3% of its 7,064 GPU pods (the rest are shapes with
// fewer than 10 pods each). Weights are pod counts, normalised below.
constexpr TaskShape kOpenbShapes[] = {
    {1, 1000, 3911}, {1, 810, 1078}, {1, 470, 750}, {1, 320, 328},
    {1, 650, 253},   {1, 230, 140},  {1, 460, 128}, {1, 590, 75},
    {1, 160, 74},    {1, 550, 72},   {1, 220, 62},  {1, 370, 47},
    {8, 1000, 44},   {1, 110, 24},   {2, 1000, 16}, {4, 1000, 15},
};

constexpr size_t kShapes = std::size(kOpenbShapes);

struct FreeGpu {
  int milli = 0;
  int64_t memory_mib = 0;
  int64_t capacity_mib = 0;
};

bool CanTake(const FreeGpu& gpu, const TaskShape& task) {
  return gpu.milli >= task.milli &&
         gpu.memory_mib * kFullGpuMilli >= gpu.capacity_mib * task.milli;
}

// A node's GPUs summed up per task shape: enough to compute F and to update
// it when one GPU changes, in one pass over the GPUs.
struct NodeView {
  double free_milli = 0;
  std::array<int, kShapes> usable{};             // GPUs that can take t
  std::array<double, kShapes> unusable_milli{};  // free milli of the others

  void Add(const FreeGpu& gpu, int sign) {
    free_milli += sign * gpu.milli;
    for (size_t t = 0; t < kShapes; ++t) {
      if (CanTake(gpu, kOpenbShapes[t])) {
        usable[t] += sign;
      } else {
        unusable_milli[t] += sign * gpu.milli;
      }
    }
  }

  // F(node) in milli.
  double Fragmentation() const {
    double sum = 0;
    double weights = 0;
    for (size_t t = 0; t < kShapes; ++t) {
      const TaskShape& task = kOpenbShapes[t];
      sum += task.weight *
             (usable[t] >= task.gpus ? unusable_milli[t] : free_milli);
      weights += task.weight;
    }
    return sum / weights;
  }
};

FreeGpu FreeGpuOf(const ClusterState& state, int gpu) {
  return {state.free_milli(gpu), state.free_memory_mib(gpu),
          state.topology().gpus[gpu].memory_mib};
}

NodeView ViewOf(const ClusterState& state, int node) {
  NodeView view;
  for (int g : state.topology().nodes[node].gpus) {
    view.Add(FreeGpuOf(state, g), +1);
  }
  return view;
}

class Fgd final : public GpuScorer {
 public:
  std::string_view name() const override { return "fgd"; }
  double ScoreGpu(const ClusterState& state, int gpu,
                  const Resources& demand) const override {
    NodeView view = ViewOf(state, state.topology().gpus[gpu].node);
    const double before = view.Fragmentation();
    FreeGpu free = FreeGpuOf(state, gpu);
    view.Add(free, -1);
    free.milli -= demand.gpu_milli;
    free.memory_mib -= demand.gpu_memory_mib;
    view.Add(free, +1);
    return view.Fragmentation() - before;
  }
  double ScoreNode(const ClusterState& state, int node,
                   const std::vector<int>& taken,
                   const Resources& /*demand*/) const override {
    NodeView view = ViewOf(state, node);
    const double before = view.Fragmentation();
    for (int g : taken) {
      FreeGpu free = FreeGpuOf(state, g);
      view.Add(free, -1);
      free.milli = 0;
      free.memory_mib = 0;
      view.Add(free, +1);
    }
    return view.Fragmentation() - before;
  }
};

}  // namespace

std::vector<std::string> ScorerNames() {
  return {"best-fit", "worst-fit", "first-fit", "fgd"};
}

Result<std::unique_ptr<GpuScorer>> MakeScorer(std::string_view name) {
  if (name == "best-fit") return std::unique_ptr<GpuScorer>(new BestFit);
  if (name == "worst-fit") return std::unique_ptr<GpuScorer>(new WorstFit);
  if (name == "first-fit") return std::unique_ptr<GpuScorer>(new FirstFit);
  if (name == "fgd") return std::unique_ptr<GpuScorer>(new Fgd);
  std::string known;
  for (const std::string& n : ScorerNames()) {
    known += (known.empty() ? "" : ", ") + n;
  }
  return BadInput("unknown scorer '" + std::string(name) +
                  "' (known: " + known + ")");
}

}  // namespace tessera::scheduler
