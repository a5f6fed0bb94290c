// The openb trace files: the real ones load whole; a missing column, a bad
// number or an impossible GPU share is reported with file, line and column,
// and skips the row unless strict.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "sim/trace.h"
#include "tests/testlib/onnx_model_builder.h"
#include "tests/testlib/repo_paths.h"

namespace tessera::scheduler {

// The simulators under test (sim/).
using sim::LoadTraceNodes;
using sim::LoadTracePods;
using sim::ParseTraceNodes;
using sim::ParseTracePods;
using sim::PodDemand;
using sim::PodRequest;
using sim::PodWorkload;
using sim::TracePod;
using sim::TraceTopology;

namespace {

using ::testing::HasSubstr;

const std::string kOpenbDir = tessera::repo::OpenbDir();

std::string Write(const testlib::TempDir& dir, const std::string& name,
                  const std::string& text) {
  std::ofstream(dir.File(name)) << text;
  return dir.File(name);
}

TEST(Trace, TheOpenbFilesLoadWhole) {
  auto nodes = LoadTraceNodes(kOpenbDir + "/openb_node_list_gpu_node.csv");
  ASSERT_TRUE(nodes) << nodes.error().message;
  EXPECT_EQ(nodes->rows.size(), 1213u);
  EXPECT_TRUE(nodes->skipped.empty());
  const Topology t = TraceTopology(nodes->rows, "openb", 32 * 1024);
  EXPECT_EQ(t.gpus.size(), 6212u);
  auto pods = LoadTracePods(kOpenbDir + "/openb_pod_list_default.csv");
  ASSERT_TRUE(pods) << pods.error().message;
  EXPECT_EQ(pods->rows.size(), 8152u);
  EXPECT_TRUE(pods->skipped.empty());
  // The multi-GPU samples have only the five request columns.
  auto multi = LoadTracePods(kOpenbDir + "/openb_pod_list_multigpu50.csv");
  ASSERT_TRUE(multi) << multi.error().message;
  EXPECT_GT(multi->rows.size(), 9000u);
  EXPECT_EQ(multi->rows[0].creation_time, -1);
}

TEST(Trace, PodDemandFollowsTheOpenbRules) {
  TracePod p;
  p.cpu_milli = 4000;
  p.memory_mib = 1024;
  p.num_gpu = 1;
  p.gpu_milli = 460;
  EXPECT_EQ(PodDemand(p), (Resources{0, 460, 0, 4000, 1024}));
  p.gpu_milli = 1000;
  EXPECT_EQ(PodDemand(p), (Resources{1, 0, 0, 4000, 1024}));
  p.num_gpu = 4;
  EXPECT_EQ(PodDemand(p), (Resources{4, 0, 0, 4000, 1024}));
  p.num_gpu = 0;
  p.gpu_milli = 0;
  EXPECT_EQ(PodDemand(p), (Resources{0, 0, 0, 4000, 1024}));
}

TEST(Trace, AMissingColumnNamesIt) {
  testlib::TempDir dir;
  auto pods = LoadTracePods(
      Write(dir, "pods.csv", "name,cpu_milli,memory_mib,num_gpu\np,1,1,0\n"));
  ASSERT_FALSE(pods);
  EXPECT_THAT(pods.error().message, HasSubstr("pods.csv"));
  EXPECT_THAT(pods.error().message, HasSubstr("no column 'gpu_milli'"));
  auto missing = LoadTraceNodes(dir.File("none.csv"));
  ASSERT_FALSE(missing);
  EXPECT_THAT(missing.error().message, HasSubstr("no such file"));
}

TEST(Trace, BadRowsAreSkippedAndReportedUnlessStrict) {
  testlib::TempDir dir;
  const std::string path = Write(dir, "pods.csv",
                                 "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
                                 "a,1000,1024,1,500\n"
                                 "b,lots,1024,1,500\n"
                                 "c,1000,1024,1,1500\n"
                                 "d,1000,1024,2,1000\n");
  auto pods = LoadTracePods(path);
  ASSERT_TRUE(pods) << pods.error().message;
  ASSERT_EQ(pods->rows.size(), 2u);
  EXPECT_EQ(pods->rows[1].name, "d");
  ASSERT_EQ(pods->skipped.size(), 2u);
  EXPECT_THAT(pods->skipped[0], HasSubstr("pods.csv:3: column 'cpu_milli'"));
  EXPECT_THAT(pods->skipped[1], HasSubstr("pods.csv:4: column 'gpu_milli'"));
  auto strict = LoadTracePods(path, {.strict = true});
  ASSERT_FALSE(strict);
  EXPECT_THAT(strict.error().message, HasSubstr("pods.csv:3"));
}

// The text entry points (the fuzz target's) read as the files do, with
// `source` in the messages.
TEST(Trace, TextParsesAsTheFileDoes) {
  auto pods = ParseTracePods(
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli\r\na,1000,1024,1,500\r\n",
      "pods.csv");
  ASSERT_TRUE(pods) << pods.error().message;
  ASSERT_EQ(pods->rows.size(), 1u);
  EXPECT_EQ(pods->rows[0].gpu_milli, 500);
  auto nodes = ParseTraceNodes("sn,cpu_milli\n", "nodes.csv");
  ASSERT_FALSE(nodes);
  EXPECT_THAT(nodes.error().message,
              HasSubstr("nodes.csv: no column 'memory_mib'"));
  auto empty = ParseTracePods("", "pods.csv");
  ASSERT_FALSE(empty);
  EXPECT_THAT(empty.error().message, HasSubstr("pods.csv: empty file"));
}

// A GPU count past any machine's (here one that would wrap to 1 in an int)
// is a bad row, not a silently different one.
TEST(Trace, GpuCountsPastAnyNodeAreBadRows) {
  auto nodes = ParseTraceNodes(
      "sn,cpu_milli,memory_mib,gpu,model\n"
      "n1,1000,1024,4294967297,V100M16\nn2,1000,1024,8,V100M16\n",
      "nodes.csv");
  ASSERT_TRUE(nodes) << nodes.error().message;
  ASSERT_EQ(nodes->rows.size(), 1u);
  EXPECT_EQ(nodes->rows[0].name, "n2");
  ASSERT_EQ(nodes->skipped.size(), 1u);
  EXPECT_THAT(nodes->skipped[0], HasSubstr("nodes.csv:2: column 'gpu'"));
  auto pods = ParseTracePods(
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,4294967297,1000\n",
      "pods.csv", {.strict = true});
  ASSERT_FALSE(pods);
  EXPECT_THAT(pods.error().message, HasSubstr("column 'num_gpu'"));
}

}  // namespace
}  // namespace tessera::scheduler

namespace tessera::scheduler {
namespace {

// The built-in workload the service's fgd and tessera scorers use is the
// default pod list's: 35 shapes covering 95% of its pods (FGD_RESULTS.md).
TEST(Trace, TheBuiltInWorkloadIsTheDefaultPodLists) {
  auto pods = LoadTracePods(kOpenbDir + "/openb_pod_list_default.csv");
  if (!pods) GTEST_SKIP() << pods.error().message;
  const Workload w = PodWorkload(pods->rows);
  const Workload& built_in = OpenbWorkload();
  ASSERT_EQ(w.tasks.size(), 35u);
  ASSERT_EQ(built_in.tasks.size(), w.tasks.size());
  for (size_t i = 0; i < w.tasks.size(); ++i) {
    EXPECT_EQ(built_in.tasks[i].cpu_milli, w.tasks[i].cpu_milli) << i;
    EXPECT_EQ(built_in.tasks[i].gpus, w.tasks[i].gpus) << i;
    EXPECT_EQ(built_in.tasks[i].milli, w.tasks[i].milli) << i;
    EXPECT_NEAR(built_in.tasks[i].weight, w.tasks[i].weight, 1e-12) << i;
  }
  EXPECT_NEAR(built_in.cpu_per_milli, w.cpu_per_milli, 1e-9);
  EXPECT_NEAR(built_in.memory_mib_per_milli, w.memory_mib_per_milli, 1e-9);
}

TEST(Trace, PodRequestsCarryTheirGpuKinds) {
  TracePod p;
  p.num_gpu = 1;
  p.gpu_milli = 500;
  p.gpu_spec = {"V100M16", "V100M32"};
  EXPECT_EQ(PodRequest(p).gpu_kinds, p.gpu_spec);
  p.num_gpu = 0;
  p.gpu_milli = 0;
  EXPECT_TRUE(PodRequest(p).gpu_kinds.empty());  // CPU-only: no GPU at all
}

}  // namespace
}  // namespace tessera::scheduler
