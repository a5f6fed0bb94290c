// BuildProblem: an ONNX model as a placement problem (names, roles, times
// per device kind, training) and ProblemBuilder's checks.

#include "placer/core/problem.h"

#include <gtest/gtest.h>

#include <numeric>

#include "estimator/estimator.h"
#include "tests/placer/test_problems.h"
#include "tests/testlib/onnx_model_builder.h"
#include "tests/testlib/repo_paths.h"

namespace tessera::placer {
namespace {

using testlib::kFloat;

graph::Model Load(const std::string& path, std::optional<int64_t> batch = 1) {
  graph::LoadOptions o;
  o.batch = batch;
  auto m = graph::LoadModel(path, o);
  EXPECT_TRUE(m) << m.error().message;
  return std::move(m).value();
}

Cluster TwoKinds() {
  const auto catalog = estimator::DeviceCatalog::BuiltIn();
  Cluster c = testing::UniformCluster(2, int64_t{16} << 30);
  c.devices[0].spec = *catalog.Find("a100-80gb");
  c.devices[1].spec = *catalog.Find("v100-32gb");
  return c;
}

TEST(BuildProblemTest, OneOpPerNodeWithTimesPerDeviceKind) {
  testlib::TempDir dir;
  const std::string path = testlib::SmallCnn().WriteTo(dir.File("cnn.onnx"));
  const graph::Model model = Load(path);
  const Cluster c = TwoKinds();
  auto p = BuildProblem(model, c, {});
  ASSERT_TRUE(p) << p.error().message;
  ASSERT_EQ(p->num_ops(), 4u);
  EXPECT_EQ(p->num_profiles, 2);
  EXPECT_EQ(p->device_profile, (std::vector<int>{0, 1}));
  EXPECT_EQ(p->names[0], "conv");
  EXPECT_EQ(p->op_types[3], "Gemm");
  // The A100 is faster than the V100 on the convolution.
  EXPECT_LT(p->Forward(0, 0, 1.0), p->Forward(0, 1, 1.0));
  EXPECT_TRUE(p->backward_s.empty());
  // Roles: x is an input, w a weight (4x3x3x3 fp32), logits an output.
  int weights = 0, inputs = 0, outputs = 0;
  for (const ProblemTensor& t : p->tensors) {
    weights += t.role == TensorRole::kWeight;
    inputs += t.role == TensorRole::kInput;
    outputs += t.output;
    if (t.name == "w") {
      EXPECT_EQ(t.bytes, 4 * 3 * 3 * 3 * 4);
    }
    if (t.name == "conv_out") {
      EXPECT_EQ(t.bytes, 4 * 8 * 8 * 4);
    }
  }
  EXPECT_EQ(weights, 4);
  EXPECT_EQ(inputs, 1);
  EXPECT_EQ(outputs, 1);
  EXPECT_EQ(p->topo, (std::vector<OpId>{0, 1, 2, 3}));
}

TEST(BuildProblemTest, TrainingAddsBackwardAndOptimizerState) {
  testlib::TempDir dir;
  const std::string path = testlib::SmallCnn().WriteTo(dir.File("cnn.onnx"));
  const graph::Model model = Load(path);
  ProblemOptions o;
  o.training = true;
  auto p = BuildProblem(model, TwoKinds(), o);
  ASSERT_TRUE(p) << p.error().message;
  ASSERT_EQ(p->backward_s.size(), p->forward_s.size());
  // Convolution backward is twice its forward; Relu's once.
  EXPECT_DOUBLE_EQ(p->backward_s[0], 2 * p->forward_s[0]);
  EXPECT_DOUBLE_EQ(p->backward_s[2], p->forward_s[2]);
  // Adam in fp32: weight + gradient + two moments.
  EXPECT_DOUBLE_EQ(p->weight_state_factor, 4.0);
}

TEST(BuildProblemTest, UnnamedNodesGetStableUniqueNames) {
  testlib::OnnxModelBuilder m("names");
  m.AddInput("x", kFloat, std::vector<testlib::Dim>{2, 2});
  m.AddNode("Relu", {"x"}, {"a"});            // unnamed: Relu_0
  m.AddNode("Relu", {"a"}, {"b"}, "Relu_1");  // a real name
  m.AddNode("Relu", {"b"}, {"c"});            // unnamed #2: Relu_2
  m.AddNode("Relu", {"c"}, {"d"}, "dup");
  m.AddNode("Relu", {"d"}, {"e"});            // unnamed #4: Relu_4
  m.AddNode("Relu", {"e"}, {"f"}, "Relu_4");  // real name, taken first
  m.AddOutput("f");
  testlib::TempDir dir;
  const graph::Model model = Load(m.WriteTo(dir.File("n.onnx")), std::nullopt);
  auto p = BuildProblem(model, testing::UniformCluster(1, 1 << 30), {});
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(p->names, (std::vector<std::string>{"Relu_0", "Relu_1", "Relu_2",
                                                "dup", "Relu_4_1", "Relu_4"}));
}

TEST(BuildProblemTest, UnboundInputIsBadInput) {
  testlib::TempDir dir;
  const std::string path = testlib::SmallCnn().WriteTo(dir.File("cnn.onnx"));
  const graph::Model model = Load(path, std::nullopt);
  auto p = BuildProblem(model, TwoKinds(), {});
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().code, ErrorCode::kBadInput);
  EXPECT_NE(p.error().message.find("--batch"), std::string::npos);
}

TEST(BuildProblemTest, ZooModelKeepsEveryNodeAndItsWeights) {
  const graph::Model model =
      Load(std::string(TESSERA_SOURCE_DIR) + "/models/zoo/resnet50.onnx");
  Cluster c = testing::UniformCluster(4, int64_t{80} << 30);
  for (ClusterDevice& d : c.devices) {
    d.spec = *estimator::DeviceCatalog::BuiltIn().Find("a100-80gb");
  }
  auto p = BuildProblem(model, c, {});
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(p->num_ops(), model.graph->num_nodes());
  int64_t weight_bytes = 0;
  for (const ProblemTensor& t : p->tensors) {
    if (t.role == TensorRole::kWeight) weight_bytes += t.bytes;
  }
  EXPECT_EQ(weight_bytes, model.weights.bytes);
  const double total =
      std::accumulate(p->forward_s.begin(), p->forward_s.end(), 0.0);
  EXPECT_GT(total, 0.0);
  EXPECT_EQ(p->num_profiles, 1);
}

TEST(ProblemBuilderTest, RejectsTensorsProducedTwiceAndSelfLoops) {
  {
    ProblemBuilder b(1, {0}, false);
    const uint32_t t = b.AddTensor("t", 1, TensorRole::kActivation);
    const double f[] = {1.0};
    const uint32_t out[] = {t};
    b.AddOp("a", "Op", f, {}, {}, out);
    b.AddOp("b", "Op", f, {}, {}, out);
    auto p = std::move(b).Build();
    ASSERT_FALSE(p);
    EXPECT_NE(p.error().message.find("produced twice"), std::string::npos);
  }
  {
    ProblemBuilder b(1, {0}, false);
    const uint32_t t = b.AddTensor("t", 1, TensorRole::kActivation);
    const double f[] = {1.0};
    const uint32_t io[] = {t};
    b.AddOp("a", "Op", f, {}, io, io);
    auto p = std::move(b).Build();
    ASSERT_FALSE(p);
    EXPECT_NE(p.error().message.find("its own output"), std::string::npos);
  }
}

TEST(ProblemBuilderTest, TopologicalOrderOnRandomDags) {
  for (uint64_t seed = 0; seed < 20; ++seed) {
    testing::RandomDagOptions o;
    o.ops = 60;
    const Problem p = testing::RandomProblem(seed, o);
    ASSERT_EQ(p.topo.size(), p.num_ops());
    std::vector<size_t> pos(p.num_ops());
    for (size_t i = 0; i < p.topo.size(); ++i) pos[p.topo[i]] = i;
    for (OpId op = 0; op < p.num_ops(); ++op) {
      for (uint32_t s : p.successors(op)) EXPECT_LT(pos[op], pos[s]);
    }
  }
}

}  // namespace
}  // namespace tessera::placer
