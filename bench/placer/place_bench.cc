// Scenarios: how long placement takes (issue targets, 2-core build machine).
//   BM_Zoo/<model>/<algo>      the algorithm alone on a zoo model, default
//                              cluster (4 x A100-80GB, NVLink), batch 1
//   BM_ZooPlace/<model>/<algo> Place(): the algorithm + simulation + bound
//   BM_Synthetic<Algo>/N/D     the algorithm on a layered DAG of N ops, D GPUs
//   BM_Simulate/N/D            one simulation of an m-topo plan
//   BM_SolverChild/<model>     what a solve in a child process costs beyond
//                              the solve (RunIsolated of nothing, with the
//                              zoo loaded): compare with BM_Zoo/<model>_ilp
// Baechi's Python figures these are compared with are in the issue text.
#include <benchmark/benchmark.h>

#include <map>
#include <string>

#include "bench/common/synthetic_problem.h"
#include "common/isolated.h"
#include "placer/core/algorithms_internal.h"
#include "placer/core/place.h"
#include "tests/testlib/repo_paths.h"

namespace tessera::placer {
namespace {

struct ZooCase {
  Problem problem;
  Cluster cluster;
};

const ZooCase& Zoo(const std::string& name) {
  static std::map<std::string, ZooCase> cache;
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  graph::LoadOptions load;
  load.batch = 1;
  auto model = graph::LoadModel(
      std::string(TESSERA_SOURCE_DIR) + "/models/zoo/" + name + ".onnx", load);
  const auto catalog = estimator::DeviceCatalog::BuiltIn();
  Cluster cluster = DefaultCluster(catalog, {});
  auto problem = BuildProblem(*model, cluster, {});
  return cache.emplace(name, ZooCase{std::move(problem).value(), cluster})
      .first->second;
}

Budget Usable(const Cluster& c) {
  Budget b;
  for (const ClusterDevice& d : c.devices) b.push_back(d.memory_usable);
  return b;
}

using AlgoFn = Result<AlgoOutput> (*)(const Problem&, const Cluster&,
                                      const Budget&, const PlaceOptions&);

AlgoFn Fn(Algorithm a) {
  switch (a) {
    case Algorithm::kMTopo:
      return PlaceMTopo;
    case Algorithm::kMEtf:
      return PlaceMEtf;
    case Algorithm::kMSct:
      return PlaceMSct;
    case Algorithm::kPipeline:
      return PlacePipeline;
    case Algorithm::kIlp:
      return PlaceIlp;
    default:
      return PlaceSingle;
  }
}

void RunAlgo(benchmark::State& state, const Problem& p, const Cluster& c,
             Algorithm a) {
  const Budget budget = Usable(c);
  const PlaceOptions options;
  for (auto _ : state) {
    auto out = Fn(a)(p, c, budget, options);
    if (!out) {
      state.SkipWithError(out.error().message.c_str());
      return;
    }
    benchmark::DoNotOptimize(out->placement.device.data());
  }
  state.counters["ops"] = static_cast<double>(p.num_ops());
}

void BM_Zoo(benchmark::State& state, const char* model, Algorithm a) {
  const ZooCase& z = Zoo(model);
  RunAlgo(state, z.problem, z.cluster, a);
}

void BM_ZooPlace(benchmark::State& state, const char* model, Algorithm a) {
  const ZooCase& z = Zoo(model);
  for (auto _ : state) {
    auto plan = Place(z.problem, z.cluster, a, {});
    if (!plan) {
      state.SkipWithError(plan.error().message.c_str());
      return;
    }
    state.counters["step_ms"] = plan->sim.step_s * 1e3;
  }
}

// The fork, the pipe and the wait of Mip::Solve, without CBC: the cost of
// running a solver where it cannot crash tessera.
void BM_SolverChild(benchmark::State& state, const char* model) {
  (void)Zoo(model);  // the process as large as when it places `model`
  for (auto _ : state) {
    Result<std::string> r =
        RunIsolated([] { return std::string(64, 'x'); }, {}, "nothing");
    if (!r) {
      state.SkipWithError(r.error().message.c_str());
      return;
    }
    benchmark::DoNotOptimize(r->size());
  }
}

#define TESSERA_ZOO(model)                                                  \
  BENCHMARK_CAPTURE(BM_Zoo, model##_m_topo, #model, Algorithm::kMTopo)      \
      ->Unit(benchmark::kMicrosecond);                                      \
  BENCHMARK_CAPTURE(BM_Zoo, model##_m_etf, #model, Algorithm::kMEtf)        \
      ->Unit(benchmark::kMicrosecond);                                      \
  BENCHMARK_CAPTURE(BM_Zoo, model##_m_sct, #model, Algorithm::kMSct)        \
      ->Unit(benchmark::kMicrosecond);                                      \
  BENCHMARK_CAPTURE(BM_Zoo, model##_pipeline, #model, Algorithm::kPipeline) \
      ->Unit(benchmark::kMicrosecond);                                      \
  BENCHMARK_CAPTURE(BM_Zoo, model##_ilp, #model, Algorithm::kIlp)           \
      ->Unit(benchmark::kMillisecond);                                      \
  BENCHMARK_CAPTURE(BM_SolverChild, model, #model)                          \
      ->Unit(benchmark::kMicrosecond);                                      \
  BENCHMARK_CAPTURE(BM_ZooPlace, model##_auto, #model, Algorithm::kAuto)    \
      ->Unit(benchmark::kMillisecond);

TESSERA_ZOO(inception_v3)
TESSERA_ZOO(vit_b_16)
TESSERA_ZOO(resnet50)

void BM_Synthetic(benchmark::State& state, Algorithm a) {
  const int64_t n = state.range(0);
  const int d = static_cast<int>(state.range(1));
  const Problem p = bench::LayeredProblem(n, d);
  const Cluster c = bench::NvlinkCluster(d, 2 * bench::TotalBytes(p) / d);
  RunAlgo(state, p, c, a);
  state.SetItemsProcessed(state.iterations() * n);
}

void SyntheticSizes(benchmark::internal::Benchmark* b, int64_t max_n) {
  for (int64_t n = 1000; n <= max_n; n *= 10) {
    for (int d : {4, 8}) b->Args({n, d});
  }
  b->Unit(benchmark::kMillisecond);
}

BENCHMARK_CAPTURE(BM_Synthetic, m_topo, Algorithm::kMTopo)->Apply([](auto* b) {
  SyntheticSizes(b, 1000000);
});
BENCHMARK_CAPTURE(BM_Synthetic, m_etf, Algorithm::kMEtf)->Apply([](auto* b) {
  SyntheticSizes(b, 1000000);
});
BENCHMARK_CAPTURE(BM_Synthetic, m_sct, Algorithm::kMSct)->Apply([](auto* b) {
  SyntheticSizes(b, 100000);
});
BENCHMARK_CAPTURE(BM_Synthetic, pipeline, Algorithm::kPipeline)
    ->Apply([](auto* b) { SyntheticSizes(b, 1000000); });

void BM_Simulate(benchmark::State& state) {
  const int64_t n = state.range(0);
  const int d = static_cast<int>(state.range(1));
  const Problem p = bench::LayeredProblem(n, d);
  const Cluster c = bench::NvlinkCluster(d, 2 * bench::TotalBytes(p) / d);
  auto out = PlaceMTopo(p, c, Usable(c), {});
  if (!out) {
    state.SkipWithError(out.error().message.c_str());
    return;
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(Simulate(p, c, out->placement).step_s);
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_Simulate)
    ->Args({1000, 4})
    ->Args({100000, 8})
    ->Args({1000000, 8})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tessera::placer
