// MemoryLedger: the conservative per-device count algorithms plan with.

#include "placer/core/ledger_internal.h"

#include <gtest/gtest.h>

#include "placer/core/simulator.h"
#include "tests/placer/test_problems.h"

namespace tessera::placer {
namespace {

Problem SharedWeightFork(bool training) {
  ProblemBuilder b(1, {0, 0}, training);
  const uint32_t x = b.AddTensor("x", 10, TensorRole::kInput);
  const uint32_t w = b.AddTensor("w", 1000, TensorRole::kWeight);
  const uint32_t ta = b.AddTensor("ta", 100, TensorRole::kActivation);
  const uint32_t tb = b.AddTensor("tb", 200, TensorRole::kActivation, true);
  const uint32_t tc = b.AddTensor("tc", 300, TensorRole::kActivation, true);
  const double f[] = {1.0};
  const double bw[] = {1.0};
  const uint32_t a_in[] = {x, w}, a_out[] = {ta};
  const uint32_t b_in[] = {ta, w}, b_out[] = {tb};
  const uint32_t c_in[] = {ta}, c_out[] = {tc};
  b.AddOp("a", "Op", f, bw, a_in, a_out, 40);
  b.AddOp("b", "Op", f, bw, b_in, b_out, 70);
  b.AddOp("c", "Op", f, bw, c_in, c_out);
  b.set_weight_state_factor(3.0);
  return std::move(b).Build().value();
}

TEST(LedgerTest, CountsWeightsOncePerDeviceAndReceivedCopies) {
  const Problem p = SharedWeightFork(false);
  MemoryLedger l(p, 2);
  EXPECT_EQ(l.UsedIfPlaced(0, 0), 10 + 1000 + 100 + 40);
  l.Place(0, 0);
  EXPECT_EQ(l.used(0), 1150);
  // b on the same device: the weight is already there; workspace max 70.
  EXPECT_EQ(l.UsedIfPlaced(1, 0), 1110 + 200 + 70);
  // b elsewhere: its own weight copy and a received ta.
  EXPECT_EQ(l.UsedIfPlaced(1, 1), 1000 + 100 + 200 + 70);
  l.Place(1, 1);
  // c on device 1 reuses the received ta.
  EXPECT_EQ(l.UsedIfPlaced(2, 1), 1370 + 300);
  l.Place(2, 1);
  EXPECT_EQ(l.device_of(2), 1);
  l.Reset();
  EXPECT_EQ(l.used(0), 0);
  EXPECT_EQ(l.device_of(0), kUnplaced);
}

TEST(LedgerTest, TrainingCountsStateAndGradientsInFlight) {
  const Problem p = SharedWeightFork(true);
  MemoryLedger l(p, 1);
  // 10 + 3 x 1000 + 100 + workspace 40 + 2 x largest tensor (100).
  EXPECT_EQ(l.UsedIfPlaced(0, 0), 10 + 3000 + 100 + 40 + 200);
  EXPECT_EQ(StandaloneBytes(p, 0), 10 + 3000 + 100 + 40);
}

TEST(LedgerTest, NeverBelowTheSimulatedPeak) {
  for (uint64_t seed = 0; seed < 40; ++seed) {
    testing::RandomDagOptions o;
    o.ops = 40;
    o.devices = 3;
    o.training = seed % 2 == 1;
    const Problem p = testing::RandomProblem(seed, o);
    const Cluster c = testing::UniformCluster(3, int64_t{1} << 40);
    Placement pl;
    pl.device.resize(p.num_ops());
    MemoryLedger l(p, 3);
    for (OpId op : p.topo) {
      pl.device[op] = static_cast<uint16_t>((op * 7 + seed) % 3);
      l.Place(op, pl.device[op]);
    }
    const SimResult r = Simulate(p, c, pl);
    for (int d = 0; d < 3; ++d) {
      if (!o.training) {
        EXPECT_GE(l.used(d), r.devices[d].peak_bytes) << seed;
      }
    }
  }
}

}  // namespace
}  // namespace tessera::placer

namespace tessera::placer {
namespace {

// a -> b -> c, each output 100/200/300 bytes, plus a weight of 1000 read by
// a: liveness frees ta once b is placed, so the count is the weight + the
// largest pair alive at once (tb + tc = 500), not the sum of all outputs.
TEST(LedgerTest, LivenessFreesActivationsOnceTheirConsumersArePlaced) {
  ProblemBuilder b(1, {0, 0}, false);
  const uint32_t w = b.AddTensor("w", 1000, TensorRole::kWeight);
  const uint32_t ta = b.AddTensor("ta", 100, TensorRole::kActivation);
  const uint32_t tb = b.AddTensor("tb", 200, TensorRole::kActivation);
  const uint32_t tc = b.AddTensor("tc", 300, TensorRole::kActivation, true);
  const double f[] = {1.0};
  const uint32_t a_in[] = {w}, a_out[] = {ta}, b_in[] = {ta}, b_out[] = {tb},
                 c_in[] = {tb}, c_out[] = {tc};
  b.AddOp("a", "Op", f, {}, a_in, a_out);
  b.AddOp("b", "Op", f, {}, b_in, b_out);
  b.AddOp("c", "Op", f, {}, c_in, c_out);
  const Problem p = std::move(b).Build().value();

  MemoryLedger live(p, 2, Accounting::kLiveness);
  MemoryLedger all(p, 2);
  for (OpId op : p.topo) {
    live.Place(op, 0);
    all.Place(op, 0);
  }
  EXPECT_EQ(all.used(0), 1000 + 100 + 200 + 300);
  EXPECT_EQ(live.used(0), 1000 + 200 + 300);

  // c on the other device: it receives tb (200) and produces tc (300); tb
  // is freed on both devices once c is placed, tc stays (a graph output).
  live.Reset();
  live.Place(0, 0);
  live.Place(1, 0);
  EXPECT_EQ(live.UsedIfPlaced(2, 1), 200 + 300);
  live.Place(2, 1);
  EXPECT_EQ(live.used(0), 1000 + 100 + 200);
  EXPECT_EQ(live.used(1), 500);

  // Training ignores the request: activations are kept for backward.
  ProblemBuilder tb2(1, {0}, true);
  const uint32_t x = tb2.AddTensor("x", 10, TensorRole::kActivation);
  const uint32_t y = tb2.AddTensor("y", 20, TensorRole::kActivation, true);
  const double bw[] = {1.0};
  const uint32_t o1[] = {x}, i2[] = {x}, o2[] = {y};
  tb2.AddOp("p", "Op", f, bw, {}, o1);
  tb2.AddOp("q", "Op", f, bw, i2, o2);
  const Problem t = std::move(tb2).Build().value();
  MemoryLedger tl(t, 1, Accounting::kLiveness);
  MemoryLedger tc2(t, 1);
  for (OpId op : t.topo) {
    tl.Place(op, 0);
    tc2.Place(op, 0);
  }
  EXPECT_EQ(tl.used(0), tc2.used(0));
}

}  // namespace
}  // namespace tessera::placer
