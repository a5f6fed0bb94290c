// The simulator on graphs small enough to compute by hand: step times,
// transfers, channel serialization, peak memory, training and microbatches.

#include "placer/core/simulator.h"

#include <gtest/gtest.h>

#include "tests/placer/test_problems.h"

namespace tessera::placer {
namespace {

using testing::UniformCluster;

// A builder for one-profile problems with readable test code.
struct Graph {
  explicit Graph(bool training = false, int devices = 2)
      : b(1, std::vector<int>(devices, 0), training) {}
  uint32_t T(const char* name, int64_t bytes,
             TensorRole role = TensorRole::kActivation, bool output = false) {
    return b.AddTensor(name, bytes, role, output);
  }
  OpId Op(const char* name, double fwd, std::vector<uint32_t> in,
          std::vector<uint32_t> out, double bwd = 0.0, int64_t ws = 0) {
    const double f[] = {fwd};
    const double bw[] = {bwd};
    return b.AddOp(name, "Op", f, bw, in, out, ws);
  }
  Problem Build() { return std::move(b).Build().value(); }
  ProblemBuilder b;
};

Placement On(std::vector<uint16_t> devices) {
  Placement p;
  p.device = std::move(devices);
  return p;
}

TEST(SimulatorTest, ChainOnOneDeviceAddsTimesAndFreesActivations) {
  Graph g(false, 1);
  const uint32_t x = g.T("x", 10, TensorRole::kInput);
  const uint32_t w = g.T("w", 1000, TensorRole::kWeight);
  const uint32_t ta = g.T("ta", 100), tb = g.T("tb", 200);
  const uint32_t tc = g.T("tc", 300, TensorRole::kActivation, true);
  g.Op("a", 1.0, {x, w}, {ta});
  g.Op("b", 2.0, {ta}, {tb});
  const OpId c = g.Op("c", 3.0, {tb}, {tc});
  const Problem p = g.Build();
  const Cluster cl = UniformCluster(1, 1 << 20);
  const SimResult r = Simulate(p, cl, On({0, 0, 0}));
  EXPECT_DOUBLE_EQ(r.step_s, 6.0);
  EXPECT_DOUBLE_EQ(r.devices[0].busy_s, 6.0);
  // Before c runs: weights 1000 + tb 200 (x and ta are freed); c adds 300.
  EXPECT_EQ(r.devices[0].peak_bytes, 1500);
  EXPECT_EQ(r.devices[0].peak_op, c);
  EXPECT_EQ(r.devices[0].weight_bytes, 1000);
  EXPECT_EQ(r.devices[0].ops, 3);
  EXPECT_TRUE(r.transfers.empty());
  EXPECT_TRUE(r.fits);
}

TEST(SimulatorTest, DiamondRunsBranchesInParallelOnTwoDevices) {
  Graph g;
  const uint32_t ta = g.T("ta", 0), tb = g.T("tb", 0), tc = g.T("tc", 0);
  const uint32_t td = g.T("td", 0, TensorRole::kActivation, true);
  g.Op("a", 1.0, {}, {ta});
  g.Op("b", 2.0, {ta}, {tb});
  g.Op("c", 2.0, {ta}, {tc});
  g.Op("d", 1.0, {tb, tc}, {td});
  const Problem p = g.Build();
  const Cluster cl = UniformCluster(2, 1 << 20, 1e9, 0.0);
  EXPECT_DOUBLE_EQ(Simulate(p, cl, On({0, 0, 0, 0})).step_s, 6.0);
  const SimResult r = Simulate(p, cl, On({0, 0, 1, 0}));
  EXPECT_DOUBLE_EQ(r.step_s, 4.0);
  EXPECT_EQ(r.transfers.size(), 2u);  // ta to gpu1, tc back to gpu0
  EXPECT_DOUBLE_EQ(r.devices[1].busy_s, 2.0);
}

TEST(SimulatorTest, ForkJoinPaysLatencyPlusBytesOverBandwidth) {
  Graph g;
  const uint32_t t = g.T("t", 1'000'000'000), tb = g.T("tb", 1'000'000'000);
  const uint32_t tc = g.T("tc", 8);
  const uint32_t td = g.T("td", 8, TensorRole::kActivation, true);
  g.Op("a", 1.0, {}, {t});
  g.Op("b", 2.0, {t}, {tb});
  g.Op("c", 3.0, {t}, {tc});
  g.Op("d", 1.0, {tb, tc}, {td});
  const Problem p = g.Build();
  // 1 GB/s and 0.5 s latency: each 1 GB transfer takes 1.5 s.
  const Cluster cl = UniformCluster(2, int64_t{8} << 30, 1e9, 0.5);
  const SimResult r = Simulate(p, cl, On({0, 1, 0, 0}));
  // a 0-1; t to gpu1 1-2.5; b 2.5-4.5; c 1-4; tb back 4.5-6; d 6-7.
  EXPECT_DOUBLE_EQ(r.step_s, 7.0);
  ASSERT_EQ(r.transfers.size(), 2u);
  EXPECT_DOUBLE_EQ(r.transfers[0].start_s, 1.0);
  EXPECT_DOUBLE_EQ(r.transfers[0].end_s, 2.5);
  EXPECT_DOUBLE_EQ(r.transfers[1].start_s, 4.5);
  EXPECT_DOUBLE_EQ(r.transfers[1].end_s, 6.0);
  EXPECT_EQ(r.transfer_bytes, 2'000'000'000);
  ASSERT_EQ(r.links.size(), 2u);
  // gpu1 holds the received t (1 GB) and its own tb (1 GB) while b runs.
  EXPECT_EQ(r.devices[1].peak_bytes, 2'000'000'000);
}

TEST(SimulatorTest, OneTransferPerDestinationDevice) {
  Graph g;
  const uint32_t t = g.T("t", 100);
  g.Op("a", 1.0, {}, {t});
  g.Op("b", 1.0, {t}, {g.T("tb", 1, TensorRole::kActivation, true)});
  g.Op("c", 1.0, {t}, {g.T("tc", 1, TensorRole::kActivation, true)});
  const Problem p = g.Build();
  const Cluster cl = UniformCluster(2, 1 << 20, 100.0, 0.0);
  const SimResult r = Simulate(p, cl, On({0, 1, 1}));
  EXPECT_EQ(r.transfers.size(), 1u);
  // a 0-1, t 1-2, b and c 2-4 one after the other on gpu1.
  EXPECT_DOUBLE_EQ(r.step_s, 4.0);
}

TEST(SimulatorTest, TransfersQueueOnTheSendChannel) {
  Graph g(false, 3);
  const uint32_t t1 = g.T("t1", 100), t2 = g.T("t2", 100);
  g.Op("a", 1.0, {}, {t1, t2});
  g.Op("b", 0.0, {t1}, {g.T("tb", 0, TensorRole::kActivation, true)});
  g.Op("c", 0.0, {t2}, {g.T("tc", 0, TensorRole::kActivation, true)});
  const Problem p = g.Build();
  const Cluster cl = UniformCluster(3, 1 << 20, 100.0, 0.0);
  // Both leave gpu0 at t=1 for different receivers: the send channel
  // serializes them.
  const SimResult r = Simulate(p, cl, On({0, 1, 2}));
  ASSERT_EQ(r.transfers.size(), 2u);
  EXPECT_DOUBLE_EQ(r.transfers[0].end_s, 2.0);
  EXPECT_DOUBLE_EQ(r.transfers[1].start_s, 2.0);
  EXPECT_DOUBLE_EQ(r.step_s, 3.0);
}

TEST(SimulatorTest, PriorityDecidesAmongReadyOps) {
  Graph g(false, 1);
  const uint32_t a = g.T("a", 0, TensorRole::kActivation, true);
  const uint32_t b = g.T("b", 0, TensorRole::kActivation, true);
  g.Op("first", 1.0, {}, {a});
  g.Op("second", 1.0, {}, {b});
  const Problem p = g.Build();
  const Cluster cl = UniformCluster(1, 1 << 20);
  Placement pl = On({0, 0});
  pl.priority = {1, 0};
  SimOptions o;
  o.record_ops = true;
  const SimResult r = Simulate(p, cl, pl, o);
  ASSERT_EQ(r.op_records.size(), 2u);
  EXPECT_EQ(r.op_records[0].op, 1u);
  EXPECT_DOUBLE_EQ(r.op_records[1].start_s, 1.0);
}

TEST(SimulatorTest, ComputeShareStretchesTime) {
  Graph g(false, 1);
  g.Op("a", 1.0, {}, {g.T("t", 0, TensorRole::kActivation, true)});
  const Problem p = g.Build();
  const Cluster cl = UniformCluster(1, 1 << 20, 1e9, 0.0, {0.25});
  EXPECT_DOUBLE_EQ(Simulate(p, cl, On({0})).step_s, 4.0);
}

TEST(SimulatorTest, TrainingRunsBackwardInReverseAndKeepsActivations) {
  Graph g(true, 2);
  g.b.set_weight_state_factor(4.0);  // weight + grad + two Adam moments
  const uint32_t w = g.T("w", 100, TensorRole::kWeight);
  const uint32_t x = g.T("x", 10, TensorRole::kInput);
  const uint32_t ta = g.T("ta", 1000);
  const uint32_t tb = g.T("tb", 50, TensorRole::kActivation, true);
  g.Op("a", 1.0, {x, w}, {ta}, 2.0);
  g.Op("b", 1.0, {ta}, {tb}, 2.0);
  const Problem p = g.Build();
  const Cluster cl = UniformCluster(2, 1 << 20, 1000.0, 0.0);
  SimOptions o;
  o.record_ops = true;
  // One device: forward 0-2, backward b 2-4, backward a 4-6.
  const SimResult one = Simulate(p, cl, On({0, 0}), o);
  EXPECT_DOUBLE_EQ(one.step_s, 6.0);
  ASSERT_EQ(one.op_records.size(), 4u);
  EXPECT_TRUE(one.op_records[2].backward);
  EXPECT_EQ(one.op_records[2].op, 1u);
  EXPECT_EQ(one.devices[0].weight_bytes, 400);
  // Peak when b's backward starts: weights 400 + x 10 + ta 1000 + tb 50 +
  // ta's gradient 1000.
  EXPECT_EQ(one.devices[0].peak_bytes, 2460);
  // Split: ta crosses forward (1 s) and its gradient crosses back (1 s).
  const SimResult two = Simulate(p, cl, On({0, 1}), o);
  EXPECT_DOUBLE_EQ(two.step_s, 8.0);
  ASSERT_EQ(two.transfers.size(), 2u);
  EXPECT_FALSE(two.transfers[0].gradient);
  EXPECT_TRUE(two.transfers[1].gradient);
  EXPECT_DOUBLE_EQ(two.transfers[1].start_s, 5.0);
}

TEST(SimulatorTest, MicrobatchesPipelineTwoStages) {
  Graph g;
  const uint32_t t = g.T("t", 0);
  g.Op("a", 1.0, {}, {t});
  g.Op("b", 1.0, {t}, {g.T("tb", 0, TensorRole::kActivation, true)});
  const Problem p = g.Build();
  const Cluster cl = UniformCluster(2, 1 << 20, 1e9, 0.0);
  SimOptions o;
  o.microbatches = 4;
  // Four microbatches of 0.25 s per stage: (4 + 1) x 0.25.
  const SimResult r = Simulate(p, cl, On({0, 1}), o);
  EXPECT_DOUBLE_EQ(r.step_s, 1.25);
  EXPECT_EQ(r.transfers.size(), 4u);
  EXPECT_DOUBLE_EQ(Simulate(p, cl, On({0, 0}), o).step_s, 2.0);
}

TEST(SimulatorTest, ReportsWhenADeviceGoesOverItsMemory) {
  Graph g(false, 1);
  g.Op("a", 1.0, {}, {g.T("t", 2000, TensorRole::kActivation, true)});
  const Problem p = g.Build();
  EXPECT_FALSE(Simulate(p, UniformCluster(1, 1000), On({0})).fits);
  EXPECT_TRUE(Simulate(p, UniformCluster(1, 2000), On({0})).fits);
}

TEST(BoundsTest, LowerBoundIsPathOrWorkOverSpeed) {
  Graph g;
  const uint32_t ta = g.T("ta", 0), tb = g.T("tb", 0), tc = g.T("tc", 0);
  g.Op("a", 1.0, {}, {ta});
  g.Op("b", 2.0, {ta}, {tb});
  g.Op("c", 2.0, {ta}, {tc});
  g.Op("d", 1.0, {tb, tc}, {g.T("td", 0, TensorRole::kActivation, true)});
  const Problem p = g.Build();
  // Critical path a-b-d = 4; work 6 over 2 devices = 3.
  EXPECT_DOUBLE_EQ(LowerBound(p, UniformCluster(2, 1 << 20)), 4.0);
  // Shares 0.25 + 0.25: path 16, work 6 / 0.5 = 12.
  EXPECT_DOUBLE_EQ(
      LowerBound(p, UniformCluster(2, 1 << 20, 1e9, 0, {0.25, 0.25})), 16.0);
}

TEST(BoundsTest, RelaxedStepTimeCountsCrossingEdgesAndLoad) {
  Graph g;
  const uint32_t ta = g.T("ta", 1000), tb = g.T("tb", 0);
  g.Op("a", 1.0, {}, {ta});
  g.Op("b", 1.0, {ta}, {tb});
  const Problem p = g.Build();
  const Cluster cl = UniformCluster(2, 1 << 20, 1000.0, 0.5);
  EXPECT_DOUBLE_EQ(RelaxedStepTime(p, cl, On({0, 0})), 2.0);
  EXPECT_DOUBLE_EQ(RelaxedStepTime(p, cl, On({0, 1})), 3.5);
  EXPECT_DOUBLE_EQ(Simulate(p, cl, On({0, 1})).step_s, 3.5);
}

}  // namespace
}  // namespace tessera::placer
