// The `pipeline` algorithm's exact split (placer/pipeline/pipeline_exact.cc):
// the restatement in the max-load model, the split never worse than the block
// DP's bottleneck, strictly better on branches, and dropped when it does
// not fit the ledger's count.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "placer/core/ledger_internal.h"
#include "placer/pipeline/pipeline_internal.h"
#include "tests/placer/pipeline/pipeline_checks.h"
#include "tests/placer/test_problems.h"

namespace tessera::placer {
namespace {

// Proofs, not speed: no time limit (the sanitizer builds are 10-30 times
// slower than the 10 s default allows for).
ExactPipelineOptions NoTimeLimit() {
  ExactPipelineOptions o;
  o.time_limit_s = 1e6;
  return o;
}

using testing::Budgets;
using testing::FitsLedger;
using ::testing::HasSubstr;
using testing::IsContiguousSplit;
using ::testing::Not;

// Random DAG options that vary with `seed`: 8 + 6 (seed % sizes) ops,
// 2-4 devices, 1-2 profiles, training on every third seed, windows of 3-5.
testing::RandomDagOptions Varied(uint64_t seed, int sizes) {
  testing::RandomDagOptions ro;
  ro.ops = 8 + static_cast<int>(seed % sizes) * 6;
  ro.devices = 2 + static_cast<int>(seed % 3);
  ro.profiles = 1 + static_cast<int>(seed % 2);
  ro.training = seed % 3 == 1;
  ro.window = 3 + static_cast<int>(seed % 3);
  return ro;
}

// Uniform links; memory that never binds (ten times the whole model).
Cluster AmpleCluster(const Problem& p, int devices,
                     std::vector<double> shares = {}) {
  return testing::UniformCluster(devices, 10 * WholeModelBytes(p), 1e4, 1e-3,
                                 std::move(shares));
}

// a -> b: a reads a weight of 100 bytes and writes 1000 bytes that b
// reads; b writes 10. Forward 1 s (a) and 2 s (b) on profile 0, twice that
// on profile 1; backward twice the forward.
Problem TwoOps(bool training) {
  ProblemBuilder b(2, {0, 0, 1, 0}, training);
  const uint32_t w = b.AddTensor("w", 100, TensorRole::kWeight);
  const uint32_t x = b.AddTensor("x", 1000, TensorRole::kActivation);
  const uint32_t y = b.AddTensor("y", 10, TensorRole::kActivation, true);
  const double fa[] = {1, 2}, ba[] = {2, 4}, fb[] = {2, 4}, bb[] = {4, 8};
  const uint32_t a_in[] = {w}, a_out[] = {x}, b_in[] = {x}, b_out[] = {y};
  const auto none = std::span<const double>();
  b.AddOp("a", "Op", fa, training ? std::span<const double>(ba) : none, a_in,
          a_out, /*workspace_bytes=*/50, /*extra_bytes=*/7);
  b.AddOp("b", "Op", fb, training ? std::span<const double>(bb) : none, b_in,
          b_out);
  b.set_weight_state_factor(3.0);
  return std::move(b).Build().value();
}

TEST(PipelineExactTest, RestatesTheProblemInTheMaxLoadModel) {
  for (const bool training : {false, true}) {
    SCOPED_TRACE(training ? "training" : "inference");
    const Problem p = TwoOps(training);
    // Devices 0, 1, 3 alike; device 2 has the other profile; device 3
    // also half the share, so four devices make three kinds.
    const Cluster c =
        testing::UniformCluster(4, 5000, 1e6, 1e-3, {1.0, 1.0, 1.0, 0.5});
    const PipelineMaxLoad m = PipelineAsMaxLoad(p, c, Budgets(c));
    const MaxLoadProblem& q = m.problem;
    ASSERT_EQ(q.kinds.size(), 3u);
    EXPECT_EQ(q.kinds[0].count, 2);
    EXPECT_EQ(q.kinds[1].count, 1);
    EXPECT_EQ(q.kinds[2].count, 1);
    for (const MaxLoadKind& k : q.kinds) {
      EXPECT_EQ(k.memory, 5000);
      EXPECT_TRUE(k.charges_communication);
      EXPECT_FALSE(k.charges_sends);
    }
    EXPECT_EQ(m.device, (std::vector<int>{0, 1, 2, 3}));
    ASSERT_EQ(q.nodes.size(), 2u);
    // Time: forward (+ backward) on the kind's profile, over its share.
    const double w = training ? 3.0 : 1.0;
    EXPECT_DOUBLE_EQ(q.nodes[0].time[0], 1 * w);
    EXPECT_DOUBLE_EQ(q.nodes[0].time[1], 2 * w);
    EXPECT_DOUBLE_EQ(q.nodes[0].time[2], 2 * w);
    EXPECT_DOUBLE_EQ(q.nodes[1].time[2], 4 * w);
    // Size: the weight (x the state factor in training), the output, the
    // extra bytes; not the workspace, not the input read from a.
    EXPECT_EQ(q.nodes[0].size, (training ? 300 : 100) + 1000 + 7);
    EXPECT_EQ(q.nodes[1].size, 10);
    // The edge: latency + bytes / bandwidth, twice in training.
    ASSERT_EQ(q.edges.size(), 1u);
    EXPECT_DOUBLE_EQ(q.edges[0].cost, (training ? 2 : 1) * (1e-3 + 1e-3));
  }
}

TEST(PipelineExactTest, MaxLoadIsTheBottleneckStageTime) {
  // Uniform links and one output per op: the max-load objective is the
  // pipeline's stage time exactly.
  for (uint64_t seed = 0; seed < 12; ++seed) {
    const testing::RandomDagOptions ro = Varied(seed, 4);
    const Problem p = testing::RandomProblem(seed, ro);
    const Cluster c = AmpleCluster(p, ro.devices);
    const ExactPipeline e = ExactPipelineSplit(p, c, Budgets(c), NoTimeLimit());
    ASSERT_TRUE(e.split) << "seed " << seed << ": " << e.why_not;
    EXPECT_EQ(e.status, SolveStatus::kOptimal)
        << "seed " << seed << ": " << e.stopped;
    EXPECT_NEAR(e.split->times.max_stage, e.max_load, 1e-9 * e.max_load)
        << "seed " << seed;
    EXPECT_TRUE(IsContiguousSplit(p, e.split->placement)) << "seed " << seed;
  }
}

TEST(PipelineExactTest, NeverWorseThanTheBlockDpsBottleneck) {
  int strictly_better = 0;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    testing::RandomDagOptions ro = Varied(seed, 5);
    ro.edge_probability = 0.3;
    const Problem p = testing::RandomProblem(seed, ro);
    // Odd seeds: devices of different shares (more kinds).
    std::vector<double> shares;
    if (seed % 2 == 1) {
      const double all[] = {1.0, 0.5, 1.0, 0.25};
      shares.assign(all, all + ro.devices);
    }
    // Memory never binds: the block DP's best split over its topological
    // order is a chain of ideals the exact DP also considers.
    const Cluster c = AmpleCluster(p, ro.devices, shares);
    const Budget budget = Budgets(c);
    size_t blocks = 0;
    // Many microbatches: the block DP's pick is its bottleneck optimum.
    const auto block = BlockPipelineSplit(p, c, budget, 1000, &blocks);
    ASSERT_TRUE(block.has_value()) << block.error().message;
    ASSERT_EQ(blocks, p.num_ops()) << "one op per block";
    const ExactPipeline e = ExactPipelineSplit(p, c, budget, NoTimeLimit());
    ASSERT_TRUE(e.split) << "seed " << seed << ": " << e.why_not;
    ASSERT_EQ(e.status, SolveStatus::kOptimal)
        << "seed " << seed << ": " << e.stopped;
    const double exact = e.split->times.max_stage;
    const double old = block->times.max_stage;
    EXPECT_LE(exact, old * (1 + 1e-9)) << "seed " << seed;
    strictly_better += exact < old * (1 - 1e-6);
    EXPECT_TRUE(FitsLedger(p, e.split->placement, budget));
  }
  // Random DAGs branch: on some the topological order is not the best.
  EXPECT_GT(strictly_better, 0);
}

TEST(PipelineExactTest, PipelineNeverSimulatesSlowerThanTheBlockDp) {
  // Two "nodes" of two devices, a link 100 times slower between them: the
  // estimate and the simulator can disagree there, and the simulator
  // decides.
  int exact_won = 0;
  for (uint64_t seed = 0; seed < 16; ++seed) {
    testing::RandomDagOptions ro = Varied(seed, 4);
    ro.devices = 4;
    const Problem p = testing::RandomProblem(seed, ro);
    Cluster c = AmpleCluster(p, 4);
    for (int a = 0; a < 4; ++a) {
      for (int b = 0; b < 4; ++b) {
        if (a / 2 != b / 2) c.links[a * 4 + b].bandwidth /= 100;
      }
    }
    const Budget budget = Budgets(c);
    PlaceOptions o;
    o.microbatches = 2 + static_cast<int>(seed % 3) * 3;
    size_t blocks = 0;
    const auto block =
        BlockPipelineSplit(p, c, budget, o.microbatches, &blocks);
    ASSERT_TRUE(block.has_value()) << block.error().message;
    const auto r = PlacePipeline(p, c, budget, o);
    ASSERT_TRUE(r.has_value()) << r.error().message;
    ASSERT_EQ(r->notes.size(), 2u);
    const SimOptions so{.microbatches = o.microbatches};
    Placement old = r->placement;
    old.device = block->placement.device;
    EXPECT_LE(Simulate(p, c, r->placement, so).step_s,
              Simulate(p, c, old, so).step_s)
        << "seed " << seed;
    exact_won += r->notes[1].find("split won") != std::string::npos;
  }
  EXPECT_GT(exact_won, 0);
}

TEST(PipelineExactTest, TheBlockCapStopsTheSearchAlikeEveryTime) {
  // The queue caps the exact search by a count of block pairs, not by
  // time: the capped search says where it stopped and gives the same split
  // on every run.
  testing::RandomDagOptions ro = Varied(3, 4);
  ro.ops = 40;
  ro.devices = 4;
  const Problem p = testing::RandomProblem(3, ro);
  const Cluster c = AmpleCluster(p, 4);
  PlaceOptions o;
  o.microbatches = 4;
  o.pipeline_exact_max_blocks = 30;
  const auto first = PlacePipeline(p, c, Budgets(c), o);
  ASSERT_TRUE(first.has_value()) << first.error().message;
  ASSERT_EQ(first->notes.size(), 2u);
  EXPECT_THAT(first->notes[1], HasSubstr("more than 30 blocks"));
  for (int run = 0; run < 3; ++run) {
    const auto again = PlacePipeline(p, c, Budgets(c), o);
    ASSERT_TRUE(again.has_value()) << again.error().message;
    EXPECT_EQ(again->placement.device, first->placement.device);
  }
  o.pipeline_exact_max_blocks = PlaceOptions{}.pipeline_exact_max_blocks;
  const auto full = PlacePipeline(p, c, Budgets(c), o);
  ASSERT_TRUE(full.has_value()) << full.error().message;
  EXPECT_THAT(full->notes[1], Not(HasSubstr("more than")));
}

// s -> {b1 -> b2 -> b3 -> b4, a1} -> t, numbered s, b1, a1, b2, b3, b4, t so
// that the topological order is s b1 a1 b2 b3 b4 t: a1 (4 s) cannot be
// split from the b chain (4 x 1 s) along it. Splits of the order into two
// devices give at best {s b1 a1} | {b2 b3 b4 t}: 5.5 s; the chain of
// ideals {s a1} | {b1 b2 b3 b4 t} gives 4.5 s.
Problem Branches() {
  ProblemBuilder b(1, {0, 0}, false);
  const uint32_t in = b.AddTensor("in", 100, TensorRole::kInput);
  auto out = [&](const std::string& name) {
    return b.AddTensor(name, 100, TensorRole::kActivation, name == "t_out");
  };
  auto op = [&](const std::string& name, double seconds,
                std::vector<uint32_t> ins, uint32_t o) {
    const double f[] = {seconds};
    const uint32_t outs[] = {o};
    b.AddOp(name, "Op", f, {}, ins, outs);
  };
  const uint32_t s = out("s_out"), b1 = out("b1_out"), a1 = out("a1_out"),
                 b2 = out("b2_out"), b3 = out("b3_out"), b4 = out("b4_out"),
                 t = out("t_out");
  op("s", 0.5, {in}, s);
  op("b1", 1, {s}, b1);
  op("a1", 4, {s}, a1);
  op("b2", 1, {b1}, b2);
  op("b3", 1, {b2}, b3);
  op("b4", 1, {b3}, b4);
  op("t", 0.5, {a1, b4}, t);
  return std::move(b).Build().value();
}

TEST(PipelineExactTest, BeatsTheTopologicalOrderOnBranches) {
  const Problem p = Branches();
  ASSERT_EQ(p.topo, (std::vector<OpId>{0, 1, 2, 3, 4, 5, 6}));
  const Cluster c = testing::UniformCluster(2, 1 << 20, 1e9, 1e-6);
  const Budget budget = Budgets(c);
  size_t blocks = 0;
  const auto block = BlockPipelineSplit(p, c, budget, 8, &blocks);
  ASSERT_TRUE(block.has_value()) << block.error().message;
  EXPECT_NEAR(block->times.max_stage, 5.5, 1e-3);
  const ExactPipeline e = ExactPipelineSplit(p, c, budget, NoTimeLimit());
  ASSERT_TRUE(e.split) << e.why_not;
  EXPECT_EQ(e.status, SolveStatus::kOptimal);
  EXPECT_NEAR(e.max_load, 4.5, 1e-3);
  // a1 on one device, the b chain on the other (s and t go with either).
  const auto& d = e.split->placement.device;
  EXPECT_NE(d[2], d[1]);
  EXPECT_EQ(d[1], d[3]);
  EXPECT_EQ(d[1], d[4]);
  EXPECT_EQ(d[1], d[5]);

  // PlacePipeline takes it, says so, and the simulator agrees.
  PlaceOptions o;
  o.microbatches = 8;
  const auto r = PlacePipeline(p, c, budget, o);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->placement.device, e.split->placement.device);
  ASSERT_EQ(r->notes.size(), 2u);
  EXPECT_THAT(r->notes[0], HasSubstr("2 stages"));
  EXPECT_THAT(r->notes[0], HasSubstr("the exact contiguous split"));
  EXPECT_THAT(r->notes[1], HasSubstr("exact contiguous split won"));
  EXPECT_THAT(r->notes[1], HasSubstr("proven optimal"));
  const SimOptions so{.microbatches = 8};
  Placement old = block->placement;
  old.priority = r->placement.priority;
  EXPECT_LT(Simulate(p, c, r->placement, so).step_s,
            Simulate(p, c, old, so).step_s);

  // With one microbatch the block DP's smallest sum (one stage) stands.
  const auto one = PlacePipeline(p, c, budget, PlaceOptions{});
  ASSERT_TRUE(one.has_value()) << one.error().message;
  EXPECT_THAT(one->notes[0], HasSubstr("1 stage"));
}

// x -> a -> b: a writes 1000 bytes that b reads. Each device holds 1005:
// a alone needs 1 + 1000, b alone 10 by the DP's sizes but 1010 with the
// copy of a's output it receives, so the DP's split does not fit.
Problem ReceivedCopyTooLarge() {
  ProblemBuilder b(1, {0, 0}, false);
  const uint32_t x = b.AddTensor("x", 1, TensorRole::kInput);
  const uint32_t ya = b.AddTensor("ya", 1000, TensorRole::kActivation);
  const uint32_t yb = b.AddTensor("yb", 10, TensorRole::kActivation, true);
  const double f[] = {1.0};
  const uint32_t a_in[] = {x}, a_out[] = {ya}, b_in[] = {ya}, b_out[] = {yb};
  b.AddOp("a", "Op", f, {}, a_in, a_out);
  b.AddOp("b", "Op", f, {}, b_in, b_out);
  return std::move(b).Build().value();
}

TEST(PipelineExactTest, SplitOverTheLedgersCountIsDropped) {
  const Problem p = ReceivedCopyTooLarge();
  const Cluster c = testing::UniformCluster(2, 1005, 1e9, 1e-6);
  const Budget budget = Budgets(c);
  ExactPipelineOptions o;
  o.memory_retries = 0;
  ExactPipeline e = ExactPipelineSplit(p, c, budget, o);
  EXPECT_FALSE(e.split);
  EXPECT_EQ(e.runs, 1);
  EXPECT_THAT(e.why_not, HasSubstr("exceeds node0/gpu1's budget by 5 B"));
  // Solved again with less memory, the DP finds no split at all.
  e = ExactPipelineSplit(p, c, budget, {});
  EXPECT_FALSE(e.split);
  EXPECT_EQ(e.runs, 2);
  EXPECT_THAT(e.why_not, HasSubstr("no contiguous split fits"));
  // Less room in all devices together than the DP's count: no search.
  const Cluster small = testing::UniformCluster(2, 500, 1e9, 1e-6);
  e = ExactPipelineSplit(p, small, Budgets(small), {});
  EXPECT_FALSE(e.split);
  EXPECT_EQ(e.runs, 0);
  EXPECT_THAT(e.why_not, HasSubstr("exceed the 1000 B of all budgets"));
  // Neither source fits: the algorithm says so.
  PlaceOptions po;
  po.microbatches = 4;
  const auto r = PlacePipeline(p, c, budget, po);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kInfeasible);
  EXPECT_THAT(r.error().message, HasSubstr("nor does an exact contiguous"));
}

TEST(PipelineExactTest, EverySplitKeptFitsTheBudgets) {
  int kept = 0;
  for (uint64_t seed = 0; seed < 30; ++seed) {
    const testing::RandomDagOptions ro = Varied(seed + 1, 4);
    const Problem p = testing::RandomProblem(seed, ro);
    // Tight: about what an even split needs, so received copies and
    // shared weights decide.
    const int64_t memory = WholeModelBytes(p) * 12 / (10 * ro.devices);
    const Cluster c = testing::UniformCluster(ro.devices, memory, 1e4, 1e-3);
    const Budget budget = Budgets(c);
    const ExactPipeline e = ExactPipelineSplit(p, c, budget, {});
    if (!e.split) {
      EXPECT_FALSE(e.why_not.empty());
      continue;
    }
    ++kept;
    EXPECT_TRUE(FitsLedger(p, e.split->placement, budget)) << "seed " << seed;
    EXPECT_TRUE(IsContiguousSplit(p, e.split->placement)) << "seed " << seed;
  }
  EXPECT_GT(kept, 0);
}

TEST(PipelineExactTest, NotTriedOnVeryLargeGraphs) {
  // Its first bound alone is quadratic in the ops: the block DP's split
  // stands, and the note says why.
  testing::RandomDagOptions ro;
  ro.ops = 5001;
  ro.devices = 2;
  ro.window = 2;
  const Problem p = testing::RandomProblem(3, ro);
  const Cluster c = AmpleCluster(p, 2);
  PlaceOptions o;
  o.microbatches = 4;
  const auto r = PlacePipeline(p, c, Budgets(c), o);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  ASSERT_EQ(r->notes.size(), 2u);
  EXPECT_THAT(r->notes[0], HasSubstr("blocks"));
  EXPECT_THAT(r->notes[1], HasSubstr("not tried on more than 5000 ops"));
}

}  // namespace
}  // namespace tessera::placer
