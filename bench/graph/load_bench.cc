// Scenarios: how fast graph/ turns models into OpGraphs, and how compact the
// result is (DESIGN: "scales to 10^6 operators").
//   BM_BuildOpGraph/N   OpGraphBuilder on a synthetic residual network of N
//                       nodes; counter bytes_per_node = heap growth / N.
//   BM_LoadSynthetic/N  LoadModel end to end (parse, shape inference,
//                       conversion) of a synthetic ONNX file of N nodes.
//   BM_LoadZoo/<model>  LoadModel on the bundled model zoo.
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <onnx/onnx_pb.h>
#include <filesystem>
#include <fstream>

#include "bench/common/synthetic_graph.h"
#include "graph/builder.h"
#include "graph/graph.h"
#include "tests/testlib/repo_paths.h"

namespace tessera::graph {
namespace {

void BM_BuildOpGraph(benchmark::State& state) {
  const int64_t n = state.range(0);
  size_t bytes = 0;
  for (auto _ : state) {
    const size_t before = mallinfo2().uordblks;
    auto g = bench::BuildResidualChain(n);
    bytes = mallinfo2().uordblks - before;
    benchmark::DoNotOptimize(g.get());
  }
  state.counters["bytes_per_node"] = static_cast<double>(bytes) / n;
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_BuildOpGraph)
    ->Arg(1000)
    ->Arg(100000)
    ->Arg(1000000)
    ->Unit(benchmark::kMillisecond);

std::string WriteSyntheticOnnx(int64_t n) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("tessera_bench_" + std::to_string(n) + ".onnx"))
                               .string();
  if (std::filesystem::exists(path)) return path;
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("synthetic");
  auto* in = g->add_input();
  in->set_name("x");
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  tt->mutable_shape()->add_dim()->set_dim_param("batch");
  tt->mutable_shape()->add_dim()->set_dim_value(1024);
  std::string prev = "x", skip = "x";
  for (int64_t i = 0; i < n; ++i) {
    auto* node = g->add_node();
    const std::string out = "t" + std::to_string(i);
    node->set_op_type(i % 2 ? "Add" : "Relu");
    node->set_name((i % 2 ? "add" : "relu") + std::to_string(i));
    node->add_input(prev);
    if (i % 2) node->add_input(skip);
    node->add_output(out);
    if (i % 2) skip = out;
    prev = out;
  }
  auto* out = g->add_output();
  out->set_name(prev);
  out->mutable_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::FLOAT);
  std::ofstream f(path, std::ios::binary);
  m.SerializeToOstream(&f);
  return path;
}

void BM_LoadSynthetic(benchmark::State& state) {
  const std::string path = WriteSyntheticOnnx(state.range(0));
  LoadOptions options;
  options.batch = 8;
  for (auto _ : state) {
    auto model = LoadModel(path, options);
    if (!model || !model->unknown_shapes.empty()) {
      state.SkipWithError("synthetic model did not load fully");
      return;
    }
    benchmark::DoNotOptimize(model->graph.get());
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_LoadSynthetic)
    ->Arg(1000)
    ->Arg(100000)
    ->Arg(1000000)
    ->Unit(benchmark::kMillisecond);

void BM_LoadZoo(benchmark::State& state, const char* name) {
  const std::string path =
      std::string(TESSERA_SOURCE_DIR) + "/models/zoo/" + name + ".onnx";
  for (auto _ : state) {
    auto model = LoadModel(path, {});
    if (!model) {
      state.SkipWithError(model.error().message.c_str());
      return;
    }
    benchmark::DoNotOptimize(model->graph.get());
  }
}
BENCHMARK_CAPTURE(BM_LoadZoo, resnet50, "resnet50")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_LoadZoo, bert_base, "bert_base")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_LoadZoo, gpt2, "gpt2")->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tessera::graph

BENCHMARK_MAIN();
