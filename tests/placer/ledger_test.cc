// MemoryLedger: the conservative per-device count algorithms plan with.

#include "placer/ledger.h"

#include <gtest/gtest.h>

#include "placer/simulator.h"
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
