// Scenarios: how fast a plan becomes runnable parts (issue target: a
// 1,000-operator model into 4 parts well under a second, weight copying
// excluded). Weights are external data here, as in large models, so no
// weight bytes are copied; the data file is absent, as for the zoo.
//   BM_Partition/N/K   PartitionGraph: N ops, K devices in contiguous
//                      ranges (K parts)
//   BM_BuildParts/N/K  partition + BuildPart + ONNX's checker, in memory
//   BM_SplitModel/N/K  SplitModel end to end: also serializes and writes the
//                      parts, manifest.json and device_map.json
//   BM_SplitRandom/N/K SplitModel under a random plan (device cycles: many
//                      more parts than devices)
//   BM_SplitZoo/<model> SplitModel of a zoo model, 4 contiguous ranges
#include <benchmark/benchmark.h>

#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "split/split.h"
#include "tests/testlib/repo_paths.h"

namespace tessera::split {
namespace {

namespace fs = std::filesystem;

// Blocks of MatMul(W) -> Add(b) -> Relu -> Add(residual), n ops in all,
// [batch, 256] float32 activations, 256x256 weights as external data.
std::string WriteModel(int64_t n) {
  const fs::path dir = fs::temp_directory_path() / "tessera_split_bench";
  fs::create_directories(dir);
  const std::string path = (dir / ("blocks_" + std::to_string(n) + ".onnx"));
  if (fs::exists(path)) return path;
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("blocks");
  auto add_value = [](onnx::ValueInfoProto* v, const std::string& name) {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    t->mutable_shape()->add_dim()->set_dim_param("batch");
    t->mutable_shape()->add_dim()->set_dim_value(256);
  };
  add_value(g->add_input(), "x");
  auto add_weight = [&](const std::string& name, std::vector<int64_t> dims) {
    onnx::TensorProto* w = g->add_initializer();
    w->set_name(name);
    w->set_data_type(onnx::TensorProto::FLOAT);
    int64_t elements = 1;
    for (const int64_t d : dims) {
      w->add_dims(d);
      elements *= d;
    }
    w->set_data_location(onnx::TensorProto_DataLocation_EXTERNAL);
    for (const auto& [k, v] :
         {std::pair<std::string, std::string>{"location", "blocks.data"},
          {"length", std::to_string(elements * 4)}}) {
      auto* e = w->add_external_data();
      e->set_key(k);
      e->set_value(v);
    }
  };
  std::string prev = "x", residual = "x";
  for (int64_t i = 0; i < n; ++i) {
    const int64_t block = i / 4;
    const std::string b = "/blocks.b" + std::to_string(block);
    const std::string out = "t" + std::to_string(i);
    onnx::NodeProto* node = g->add_node();
    node->add_input(prev);
    switch (i % 4) {
      case 0:
        node->set_op_type("MatMul");
        node->set_name(b + "/fc/MatMul");
        node->add_input("w" + std::to_string(block));
        add_weight("w" + std::to_string(block), {256, 256});
        break;
      case 1:
        node->set_op_type("Add");
        node->set_name(b + "/fc/Add");
        node->add_input("b" + std::to_string(block));
        add_weight("b" + std::to_string(block), {256});
        break;
      case 2:
        node->set_op_type("Relu");
        node->set_name(b + "/act/Relu");
        break;
      default:
        node->set_op_type("Add");
        node->set_name(b + "/Add");
        node->add_input(residual);
        residual = out;
    }
    node->add_output(out);
    prev = out;
  }
  add_value(g->add_output(), prev);
  std::ofstream f(path, std::ios::binary);
  m.SerializeToOstream(&f);
  return path;
}

graph::Model Load(const std::string& path) {
  graph::LoadOptions options;
  options.keep_proto = true;
  options.batch = 8;
  auto model = graph::LoadModel(path, options);
  if (!model) throw std::runtime_error(model.error().message);
  return std::move(model).value();
}

// K devices over contiguous ranges of the topological order.
PlanAssignment RangePlan(const graph::Model& model, int k) {
  PlanAssignment plan;
  for (int d = 0; d < k; ++d) plan.devices.push_back("gpu" + std::to_string(d));
  const auto names = graph::UniqueNodeNames(*model.graph);
  const auto topo = model.graph->topological_order();
  for (size_t i = 0; i < topo.size(); ++i) {
    plan.placement.emplace_back(names[topo[i]],
                                static_cast<int>(i * k / topo.size()));
  }
  return plan;
}

PlanAssignment RandomPlan(const graph::Model& model, int k) {
  PlanAssignment plan = RangePlan(model, k);
  std::mt19937 rng(7);
  for (auto& [name, d] : plan.placement) d = static_cast<int>(rng() % k);
  return plan;
}

void BM_Partition(benchmark::State& state) {
  const graph::Model model = Load(WriteModel(state.range(0)));
  const PlanAssignment plan =
      RangePlan(model, static_cast<int>(state.range(1)));
  const auto names = graph::UniqueNodeNames(*model.graph);
  for (auto _ : state) {
    auto p = PartitionGraph(*model.graph, names, plan);
    benchmark::DoNotOptimize(p);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

void BM_BuildParts(benchmark::State& state) {
  const graph::Model model = Load(WriteModel(state.range(0)));
  const PlanAssignment plan =
      RangePlan(model, static_cast<int>(state.range(1)));
  const std::string dir = fs::temp_directory_path().string();
  for (auto _ : state) {
    auto p = PartitionGraph(*model.graph, graph::UniqueNodeNames(*model.graph),
                            plan);
    for (size_t i = 0; i < p->parts.size(); ++i) {
      auto part = BuildPart(model, *p, static_cast<int>(i), {dir, dir, {}});
      auto checked = CheckPart(*part, static_cast<int>(i), dir);
      benchmark::DoNotOptimize(checked);
    }
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

void SplitWith(benchmark::State& state, const graph::Model& model,
               const PlanAssignment& plan) {
  const fs::path out = fs::temp_directory_path() / "tessera_split_bench_out";
  SplitOptions options;
  options.out_dir = out.string();
  options.force = true;
  size_t parts = 0;
  for (auto _ : state) {
    auto r = SplitModel(model, plan, options);
    if (!r) {
      state.SkipWithError(r.error().message.c_str());
      break;
    }
    parts = r->partition.parts.size();
  }
  state.counters["parts"] = static_cast<double>(parts);
  fs::remove_all(out);
}

void BM_SplitModel(benchmark::State& state) {
  const graph::Model model = Load(WriteModel(state.range(0)));
  SplitWith(state, model, RangePlan(model, static_cast<int>(state.range(1))));
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

void BM_SplitRandom(benchmark::State& state) {
  const graph::Model model = Load(WriteModel(state.range(0)));
  SplitWith(state, model, RandomPlan(model, static_cast<int>(state.range(1))));
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

void BM_SplitZoo(benchmark::State& state, const std::string& name) {
  const graph::Model model =
      Load(std::string(TESSERA_SOURCE_DIR) + "/models/zoo/" + name + ".onnx");
  SplitWith(state, model, RangePlan(model, 4));
}

BENCHMARK(BM_Partition)
    ->Args({1000, 4})
    ->Args({10000, 4})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_BuildParts)
    ->Args({1000, 4})
    ->Args({10000, 4})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SplitModel)
    ->Args({1000, 4})
    ->Args({10000, 4})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SplitRandom)->Args({1000, 4})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SplitZoo, gpt2, std::string("gpt2"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SplitZoo, bert_base, std::string("bert_base"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SplitZoo, resnet50, std::string("resnet50"))
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tessera::split

BENCHMARK_MAIN();
