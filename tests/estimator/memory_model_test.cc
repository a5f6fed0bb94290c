// Memory model: the inference peak over a topological execution (views alias
// their input), training state per optimizer, and the headroom.
#include "estimator/memory_model.h"

#include <gtest/gtest.h>

#include "graph/builder.h"

namespace tessera::estimator {
namespace {

using graph::DataType;
using graph::OpGraphBuilder;
using graph::TensorId;
using graph::TensorKind;

// x -> Relu a -> Reshape v -> Relu b -> Relu y, each [256] float32 (1 KiB).
std::unique_ptr<graph::OpGraph> Chain() {
  OpGraphBuilder b("chain");
  const int64_t dims[] = {256};
  auto t = [&](const char* name, TensorKind kind) {
    return b.AddTensor(name, DataType::kFloat32, dims, kind);
  };
  const TensorId x = t("x", TensorKind::kInput);
  const TensorId shape =
      b.AddTensor("shape", DataType::kInt64, std::span<const int64_t>(dims, 0),
                  TensorKind::kInitializer);
  const TensorId a = t("a", TensorKind::kActivation);
  const TensorId v = t("v", TensorKind::kActivation);
  const TensorId bb = t("b", TensorKind::kActivation);
  const TensorId y = t("y", TensorKind::kActivation);
  b.MarkInput(x);
  const TensorId in_x[] = {x}, out_a[] = {a};
  const TensorId in_v[] = {a, shape}, out_v[] = {v};
  const TensorId in_b[] = {v}, out_b[] = {bb};
  const TensorId in_y[] = {bb}, out_y[] = {y};
  b.AddNode("relu_a", "Relu", "", in_x, out_a);
  b.AddNode("view", "Reshape", "", in_v, out_v);
  b.AddNode("relu_b", "Relu", "", in_b, out_b);
  b.AddNode("relu_y", "Relu", "", in_y, out_y);
  b.MarkOutput(y);
  return std::move(b).Build().value();
}

TEST(EstimateMemory, InferencePeakFreesAfterLastUseAndViewsAlias) {
  auto g = Chain();
  const auto costs = CostAll(*g);
  const graph::WeightStats w{1, 8, 8};
  const MemoryEstimate m = EstimateMemory(*g, costs, w, {});
  // At relu_a: x and a live (2 KiB); the view adds nothing; at relu_b: a (via
  // the view) and b; x was freed after relu_a. Peak 2 KiB, first at relu_a.
  EXPECT_EQ(m.activations, 2048);
  EXPECT_EQ(m.weights, 8);
  EXPECT_EQ(m.gradients, 0);
  EXPECT_EQ(m.optimizer_state, 0);
  EXPECT_EQ(g->node(m.peak_at).name, "relu_a");
  EXPECT_EQ(m.total(), 2048 + 8);
}

TEST(EstimateMemory, TrainingKeepsActivationsAndAddsOptimizerState) {
  auto g = Chain();
  const auto costs = CostAll(*g);
  const graph::WeightStats fp32{2, 1000, 4000};
  MemoryOptions adam{true, Optimizer::kAdam};
  const MemoryEstimate m = EstimateMemory(*g, costs, fp32, adam);
  // Kept: x, a, b, y (the view keeps nothing new) + the largest gradient.
  EXPECT_EQ(m.activations, 4 * 1024 + 1024);
  EXPECT_EQ(m.gradients, 4000);
  EXPECT_EQ(m.optimizer_state, 8000);  // two fp32 moments per element
  const graph::WeightStats bf16{2, 1000, 2000};
  const MemoryEstimate mixed = EstimateMemory(*g, costs, bf16, adam);
  EXPECT_EQ(mixed.gradients, 2000);
  EXPECT_EQ(mixed.optimizer_state, 8000 + 4000);  // + fp32 master weights
  MemoryOptions momentum{true, Optimizer::kSgdMomentum};
  EXPECT_EQ(EstimateMemory(*g, costs, fp32, momentum).optimizer_state, 4000);
  MemoryOptions sgd{true, Optimizer::kSgd};
  EXPECT_EQ(EstimateMemory(*g, costs, fp32, sgd).optimizer_state, 0);
}

TEST(ParseOptimizer, KnowsTheFourAndRejectsOthers) {
  EXPECT_EQ(*ParseOptimizer("adam"), Optimizer::kAdam);
  EXPECT_EQ(*ParseOptimizer("sgd-momentum"), Optimizer::kSgdMomentum);
  EXPECT_EQ(OptimizerName(*ParseOptimizer("none")), "none");
  auto bad = ParseOptimizer("lamb");
  ASSERT_FALSE(bad);
  // The field it fills (ProfileOptions::optimizer), not a command's flag.
  EXPECT_EQ(bad.error().message,
            "optimizer 'lamb': expected adam, sgd, sgd-momentum or none");
}

TEST(HeadroomBytes, IsContextPlusFragmentation) {
  EXPECT_EQ(HeadroomBytes(1000, 0.5), kCudaContextBytes + 500);
  EXPECT_EQ(HeadroomBytes(0, kDefaultFragmentation), kCudaContextBytes);
}

}  // namespace
}  // namespace tessera::estimator
