// Scenarios: how long the estimator takes (issue target: under 1 s for 10^6
// operators on the 2-core build machine).
//   BM_CostAll/N        per-operator costs of a synthetic N-node graph
//   BM_Profile/N        CostAll + time model + memory model (ProfileModel)
//   BM_ProfileZoo/<m>   ProfileModel on a zoo model at batch 8, training
#include <benchmark/benchmark.h>

#include "bench/common/synthetic_graph.h"
#include "estimator/estimator.h"
#include "tests/testlib/repo_paths.h"

namespace tessera::estimator {
namespace {

void BM_CostAll(benchmark::State& state) {
  const auto g = bench::BuildResidualChain(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(CostAll(*g));
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_CostAll)->Arg(1000)->Arg(1000000)->Unit(benchmark::kMillisecond);

const DeviceSpec& A100() {
  static const DeviceCatalog catalog = DeviceCatalog::BuiltIn();
  return *catalog.Find("a100-80gb");
}

void BM_Profile(benchmark::State& state) {
  graph::Model model;
  model.graph = bench::BuildResidualChain(state.range(0));
  for (auto _ : state) {
    auto p = ProfileModel(model, A100(), {});
    if (!p) {
      state.SkipWithError(p.error().message.c_str());
      return;
    }
    benchmark::DoNotOptimize(p->seconds);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_Profile)->Arg(1000)->Arg(1000000)->Unit(benchmark::kMillisecond);

void BM_ProfileZoo(benchmark::State& state, const char* name) {
  graph::LoadOptions load;
  load.batch = 8;
  auto model = graph::LoadModel(
      std::string(TESSERA_SOURCE_DIR) + "/models/zoo/" + name + ".onnx", load);
  if (!model) {
    state.SkipWithError(model.error().message.c_str());
    return;
  }
  ProfileOptions options;
  options.training = true;
  for (auto _ : state) {
    auto p = ProfileModel(*model, A100(), options);
    benchmark::DoNotOptimize(p->seconds);
  }
}
BENCHMARK_CAPTURE(BM_ProfileZoo, resnet50, "resnet50")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ProfileZoo, gpt2, "gpt2")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ProfileZoo, bert_base, "bert_base")
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tessera::estimator

BENCHMARK_MAIN();
