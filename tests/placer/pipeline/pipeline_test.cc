// PlacePipeline: contiguous stages along a topological order, balanced by
// dynamic programming under memory budgets.

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "placer/core/algorithms_internal.h"
#include "placer/core/ledger_internal.h"
#include "tests/placer/pipeline/pipeline_checks.h"
#include "tests/placer/test_problems.h"

namespace tessera::placer {
namespace {

using testing::Budgets;

// A chain of `n` ops of `seconds` each (one profile), each with a weight of
// `weight_bytes` and an output of `tensor_bytes`.
Problem Chain(int n, double seconds, int64_t tensor_bytes, int64_t weight_bytes,
              int devices, bool training = false) {
  ProblemBuilder b(1, std::vector<int>(devices, 0), training);
  uint32_t prev = b.AddTensor("x", tensor_bytes, TensorRole::kInput);
  const double f[] = {seconds};
  const double bw[] = {2 * seconds};
  for (int i = 0; i < n; ++i) {
    const uint32_t w =
        b.AddTensor("w" + std::to_string(i), weight_bytes, TensorRole::kWeight);
    const uint32_t out = b.AddTensor("t" + std::to_string(i), tensor_bytes,
                                     TensorRole::kActivation, i == n - 1);
    const uint32_t in[] = {prev, w}, outs[] = {out};
    b.AddOp("op" + std::to_string(i), "Op", f,
            training ? std::span<const double>(bw) : std::span<const double>(),
            in, outs);
    prev = out;
  }
  return std::move(b).Build().value();
}

std::vector<int> OpsPerDevice(const Placement& pl, size_t devices) {
  std::vector<int> count(devices, 0);
  for (uint16_t d : pl.device) count[d]++;
  return count;
}

// Every device holds one stage: along problem.topo for the block DP, an
// ideal minus an ideal for the exact split.
void ExpectContiguousStages(const Problem& p, const Placement& pl) {
  EXPECT_TRUE(testing::IsContiguousSplit(p, pl));
}

void ExpectWithinBudget(const Problem& p, const Placement& pl,
                        const Budget& budget) {
  EXPECT_TRUE(testing::FitsLedger(p, pl, budget));
}

TEST(PipelineTest, ChainOfEqualOpsSplitsIntoBalancedStages) {
  const Problem p = Chain(8, 1.0, 100, 0, 4);
  const Cluster c = testing::UniformCluster(4, 1 << 20, 1e9, 1e-6);
  PlaceOptions o;
  o.microbatches = 4;
  const auto r = PlacePipeline(p, c, Budgets(c), o);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->microbatches, 4);
  EXPECT_EQ(OpsPerDevice(r->placement, 4), (std::vector<int>{2, 2, 2, 2}));
  ExpectContiguousStages(p, r->placement);
  // Priority is the topological position.
  ASSERT_EQ(r->placement.priority.size(), p.num_ops());
  for (size_t pos = 0; pos < p.topo.size(); ++pos) {
    EXPECT_EQ(r->placement.priority[p.topo[pos]], pos);
  }
  ASSERT_FALSE(r->notes.empty());
  EXPECT_NE(r->notes[0].find("4 stages"), std::string::npos) << r->notes[0];
}

TEST(PipelineTest, OneMicrobatchKeepsTheChainOnOneDevice) {
  // Without pipelining, stages only add transfers: one stage is best.
  const Problem p = Chain(8, 1.0, 100, 0, 4);
  const Cluster c = testing::UniformCluster(4, 1 << 20, 1e9, 1e-6);
  const auto r = PlacePipeline(p, c, Budgets(c), PlaceOptions{});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->microbatches, 1);
  const std::vector<int> count = OpsPerDevice(r->placement, 4);
  EXPECT_EQ(*std::max_element(count.begin(), count.end()), 8);
}

TEST(PipelineTest, MemoryForcesMoreStages) {
  // Each op needs 1000 (weight) + 100 (output) + 100 (received input, for
  // the first op of a stage); 3500 bytes hold three ops, so 8 ops need
  // three devices even though one would be fastest.
  const Problem p = Chain(8, 1.0, 100, 1000, 4);
  const Cluster c = testing::UniformCluster(4, 3500, 1e9, 1e-6);
  const Budget budget = Budgets(c);
  const auto r = PlacePipeline(p, c, budget, PlaceOptions{});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  const std::vector<int> count = OpsPerDevice(r->placement, 4);
  EXPECT_LE(*std::max_element(count.begin(), count.end()), 3);
  EXPECT_GE(
      std::count_if(count.begin(), count.end(), [](int k) { return k > 0; }),
      3);
  ExpectContiguousStages(p, r->placement);
  ExpectWithinBudget(p, r->placement, budget);
}

TEST(PipelineTest, FasterDeviceGetsTheLongerStage) {
  const Problem p = Chain(12, 1.0, 100, 0, 2);
  const Cluster c = testing::UniformCluster(2, 1 << 20, 1e9, 1e-6, {0.5, 1.0});
  PlaceOptions o;
  o.microbatches = 8;
  const auto r = PlacePipeline(p, c, Budgets(c), o);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  const std::vector<int> count = OpsPerDevice(r->placement, 2);
  // Balanced: the full-share device takes twice the ops of the half one.
  EXPECT_EQ(count[1], 8);
  EXPECT_EQ(count[0], 4);
  ExpectContiguousStages(p, r->placement);
}

TEST(PipelineTest, RandomGraphsGiveContiguousStagesWithinBudget) {
  for (uint64_t seed = 0; seed < 30; ++seed) {
    testing::RandomDagOptions ro;
    ro.ops = 20 + static_cast<int>(seed % 5) * 30;
    ro.devices = 2 + static_cast<int>(seed % 4);
    ro.profiles = 1 + static_cast<int>(seed % 2);
    ro.training = seed % 3 == 0;
    const Problem p = testing::RandomProblem(seed, ro);
    // Enough memory for about 70% of the model per device: splits needed.
    const int64_t whole = WholeModelBytes(p);
    const int64_t memory = whole * 7 / 10;
    const Cluster c = testing::UniformCluster(ro.devices, memory, 1e4, 1e-4);
    const Budget budget = Budgets(c);
    PlaceOptions o;
    o.microbatches = 1 + static_cast<int>(seed % 4);
    // The exact split stops early on the wide graphs (its best found is
    // still a candidate); the full search is pipeline_exact_test's.
    o.pipeline_exact_max_ideals = 20'000;
    const auto r = PlacePipeline(p, c, budget, o);
    ASSERT_TRUE(r.has_value()) << "seed " << seed << ": " << r.error().message;
    ASSERT_EQ(r->placement.device.size(), p.num_ops());
    EXPECT_EQ(r->microbatches, o.microbatches);
    ExpectContiguousStages(p, r->placement);
    ExpectWithinBudget(p, r->placement, budget);
    const SimResult sim = Simulate(p, c, r->placement,
                                   SimOptions{.microbatches = o.microbatches});
    EXPECT_GT(sim.step_s, 0.0);
  }
}

TEST(PipelineTest, ManyOpsAreCutIntoBlocksAndStillFit) {
  testing::RandomDagOptions ro;
  ro.ops = 5000;
  ro.devices = 8;
  ro.window = 4;
  const Problem p = testing::RandomProblem(7, ro);
  const int64_t whole = WholeModelBytes(p);
  const Cluster c = testing::UniformCluster(8, whole / 5, 1e6, 1e-5);
  const Budget budget = Budgets(c);
  PlaceOptions o;
  o.microbatches = 8;
  o.pipeline_exact_max_ideals = 5'000;
  const auto r = PlacePipeline(p, c, budget, o);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  ExpectContiguousStages(p, r->placement);
  ExpectWithinBudget(p, r->placement, budget);
  const std::vector<int> count = OpsPerDevice(r->placement, 8);
  EXPECT_GE(
      std::count_if(count.begin(), count.end(), [](int k) { return k > 0; }),
      6);
}

TEST(PipelineTest, NoContiguousSplitFitsIsInfeasible) {
  const Problem p = Chain(8, 1.0, 100, 1000, 2);
  const Cluster c = testing::UniformCluster(2, 3500, 1e9, 1e-6);
  const auto r = PlacePipeline(p, c, Budgets(c), PlaceOptions{});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kInfeasible);
  EXPECT_NE(r.error().message.find("pipeline"), std::string::npos);
}

}  // namespace
}  // namespace tessera::placer
