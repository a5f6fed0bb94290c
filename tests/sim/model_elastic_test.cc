// Elastic jobs in the models mode: data-parallel sweeps of whole-GPU
// replicas, gang-only vs elastic on the same jobs (sim/model_elastic.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/model_elastic.h"
#include "sim/model_workload.h"
#include "tests/testlib/test_topology.h"

namespace tessera::scheduler {

// The simulators under test (sim/).
using sim::CompareModelElastic;
using sim::ElasticTimedOptions;
using sim::ElasticTimedRun;
using sim::GenerateModelJobs;
using sim::ModelElasticOptions;
using sim::ModelJob;
using sim::ModelJobKind;
using sim::ModelJobPods;
using sim::ModelWorkloadOptions;
using sim::ParseDurationDistribution;
using sim::RunTimedElastic;

namespace {

using testing::kGiB;
using testing::MakeTopology;

ModelJobKind Kind(const std::string& name, int64_t mib) {
  ModelJobKind k;
  k.name = name;
  k.demand_mib = mib;
  k.step_s = 0.1;
  return k;
}

// A small model (one GPU) and a large one (two 80 GiB GPUs by memory).
std::vector<ModelJobKind> Kinds() {
  return {Kind("small", 10 * kGiB), Kind("large", 100 * kGiB)};
}

ModelElasticOptions DefaultOptions() {
  ModelElasticOptions o;
  o.pct = 100;
  o.min_workers = 1;
  o.max_workers = 4;
  o.scorer = "best-fit";
  return o;
}

TEST(ModelElastic, SweepsAreTheJobsThatFitOneGpuAtThePercentage) {
  const std::vector<ModelJob> jobs = {{1, 0, 100}, {0, 10, 50}, {0, 20, 30}};
  std::vector<char> sweep;
  ModelElasticOptions o = DefaultOptions();
  const auto pods = ModelJobPods(Kinds(), jobs, 80 * kGiB, o, sweep);
  ASSERT_EQ(pods.size(), 3u);
  EXPECT_EQ(sweep, (std::vector<char>{0, 1, 1}));
  EXPECT_EQ(pods[0].name, "job-0");
  EXPECT_EQ(pods[0].num_gpu, 2);  // the large model: its whole GPUs
  EXPECT_EQ(pods[1].num_gpu, 4);  // a sweep: max replicas
  EXPECT_EQ(pods[1].gpu_milli, 1000);
  EXPECT_EQ(pods[1].creation_time, 10);
  EXPECT_EQ(pods[1].deletion_time, 60);
  o.pct = 0;
  const auto none = ModelJobPods(Kinds(), jobs, 80 * kGiB, o, sweep);
  EXPECT_EQ(sweep, (std::vector<char>{0, 0, 0}));
  EXPECT_EQ(none[1].num_gpu, 1);
}

// One node of 4 GPUs: the large job holds 2 from t = 0 to 100; a sweep of
// 4 replicas (50 s at 4) arrives at 10. As a gang it waits for all 4 and
// runs 100..150. Elastic it starts at 10 on 1 GPU, grows to 2 at once,
// progresses at 2/4 until 100 (45 s of its 50 done), grows to 4 and ends
// at 105.
TEST(ModelElastic, HandComputedGangAndElastic) {
  const Topology t = MakeTopology({{80, 80, 80, 80}});
  const std::vector<ModelJob> jobs = {{1, 0, 100}, {0, 10, 50}};
  auto c = CompareModelElastic(t, Kinds(), jobs, DefaultOptions(), 1);
  ASSERT_TRUE(c) << c.error().message;
  const ElasticTimedRun& g = c->gang;
  const ElasticTimedRun& e = c->elastic;
  EXPECT_EQ(g.started, 2);
  EXPECT_EQ(g.elastic_pods, 1);
  EXPECT_DOUBLE_EQ(g.pod_jct_s[1], 140);
  EXPECT_DOUBLE_EQ(g.makespan_s, 150);
  EXPECT_DOUBLE_EQ(g.mean_jct_s, 120);
  EXPECT_DOUBLE_EQ(g.mean_wait_s, 45);
  EXPECT_EQ(g.grows, 0);
  EXPECT_EQ(e.started, 2);
  EXPECT_DOUBLE_EQ(e.pod_jct_s[0], 100);
  EXPECT_DOUBLE_EQ(e.pod_jct_s[1], 95);
  EXPECT_DOUBLE_EQ(e.mean_elastic_jct_s, 95);
  EXPECT_DOUBLE_EQ(e.makespan_s, 105);
  EXPECT_DOUBLE_EQ(e.mean_jct_s, 97.5);
  EXPECT_DOUBLE_EQ(e.mean_wait_s, 0);
  EXPECT_EQ(e.grows, 2);
  EXPECT_EQ(e.workers_grown, 3);
  // GPU-seconds: 1 x 0 s (it grows in its start's round) + 2 x 90 + 4 x 5.
  EXPECT_DOUBLE_EQ(e.pod_gpu_seconds[1], 200);
  EXPECT_DOUBLE_EQ(g.pod_gpu_seconds[1], 200);
}

// Sub-linear: speedup(k) = 1 + (k - 1) / 2; at 2 workers 1.5 / 2.5 = 0.6
// of its rate at 4, so the 50 s of work end at 10 + 50 / 0.6.
TEST(ModelElastic, SubLinearScalingUsesTheTimedModesSpeedup) {
  const Topology t = MakeTopology({{80, 80, 80, 80}});
  const std::vector<ModelJob> jobs = {{1, 0, 100}, {0, 10, 50}};
  ModelElasticOptions o = DefaultOptions();
  o.scaling_efficiency = 0.5;
  auto c = CompareModelElastic(t, Kinds(), jobs, o, 1);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_NEAR(c->elastic.pod_jct_s[1], 50 / 0.6, 1e-9);
  EXPECT_DOUBLE_EQ(c->gang.pod_jct_s[1], 140);
}

std::vector<ModelJob> Generated(uint64_t seed) {
  ModelWorkloadOptions w;
  w.jobs = 120;
  w.arrival_per_hour = 40;
  w.duration = *ParseDurationDistribution("exp:3600");
  return GenerateModelJobs(2, w, seed);
}

TEST(ModelElastic, WithoutSweepsOrWithMinEqualToMaxElasticIsTheGangRun) {
  const Topology t = MakeTopology({{80, 80, 80, 80}, {80, 80, 80, 80}});
  const std::vector<ModelJob> jobs = Generated(3);
  for (const int variant : {0, 1}) {
    ModelElasticOptions o = DefaultOptions();
    if (variant == 0) o.pct = 0;
    if (variant == 1) o.min_workers = o.max_workers;
    auto c = CompareModelElastic(t, Kinds(), jobs, o, 1);
    ASSERT_TRUE(c) << c.error().message;
    EXPECT_EQ(c->elastic.pod_jct_s, c->gang.pod_jct_s) << variant;
    EXPECT_DOUBLE_EQ(c->elastic.makespan_s, c->gang.makespan_s);
    EXPECT_EQ(c->elastic.grows, 0);
  }
}

TEST(ModelElastic, InvariantsAndDeterminismOnGeneratedJobs) {
  const Topology t = MakeTopology({{80, 80, 80, 80}, {80, 80, 80, 80}});
  for (const uint64_t seed : {1u, 2u}) {
    const std::vector<ModelJob> jobs = Generated(seed);
    ModelElasticOptions o = DefaultOptions();
    o.pct = 50;
    auto a = CompareModelElastic(t, Kinds(), jobs, o, 2);
    auto b = CompareModelElastic(t, Kinds(), jobs, o, 1);
    ASSERT_TRUE(a && b);
    EXPECT_EQ(a->elastic.pod_jct_s, b->elastic.pod_jct_s);
    EXPECT_EQ(a->gang.pod_jct_s, b->gang.pod_jct_s);
    std::vector<char> sweep;
    ModelJobPods(Kinds(), jobs, 80 * kGiB, o, sweep);
    int64_t sweeps = 0;
    for (const char s : sweep) sweeps += s;
    EXPECT_GT(sweeps, 0);
    EXPECT_EQ(a->elastic.elastic_pods, sweeps);
    for (const ElasticTimedRun* r : {&a->gang, &a->elastic}) {
      EXPECT_EQ(r->started, static_cast<int64_t>(jobs.size()));
      EXPECT_LE(r->mean_utilization_pct, 100 + 1e-9);
      for (size_t i = 0; i < jobs.size(); ++i) {
        // Nobody runs faster than at its full size.
        EXPECT_GE(r->pod_jct_s[i], jobs[i].duration_s - 1e-6) << i;
        EXPECT_EQ(r->pod_elastic[i], sweep[i]);
        // Linear scaling: a sweep holds duration x max GPU-seconds.
        if (sweep[i]) {
          EXPECT_NEAR(r->pod_gpu_seconds[i], jobs[i].duration_s * 4, 1e-3);
        }
      }
    }
  }
}

// The replay runs on the chosen pool's nodes alone: a sweep of 2 alone on
// the 2-GPU pool "other" holds all of it.
TEST(ModelElastic, RunsOnThePoolsNodesAlone) {
  const Topology t = testing::MakeTopology(
      {{80, 80, 80, 80}, {80, 80}}, {"default", "other"}, {"default", "other"});
  ModelElasticOptions o = DefaultOptions();
  o.max_workers = 2;
  o.pool = "other";
  auto c = CompareModelElastic(t, Kinds(), {{0, 0, 100}}, o, 1);
  ASSERT_TRUE(c) << c.error().message;
  for (const ElasticTimedRun* r : {&c->gang, &c->elastic}) {
    EXPECT_DOUBLE_EQ(r->makespan_s, 100);
    EXPECT_NEAR(r->mean_utilization_pct, 100, 1e-9);
  }
  // A sweep of 4 fits no node of "other": never placed.
  o.max_workers = 4;
  c = CompareModelElastic(t, Kinds(), {{0, 0, 100}}, o, 1);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->gang.unplaceable, 1);
}

TEST(ModelElastic, TheTimedReplayChecksExplicitMarks) {
  const Topology t = MakeTopology({{80, 80}});
  std::vector<char> sweep;
  const auto pods = ModelJobPods(Kinds(), {{0, 0, 10}, {0, 5, 10}}, 80 * kGiB,
                                 DefaultOptions(), sweep);
  ElasticTimedOptions o;
  o.elastic_pods = {1};
  auto r = RunTimedElastic(t, pods, o, true);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("1 marks for 2 pods"), std::string::npos)
      << r.error().message;
}

// The errors name ModelElasticOptions' fields (the CLI maps them to its
// flags).
TEST(ModelElastic, RefusesBadOptionsNamingTheField) {
  const Topology t = MakeTopology({{80, 80}});
  const std::vector<ModelJob> jobs = {{0, 0, 10}};
  auto bad = [&](ModelElasticOptions o, const std::string& what) {
    auto c = CompareModelElastic(t, Kinds(), jobs, o, 1);
    ASSERT_FALSE(c) << what;
    EXPECT_NE(c.error().message.find(what), std::string::npos)
        << c.error().message;
  };
  ModelElasticOptions o = DefaultOptions();
  o.pct = 101;
  bad(o, "pct: a percentage in 0..100, got 101");
  o = DefaultOptions();
  o.min_workers = 0;
  bad(o, "min_workers, max_workers: MIN:MAX with 1 <= MIN <= MAX, got 0:");
  o = DefaultOptions();
  o.min_workers = 5;
  bad(o, "min_workers, max_workers: MIN:MAX with 1 <= MIN <= MAX, got 5:");
  o = DefaultOptions();
  o.scaling_efficiency = 0;
  bad(o, "scaling_efficiency: in (0, 1]");
  o = DefaultOptions();
  o.pool = "nowhere";
  bad(o, "pool: unknown pool 'nowhere'");
  EXPECT_FALSE(
      CompareModelElastic(t, Kinds(), {{7, 0, 10}}, DefaultOptions(), 1));
}

}  // namespace
}  // namespace tessera::scheduler
