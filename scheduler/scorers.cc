// MakeScorer, the helpers the scorers share, and the simple ones: random,
// best-fit, worst-fit, first-fit and dot-product (docs/simulate.md gives
// each one's formula and where it comes from).

#include <algorithm>
#include <random>

#include "scheduler/scorers_internal.h"

namespace tessera::scheduler {
namespace scorers_internal {

int64_t RequestMilli(const Resources& d) {
  return d.gpus > 0 ? int64_t{kFullGpuMilli} * d.gpus : d.gpu_milli;
}

int64_t NodeFreeMilli(const ClusterState& state, int node) {
  int64_t free = 0;
  for (const int g : state.topology().nodes[node].gpus) {
    free += state.free_milli(g);
  }
  return free;
}

const MaxSpec& MaxSpecCache::Get(const Topology& t) {
  if (topology_ != &t) {
    topology_ = &t;
    spec_ = MaxSpec{};
    for (const NodeInfo& n : t.nodes) {
      spec_.cpu_milli = std::max(spec_.cpu_milli, double(n.cpu_milli));
      spec_.gpu_milli =
          std::max(spec_.gpu_milli, double(kFullGpuMilli * n.gpus.size()));
    }
  }
  return spec_;
}

int TightestGpu(const ClusterState& state, std::span<const int> fitting) {
  int best = fitting.front();
  for (const int g : fitting) {
    const int m = state.free_milli(g), bm = state.free_milli(best);
    if (m < bm ||
        (m == bm && state.free_memory_mib(g) < state.free_memory_mib(best))) {
      best = g;
    }
  }
  return best;
}

void TakeGpus(const Resources& d, const NodeFit& fit, int fraction_gpu,
              std::vector<int>& gpus) {
  gpus.clear();
  if (d.gpus > 0) {
    gpus.assign(fit.gpus.begin(), fit.gpus.begin() + d.gpus);
  } else if (!fit.gpus.empty()) {
    gpus.push_back(fraction_gpu);
  }
}

namespace {

// Random-fit: a node drawn uniformly among those that fit (every score is
// an independent draw, so the best is uniform), then a GPU drawn uniformly.
class Random final : public GpuScorer {
 public:
  explicit Random(uint64_t seed) : rng_(seed) {}
  std::string_view name() const override { return "random"; }
  bool deterministic() const override { return false; }
  double Score(const ClusterState& /*state*/, const PlacementRequest& request,
               const NodeFit& fit, std::vector<int>& gpus) const override {
    int gpu = -1;
    if (!fit.gpus.empty()) {
      std::uniform_int_distribution<size_t> pick(0, fit.gpus.size() - 1);
      gpu = fit.gpus[pick(rng_)];
    }
    TakeGpus(request.demand, fit, gpu, gpus);
    return std::uniform_real_distribution<double>(0, 1)(rng_);
  }

 private:
  mutable std::mt19937_64 rng_;
};

// What stays free on the node after the request, as a share of the largest
// node, CPU and GPU weighted equally (the paper's best-fit, in [0, 1]).
double LeftAfter(const ClusterState& state, const PlacementRequest& request,
                 int node, const MaxSpec& spec) {
  const Resources& d = request.demand;
  double left = 0;
  left +=
      double(state.free_cpu_milli(node) - d.cpu_milli) / spec.cpu_milli * 0.5;
  left += double(NodeFreeMilli(state, node) - RequestMilli(d)) /
          spec.gpu_milli * 0.5;
  return left;
}

// Best-fit: the node left with the least free CPU and GPU,
// int(100 (1 - left)); the tightest GPU on it.
class BestFit final : public GpuScorer {
 public:
  std::string_view name() const override { return "best-fit"; }
  double Score(const ClusterState& state, const PlacementRequest& request,
               const NodeFit& fit, std::vector<int>& gpus) const override {
    const double left =
        LeftAfter(state, request, fit.node, spec_.Get(state.topology()));
    TakeGpus(request.demand, fit,
             fit.gpus.empty() ? -1 : TightestGpu(state, fit.gpus), gpus);
    return static_cast<double>(static_cast<int64_t>((1.0 - left) * 100));
  }

 private:
  mutable MaxSpecCache spec_;
};

// Worst-fit: best-fit's mirror, the node left with the most free capacity
// and the loosest GPU on it.
class WorstFit final : public GpuScorer {
 public:
  std::string_view name() const override { return "worst-fit"; }
  double Score(const ClusterState& state, const PlacementRequest& request,
               const NodeFit& fit, std::vector<int>& gpus) const override {
    const double left =
        LeftAfter(state, request, fit.node, spec_.Get(state.topology()));
    int loosest = fit.gpus.empty() ? -1 : fit.gpus.front();
    for (const int g : fit.gpus) {
      const int m = state.free_milli(g), lm = state.free_milli(loosest);
      if (m > lm || (m == lm && state.free_memory_mib(g) >
                                    state.free_memory_mib(loosest))) {
        loosest = g;
      }
    }
    TakeGpus(request.demand, fit, loosest, gpus);
    return static_cast<double>(static_cast<int64_t>(left * 100));
  }

 private:
  mutable MaxSpecCache spec_;
};

// First-fit: the first node in the tie order, its first GPU that fits.
class FirstFit final : public GpuScorer {
 public:
  std::string_view name() const override { return "first-fit"; }
  double Score(const ClusterState& /*state*/, const PlacementRequest& request,
               const NodeFit& fit, std::vector<int>& gpus) const override {
    TakeGpus(request.demand, fit, fit.gpus.empty() ? -1 : fit.gpus.front(),
             gpus);
    return 0;
  }
};

// Dot-product (Tetris, SIGCOMM'14): the node whose free CPU and GPU,
// normalised by the largest node, align least with the request:
// int(100 (1 - (free . request) / 2)); the tightest GPU on it.
class DotProduct final : public GpuScorer {
 public:
  std::string_view name() const override { return "dot-product"; }
  double Score(const ClusterState& state, const PlacementRequest& request,
               const NodeFit& fit, std::vector<int>& gpus) const override {
    const MaxSpec& spec = spec_.Get(state.topology());
    const Resources& d = request.demand;
    const double dot =
        (double(state.free_cpu_milli(fit.node)) / spec.cpu_milli) *
            (double(d.cpu_milli) / spec.cpu_milli) +
        (double(NodeFreeMilli(state, fit.node)) / spec.gpu_milli) *
            (double(RequestMilli(d)) / spec.gpu_milli);
    TakeGpus(d, fit, fit.gpus.empty() ? -1 : TightestGpu(state, fit.gpus),
             gpus);
    return static_cast<double>(static_cast<int64_t>(100 * (1 - dot / 2)));
  }

 private:
  mutable MaxSpecCache spec_;
};

}  // namespace

std::unique_ptr<GpuScorer> MakeRandom(uint64_t seed) {
  return std::make_unique<Random>(seed);
}
std::unique_ptr<GpuScorer> MakeBestFit() { return std::make_unique<BestFit>(); }
std::unique_ptr<GpuScorer> MakeWorstFit() {
  return std::make_unique<WorstFit>();
}
std::unique_ptr<GpuScorer> MakeFirstFit() {
  return std::make_unique<FirstFit>();
}
std::unique_ptr<GpuScorer> MakeDotProduct() {
  return std::make_unique<DotProduct>();
}

}  // namespace scorers_internal

std::vector<std::string> ScorerNames() {
  return {"random",         "best-fit",    "worst-fit",
          "first-fit",      "dot-product", "gpu-packing",
          "gpu-clustering", "fgd",         "tessera"};
}

Result<std::unique_ptr<GpuScorer>> MakeScorer(std::string_view name,
                                              const ScorerOptions& options) {
  using namespace scorers_internal;  // NOLINT(google-build-using-namespace)
  const Workload& workload =
      options.workload != nullptr ? *options.workload : OpenbWorkload();
  if (name == "random") return MakeRandom(options.seed);
  if (name == "best-fit") return MakeBestFit();
  if (name == "worst-fit") return MakeWorstFit();
  if (name == "first-fit") return MakeFirstFit();
  if (name == "dot-product") return MakeDotProduct();
  if (name == "gpu-packing") return MakeGpuPacking();
  if (name == "gpu-clustering") return MakeGpuClustering();
  if (name == "fgd") return MakeFgd(workload);
  if (name == "tessera") return MakeTessera(workload);
  std::string known;
  for (const std::string& n : ScorerNames()) {
    known += (known.empty() ? "" : ", ") + n;
  }
  return BadInput("unknown scorer '" + std::string(name) +
                  "' (known: " + known + ")");
}

}  // namespace tessera::scheduler
