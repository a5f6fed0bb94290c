// No-op nodes are free (graph/noop.h): a model exported with Identity nodes
// behind merged weights (models/archs/plain/, as a user's freshly
// initialised model comes out of torch.onnx.export) is priced exactly as
// the same architecture exported with distinct weights (models/archs/), by
// the operator roofline and by the PyTorch runtime model, in inference and
// training, fp32 and bf16; and an inference-form Dropout or a Cast to the
// type a tensor already has costs what its absence costs.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "estimator/device_catalog.h"
#include "estimator/profile.h"
#include "graph/builder.h"
#include "graph/graph.h"
#include "graph/noop.h"
#include "tests/testlib/repo_paths.h"

namespace tessera::estimator {
namespace {

const DeviceSpec& H100() {
  static const DeviceCatalog catalog = DeviceCatalog::BuiltIn();
  return *catalog.Find("h100-sxm");
}

graph::Model LoadArch(const std::string& file, int batch) {
  graph::LoadOptions o;
  o.batch = batch;
  auto m = graph::LoadModel(
      std::string(TESSERA_SOURCE_DIR) + "/models/archs/" + file, o);
  EXPECT_TRUE(m.has_value()) << (m ? "" : m.error().message);
  return std::move(m).value();
}

// Identity nodes that read an initializer: what the exporter writes for a
// weight equal to an earlier one.
int CountIdentityOfWeight(const graph::OpGraph& g) {
  int n = 0;
  for (graph::NodeId i = 0; i < g.num_nodes(); ++i) {
    const graph::NodeView v = g.node(i);
    n += v.op_type == "Identity" && !v.inputs.empty() &&
         g.tensor(v.inputs[0]).kind == graph::TensorKind::kInitializer;
  }
  return n;
}

struct Setting {
  Runtime runtime;
  bool training;
  Amp amp;
};

Profile ProfileOf(const graph::Model& m, const Setting& s) {
  ProfileOptions o;
  o.training = s.training;
  o.runtime.runtime = s.runtime;
  o.runtime.amp = s.amp;
  auto p = ProfileModel(m, H100(), o);
  EXPECT_TRUE(p.has_value()) << (p ? "" : p.error().message);
  return std::move(p).value();
}

class PlainExport : public ::testing::TestWithParam<std::string> {};

TEST_P(PlainExport, CostsWhatTheExportWithDistinctWeightsCosts) {
  const std::string name = GetParam();
  for (const int batch : {1, 8}) {
    const graph::Model plain = LoadArch("plain/" + name + ".onnx", batch);
    const graph::Model noised = LoadArch(name + ".onnx", batch);
    // The plain export really carries merged weights behind Identity nodes,
    // and the noised one none: otherwise this test proves nothing.
    ASSERT_GT(CountIdentityOfWeight(*plain.graph), 5) << name;
    ASSERT_EQ(CountIdentityOfWeight(*noised.graph), 0) << name;
    for (graph::NodeId n = 0; n < plain.graph->num_nodes(); ++n) {
      const graph::NodeView v = plain.graph->node(n);
      if (v.op_type == "Identity" && plain.graph->tensor(v.inputs[0]).kind ==
                                         graph::TensorKind::kInitializer) {
        EXPECT_TRUE(graph::IsWeightAlias(*plain.graph, n)) << v.name;
      }
    }
    EXPECT_EQ(plain.weights.tensors, noised.weights.tensors) << name;
    EXPECT_EQ(plain.weights.bytes, noised.weights.bytes) << name;
    for (const Setting s : {Setting{Runtime::kRoofline, false, Amp::kNone},
                            Setting{Runtime::kRoofline, true, Amp::kNone},
                            Setting{Runtime::kPyTorch, false, Amp::kNone},
                            Setting{Runtime::kPyTorch, true, Amp::kNone},
                            Setting{Runtime::kPyTorch, false, Amp::kBf16},
                            Setting{Runtime::kPyTorch, true, Amp::kBf16}}) {
      const std::string what = name + " batch " + std::to_string(batch) + " " +
                               std::string(RuntimeName(s.runtime)) +
                               (s.training ? " training " : " inference ") +
                               std::string(AmpName(s.amp));
      const Profile a = ProfileOf(plain, s), b = ProfileOf(noised, s);
      EXPECT_NEAR(a.seconds, b.seconds, 1e-9 * b.seconds) << what;
      EXPECT_EQ(a.memory.total(), b.memory.total()) << what;
      EXPECT_EQ(a.reserve_bytes(), b.reserve_bytes()) << what;
      if (a.runtime && b.runtime) {
        EXPECT_EQ(a.runtime->dispatched_ops, b.runtime->dispatched_ops) << what;
        EXPECT_EQ(a.runtime->kernels, b.runtime->kernels) << what;
        EXPECT_EQ(a.runtime->live_peak_bytes, b.runtime->live_peak_bytes)
            << what;
        EXPECT_EQ(a.runtime->reserved_peak_bytes,
                  b.runtime->reserved_peak_bytes)
            << what;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Archs, PlainExport,
                         ::testing::Values("resnet18", "mobilenet_v3_large",
                                           "bert_small"));

// x -> Conv(w) -> [no-op] -> Relu -> y, with the no-op given by `op`
// ("" for none): "Dropout", "Identity" or "Cast" (to float, x's type).
graph::Model ConvRelu(const std::string& op) {
  using graph::DataType;
  using graph::TensorKind;
  graph::OpGraphBuilder b("g");
  const int64_t xd[] = {8, 64, 56, 56}, wd[] = {64, 64, 3, 3};
  const auto x = b.AddTensor("x", DataType::kFloat32, xd, TensorKind::kInput);
  const auto w =
      b.AddTensor("w", DataType::kFloat32, wd, TensorKind::kInitializer);
  const auto c =
      b.AddTensor("c", DataType::kFloat32, xd, TensorKind::kActivation);
  const auto y =
      b.AddTensor("y", DataType::kFloat32, xd, TensorKind::kActivation);
  const graph::TensorId conv_in[] = {x, w}, conv_out[] = {c};
  b.AddNode("conv", "Conv", "", conv_in, conv_out);
  b.AddInts("pads", std::vector<int64_t>{1, 1, 1, 1});
  b.AddInts("kernel_shape", std::vector<int64_t>{3, 3});
  graph::TensorId relu_in = c;
  if (!op.empty()) {
    const auto d =
        b.AddTensor("d", DataType::kFloat32, xd, TensorKind::kActivation);
    const graph::TensorId in[] = {c}, out[] = {d};
    b.AddNode("noop", op, "", in, out);
    if (op == "Cast") b.AddInt("to", 1);  // FLOAT: what c already is
    relu_in = d;
  }
  const graph::TensorId in[] = {relu_in}, out[] = {y};
  b.AddNode("relu", "Relu", "", in, out);
  b.MarkInput(x);
  b.MarkOutput(y);
  auto g = std::move(b).Build();
  EXPECT_TRUE(g.has_value()) << (g ? "" : g.error().message);
  graph::Model m;
  m.graph = std::move(g).value();
  m.weights = {1, 64 * 64 * 9, 4 * 64 * 64 * 9};
  return m;
}

TEST(NoOpNodes, DropoutIdentityAndSameTypeCastCostNothing) {
  const graph::Model bare = ConvRelu("");
  for (const std::string op : {"Dropout", "Identity", "Cast"}) {
    const graph::Model with = ConvRelu(op);
    ASSERT_TRUE(graph::IsNoOp(*with.graph, 1)) << op;
    for (const Setting s : {Setting{Runtime::kRoofline, false, Amp::kNone},
                            Setting{Runtime::kRoofline, true, Amp::kNone},
                            Setting{Runtime::kPyTorch, false, Amp::kNone},
                            Setting{Runtime::kPyTorch, true, Amp::kNone},
                            Setting{Runtime::kPyTorch, true, Amp::kBf16}}) {
      const Profile a = ProfileOf(with, s), b = ProfileOf(bare, s);
      EXPECT_NEAR(a.seconds, b.seconds, 1e-12) << op;
      EXPECT_EQ(a.memory.total(), b.memory.total()) << op;
      if (a.runtime) {
        EXPECT_EQ(a.runtime->live_peak_bytes, b.runtime->live_peak_bytes) << op;
        EXPECT_EQ(a.runtime->dispatched_ops, b.runtime->dispatched_ops) << op;
      }
    }
  }
}

TEST(NoOpNodes, ACastToAnotherTypeOrATrainingDropoutIsWork) {
  using graph::DataType;
  using graph::TensorKind;
  graph::OpGraphBuilder b("g");
  const int64_t d[] = {1024, 1024};
  const auto x = b.AddTensor("x", DataType::kFloat32, d, TensorKind::kInput);
  const auto h =
      b.AddTensor("h", DataType::kFloat16, d, TensorKind::kActivation);
  const auto r =
      b.AddTensor("r", DataType::kFloat32, d, TensorKind::kActivation);
  const auto mode =
      b.AddTensor("mode", DataType::kBool, {}, TensorKind::kInitializer);
  const auto ratio =
      b.AddTensor("ratio", DataType::kFloat32, {}, TensorKind::kInitializer);
  const auto y =
      b.AddTensor("y", DataType::kFloat32, d, TensorKind::kActivation);
  const graph::TensorId c_in[] = {x}, c_out[] = {h};
  b.AddNode("cast", "Cast", "", c_in, c_out);
  b.AddInt("to", 10);  // FLOAT16
  const graph::TensorId c2_out[] = {r}, c2_in[] = {h};
  b.AddNode("back", "Cast", "", c2_in, c2_out);
  b.AddInt("to", 1);
  const graph::TensorId d_in[] = {r, ratio, mode}, d_out[] = {y};
  b.AddNode("drop", "Dropout", "", d_in, d_out);
  b.MarkInput(x);
  b.MarkOutput(y);
  auto g = std::move(b).Build();
  ASSERT_TRUE(g.has_value());
  for (graph::NodeId n = 0; n < 3; ++n) EXPECT_FALSE(graph::IsNoOp(**g, n));
}

}  // namespace
}  // namespace tessera::estimator
