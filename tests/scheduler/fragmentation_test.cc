// Fragmentation as Weng et al. define it: the typical tasks of a workload,
// a node's expected fragmentation F computed by hand, the GPU capacity its
// CPU and memory strand, the free milli no mix of tasks fills, and the
// cluster's ratio.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "scheduler/fragmentation.h"
#include "tests/testlib/test_topology.h"

namespace tessera::scheduler {
namespace {

using testing::kGiB;

TypicalTask Task(int64_t cpu, int gpus, int milli, double weight = 0) {
  return TypicalTask{cpu, gpus, milli, {}, weight};
}

std::string kX = "x";
std::string kY = "y";

FreeGpu Free(int milli, const std::string* kind = &kX) {
  return FreeGpu{milli, 40 * kGiB, 40 * kGiB, kind};
}

TEST(TypicalWorkload, MostCommonShapesUntilTheCoverage) {
  std::vector<TypicalTask> tasks;
  for (int i = 0; i < 6; ++i) tasks.push_back(Task(1000, 1, 500));
  for (int i = 0; i < 3; ++i) tasks.push_back(Task(2000, 1, 1000));
  tasks.push_back(Task(4000, 0, 0));  // one CPU-only task
  const Workload w = TypicalWorkload(tasks, 0.85);
  ASSERT_EQ(w.tasks.size(), 2u);  // 90% covered by the first two shapes
  EXPECT_EQ(w.tasks[0], Task(1000, 1, 500, 6.0 / 9));
  EXPECT_EQ(w.tasks[1], Task(2000, 1, 1000, 3.0 / 9));
  // CPU per GPU milli over every GPU task: (6*1000 + 3*2000) / (3000+3000).
  EXPECT_DOUBLE_EQ(w.cpu_per_milli, 12000.0 / 6000);
  EXPECT_EQ(TypicalWorkload(tasks, 1.0).tasks.size(), 3u);
}

TEST(TypicalWorkload, TiesGoToTheLargerShapeFirst) {
  const Workload w = TypicalWorkload(
      {Task(1000, 1, 300), Task(3000, 1, 300), Task(2000, 1, 300)}, 1.0);
  ASSERT_EQ(w.tasks.size(), 3u);
  EXPECT_EQ(w.tasks[0].cpu_milli, 3000);
  EXPECT_EQ(w.tasks[2].cpu_milli, 1000);
}

TEST(NodeFragmentation, IdleMilliTheTypicalTasksCannotUse) {
  Workload w;
  w.tasks = {Task(1000, 1, 500, 0.5), Task(1000, 1, 1000, 0.5)};
  NodeFree node{8000, 64 * kGiB, {Free(1000), Free(300)}};
  // Both tasks fit the free GPU; neither fits the 300: F = 300.
  EXPECT_DOUBLE_EQ(NodeFragmentation(node, w), 300);
  // A 600-milli GPU takes the half-GPU task, not the whole one.
  node.gpus[1] = Free(600);
  EXPECT_DOUBLE_EQ(NodeFragmentation(node, w), 0.5 * 0 + 0.5 * 600);
  // Without the CPU a task needs, all the node's idle milli is fragmented.
  node.cpu_milli = 500;
  EXPECT_DOUBLE_EQ(NodeFragmentation(node, w), 1600);
  // Nothing idle, nothing fragmented.
  EXPECT_DOUBLE_EQ(NodeFragmentation({8000, 0, {Free(0)}}, w), 0);
}

TEST(NodeFragmentation, CpuOnlyTasksMultiGpuTasksAndKinds) {
  NodeFree node{8000, 64 * kGiB, {Free(1000), Free(1000), Free(200)}};
  Workload cpu_only;
  cpu_only.tasks = {Task(1000, 0, 0, 1)};
  EXPECT_DOUBLE_EQ(NodeFragmentation(node, cpu_only), 2200);
  Workload pairs;
  pairs.tasks = {Task(1000, 2, 1000, 1)};
  EXPECT_DOUBLE_EQ(NodeFragmentation(node, pairs), 200);
  pairs.tasks[0].gpus = 3;  // three whole GPUs: not here
  EXPECT_DOUBLE_EQ(NodeFragmentation(node, pairs), 2200);
  Workload only_y;
  only_y.tasks = {TypicalTask{1000, 1, 100, {"y"}, 1}};
  EXPECT_DOUBLE_EQ(NodeFragmentation(node, only_y), 2200);
  node.gpus[2].kind = &kY;
  EXPECT_DOUBLE_EQ(NodeFragmentation(node, only_y), 2000);
}

TEST(NodeFragmentation, GpuMemoryCountsInProportionToCompute) {
  Workload w;
  w.tasks = {Task(0, 1, 500, 1)};
  // 600 milli free but only a quarter of the memory: a half-GPU task needs
  // half of it.
  NodeFree node{8000, 0, {FreeGpu{600, 10 * kGiB, 40 * kGiB, &kX}}};
  EXPECT_DOUBLE_EQ(NodeFragmentation(node, w), 600);
  node.gpus[0].memory_mib = 20 * kGiB;
  EXPECT_DOUBLE_EQ(NodeFragmentation(node, w), 0);
}

TEST(StrandedMilli, IdleCapacityTheHostCannotFeed) {
  Workload w;
  w.cpu_per_milli = 10;         // 10 CPU milli per GPU milli
  w.memory_mib_per_milli = 40;  // 40 MiB per GPU milli
  NodeFree node{5000, 100000, {Free(1000), Free(300)}};
  // 1300 idle; the CPU feeds 500 of it, the memory 2500.
  EXPECT_DOUBLE_EQ(StrandedMilli(node, w), 800);
  node.memory_mib = 20000;  // feeds 500: memory strands more
  EXPECT_DOUBLE_EQ(StrandedMilli(node, w), 800);
  node.memory_mib = 8000;  // feeds 200
  EXPECT_DOUBLE_EQ(StrandedMilli(node, w), 1100);
  node.cpu_milli = 20000;
  node.memory_mib = 100000;
  EXPECT_DOUBLE_EQ(StrandedMilli(node, w), 0);
  EXPECT_DOUBLE_EQ(StrandedMilli(node, Workload{}), 0);  // ratios unknown
}

TEST(UnfillableMilli, FreeMilliNoMixOfTypicalTasksFills) {
  Workload w;
  w.tasks = {Task(2000, 1, 500, 0.4), Task(4000, 1, 300, 0.4),
             Task(1000, 0, 0, 0.2)};  // the CPU-only task fills no GPU
  const UnfillableMilli unfillable(w);
  NodeFree node{8000, 100000, {Free(1000), Free(700), Free(100), Free(0)}};
  // 1000 = 500 + 500; of 700 at most 600 (300 + 300); 100: nothing.
  EXPECT_DOUBLE_EQ(unfillable(node), 100 + 100);
  node.cpu_milli = 3000;  // only the 500-milli task: 700 keeps 200
  EXPECT_DOUBLE_EQ(unfillable(node), 200 + 100);
  node.cpu_milli = 1000;  // no GPU task: all of it
  EXPECT_DOUBLE_EQ(unfillable(node), 1800);
  // Free memory bounds the milli in proportion: half the memory, 500.
  NodeFree short_memory{8000, 100000, {Free(700)}};
  short_memory.gpus[0].memory_mib = 20 * kGiB;
  EXPECT_DOUBLE_EQ(unfillable(short_memory), 200);
  EXPECT_DOUBLE_EQ(UnfillableMilli(Workload{})(node), 0);  // no GPU tasks
}

TEST(UnfillableMilli, WholeGpuTasksAndKinds) {
  Workload whole;
  whole.tasks = {Task(0, 2, 1000, 1)};  // fills idle GPUs only
  NodeFree node{8000, 100000, {Free(1000), Free(700)}};
  EXPECT_DOUBLE_EQ(UnfillableMilli(whole)(node), 700);
  Workload bound;
  bound.tasks = {Task(0, 1, 500, 0.5), TypicalTask{0, 1, 300, {"y"}, 0.5}};
  const UnfillableMilli unfillable(bound);
  // On x only the unbound 500 fits: 700 keeps 200; on y 300 + 300.
  EXPECT_DOUBLE_EQ(unfillable(NodeFree{0, 0, {Free(700, &kX)}}), 200);
  EXPECT_DOUBLE_EQ(unfillable(NodeFree{0, 0, {Free(700, &kY)}}), 100);
}

TEST(MeasureFragmentation, SumsTheNodesAndRatesAgainstIdle) {
  ClusterState s(testing::MakeTopology({{40, 40}, {40}}));
  ASSERT_TRUE(s.Reserve(1, Allocation{0, {{0, 800, 0}}, 0, 0, false}));
  Workload w;
  w.tasks = {Task(0, 1, 500, 1)};
  const ClusterFragmentation c = MeasureFragmentation(s, w);
  EXPECT_DOUBLE_EQ(c.idle_milli, 2200);
  EXPECT_DOUBLE_EQ(c.frag_milli, 200);
  EXPECT_NEAR(c.ratio_pct(), 100.0 * 200 / 2200, 1e-9);
  EXPECT_DOUBLE_EQ(ClusterFragmentation{}.ratio_pct(), 0);
}

}  // namespace
}  // namespace tessera::scheduler
