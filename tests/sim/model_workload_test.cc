// Model jobs on the queue: duration specs, the Poisson generator, the
// event-driven replay with interference (hand-computed cases), the three
// admissions, splitting over slivers, and the cluster's invariants.
#include "sim/model_workload.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "estimator/estimator.h"
#include "sim/model_analysis.h"
#include "tests/testlib/repo_paths.h"
#include "tests/testlib/test_topology.h"

namespace tessera::scheduler {

// The simulators under test (sim/).
using sim::Admission;
using sim::DurationDistribution;
using sim::FindSummary;
using sim::FractionDemand;
using sim::GenerateModelJobs;
using sim::JobOutcome;
using sim::kAdmissions;
using sim::kMinShareMilli;
using sim::MeanJctOfCommonJobs;
using sim::ModelExperimentOptions;
using sim::ModelJob;
using sim::ModelJobKind;
using sim::ModelSimOptions;
using sim::ModelSimResult;
using sim::ModelSummary;
using sim::ModelWorkloadOptions;
using sim::ParseDurationDistribution;
using sim::RunModelExperiment;
using sim::SimulateModelJobs;
using sim::SizeModelJobKinds;
using sim::SplitCache;
using sim::Summarize;
using sim::UtilizationPoint;
using sim::WholeDemand;

namespace {

using ::testing::HasSubstr;
using testing::kGiB;
using testing::MakeTopology;
using ::testing::StartsWith;

// A job kind that needs `mib` and cannot be split (no graph).
ModelJobKind WorkloadKind(const std::string& name, int64_t mib) {
  ModelJobKind k;
  k.name = name;
  k.demand_mib = mib;
  k.step_s = 0.1;
  return k;
}

ModelSimOptions Options(Admission a, double alpha) {
  ModelSimOptions o;
  o.admission = a;
  o.interference = InterferenceLaw::Linear(alpha);
  o.scorer = "best-fit";
  o.check_invariants = true;
  return o;
}

ModelSimResult Simulate(const Topology& t,
                        const std::vector<ModelJobKind>& kinds,
                        const std::vector<ModelJob>& jobs,
                        const ModelSimOptions& o) {
  auto r = SimulateModelJobs(t, kinds, jobs, o);
  EXPECT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->violation, "");
  return std::move(r).value();
}

TEST(ModelDuration, ParsesEveryDistribution) {
  auto l = ParseDurationDistribution("lognormal:7.0,1.0");
  ASSERT_TRUE(l) << l.error().message;
  EXPECT_EQ(l->kind, DurationDistribution::Kind::kLognormal);
  EXPECT_NEAR(l->Mean(), std::exp(7.5), 1e-6);
  auto e = ParseDurationDistribution("exp:3600");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, DurationDistribution::Kind::kExponential);
  EXPECT_DOUBLE_EQ(e->Mean(), 3600);
  auto u = ParseDurationDistribution("uniform:600,7200");
  ASSERT_TRUE(u);
  EXPECT_DOUBLE_EQ(u->Mean(), 3900);
  auto f = ParseDurationDistribution("fixed:1800");
  ASSERT_TRUE(f);
  std::mt19937_64 rng(1);
  EXPECT_DOUBLE_EQ(f->Sample(rng), 1800);
  for (int i = 0; i < 100; ++i) {
    const double x = u->Sample(rng);
    EXPECT_GE(x, 600);
    EXPECT_LE(x, 7200);
  }
}

TEST(ModelDuration, RejectsBadSpecsNamingTheField) {
  for (const char* bad :
       {"", "lognormal", "gamma:1,2", "exp:-1", "exp:0", "uniform:7200,600",
        "uniform:0,10", "fixed:abc", "fixed:1,2", "lognormal:1",
        "lognormal:7,-1", "exp:inf", "fixed:"}) {
    auto d = ParseDurationDistribution(bad);
    ASSERT_FALSE(d) << bad;
    EXPECT_EQ(d.error().code, ErrorCode::kBadInput) << bad;
    EXPECT_THAT(d.error().message,
                StartsWith("duration: '" + std::string(bad) + "': "))
        << bad;
    // A caller names the spec as its user knows it.
    auto named = ParseDurationDistribution(bad, "job duration");
    ASSERT_FALSE(named) << bad;
    EXPECT_THAT(named.error().message, StartsWith("job duration: '")) << bad;
  }
}

TEST(ModelWorkload, PoissonArrivalsAreSeededWithTheRightRate) {
  ModelWorkloadOptions o;
  o.jobs = 20000;
  o.arrival_per_hour = 30;
  o.duration = *ParseDurationDistribution("exp:600");
  const auto a = GenerateModelJobs(5, o, 7);
  const auto b = GenerateModelJobs(5, o, 7);
  const auto c = GenerateModelJobs(5, o, 8);
  ASSERT_EQ(a.size(), 20000u);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].arrival_s, b[i].arrival_s);
    EXPECT_EQ(a[i].kind, b[i].kind);
    EXPECT_EQ(a[i].duration_s, b[i].duration_s);
  }
  EXPECT_NE(a[0].arrival_s, c[0].arrival_s);
  // Mean gap 3600 / 30 = 120 s; its standard error here is 120 / sqrt(2e4).
  const double mean_gap = a.back().arrival_s / static_cast<double>(a.size());
  EXPECT_NEAR(mean_gap, 120, 120 * 0.03);
  std::vector<int> per_kind(5);
  double duration = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (i > 0) {
      EXPECT_GE(a[i].arrival_s, a[i - 1].arrival_s);
    }
    ++per_kind[a[i].kind];
    duration += a[i].duration_s;
  }
  for (const int n : per_kind) EXPECT_NEAR(n, 4000, 300);
  EXPECT_NEAR(duration / 20000, 600, 600 * 0.05);
}

TEST(ModelInterference, IsLinearInTheJobsSharing) {
  EXPECT_DOUBLE_EQ(InterferenceRate(0.5, 1), 1.0);
  EXPECT_DOUBLE_EQ(InterferenceRate(0.5, 2), 1 / 1.5);
  EXPECT_DOUBLE_EQ(InterferenceRate(0.25, 5), 0.5);
  EXPECT_DOUBLE_EQ(InterferenceRate(0, 7), 1.0);
}

TEST(ModelInterference, MeasuredLawChargesByBusyFractionAndSharing) {
  using estimator::GpuSharing;
  const InterferenceLaw ts;  // the default: measured, time-slicing
  EXPECT_FALSE(ts.alpha);
  EXPECT_EQ(ts.sharing, GpuSharing::kTimeslice);
  const auto mps = InterferenceLaw::Measured(GpuSharing::kMps);
  for (const double u : {0.0, 0.3, 0.94, 1.0}) {
    for (int k = 1; k <= 5; ++k) {
      EXPECT_DOUBLE_EQ(
          InterferenceRate(ts, u, k),
          1 / estimator::CoLocationSlowdown(GpuSharing::kTimeslice, u, k));
      EXPECT_DOUBLE_EQ(
          InterferenceRate(mps, u, k),
          1 / estimator::CoLocationSlowdown(GpuSharing::kMps, u, k));
    }
  }
  // The linear override ignores the busy fraction and the sharing mode.
  EXPECT_DOUBLE_EQ(InterferenceRate(InterferenceLaw::Linear(0.5), 0.1, 3), 0.5);
  EXPECT_EQ(InterferenceName(ts), "measured (timeslice)");
  EXPECT_EQ(InterferenceName(mps), "measured (mps)");
  EXPECT_EQ(InterferenceName(InterferenceLaw::Linear(0.25)), "alpha 0.25");
}

TEST(ModelDemandShapes, FollowTheMemoryShare) {
  const ModelJobKind small = WorkloadKind("s", 8 * kGiB);
  const ModelJobKind big = WorkloadKind("b", 100 * kGiB);
  const Resources f = FractionDemand(small, 80 * kGiB);
  EXPECT_EQ(f.gpus, 0);
  EXPECT_EQ(f.gpu_milli, 100);
  EXPECT_EQ(f.gpu_memory_mib, 8 * kGiB);
  EXPECT_EQ(FractionDemand(WorkloadKind("t", 10), 80 * kGiB).gpu_milli,
            kMinShareMilli);
  EXPECT_EQ(WholeDemand(small, 80 * kGiB).gpus, 1);
  EXPECT_EQ(WholeDemand(big, 80 * kGiB).gpus, 2);
}

// Two jobs on one GPU, alpha 0.5: job 1 runs alone for 10 s, then both at
// rate 1 / 1.5 until job 1 ends at 10 + 90 x 1.5 = 145; by then job 2 has
// done 135 / 1.5 = 90 and ends alone at 155. Whole GPUs: 0-100, 100-200.
TEST(ModelSimulation, TwoJobsSharingAGpuByHand) {
  const Topology t = MakeTopology({{80}});
  const std::vector<ModelJobKind> kinds = {WorkloadKind("a", 10 * kGiB)};
  const std::vector<ModelJob> jobs = {{0, 0, 100}, {0, 10, 100}};
  const auto f = Simulate(t, kinds, jobs, Options(Admission::kFraction, 0.5));
  EXPECT_EQ(f.completed, 2);
  EXPECT_NEAR(f.outcomes[0].finish_s, 145, 1e-9);
  EXPECT_NEAR(f.outcomes[1].finish_s, 155, 1e-9);
  EXPECT_NEAR(f.mean_jct_s, 145, 1e-9);
  EXPECT_NEAR(f.delay_mean_s, 0, 1e-12);
  EXPECT_EQ(f.max_running, 2);
  EXPECT_NEAR(f.makespan_s, 155, 1e-9);
  // Compute allocated: 125 milli for 10 s, 250 for 135 s, 125 for 10 s.
  EXPECT_NEAR(f.gpu_util_pct, 100.0 * (125 * 20 + 250 * 135) / (1000 * 155),
              1e-9);

  const auto w = Simulate(t, kinds, jobs, Options(Admission::kWhole, 0.5));
  EXPECT_NEAR(w.outcomes[0].finish_s, 100, 1e-9);
  EXPECT_NEAR(w.outcomes[1].start_s, 100, 1e-9);
  EXPECT_NEAR(w.outcomes[1].finish_s, 200, 1e-9);
  EXPECT_NEAR(w.mean_jct_s, 145, 1e-9);
  EXPECT_NEAR(w.delay_mean_s, 45, 1e-9);
  EXPECT_NEAR(w.delay_p95_s, 90, 1e-9);
  EXPECT_NEAR(w.gpu_util_pct, 100.0, 1e-9);
  EXPECT_NEAR(w.memory_util_pct, 100.0 * 10 / 80, 1e-9);

  // Started together with alpha 1 they take twice as long: pure sharing.
  const std::vector<ModelJob> together = {{0, 0, 100}, {0, 0, 100}};
  const auto s1 =
      Simulate(t, kinds, together, Options(Admission::kFraction, 1.0));
  EXPECT_NEAR(s1.mean_jct_s, 200, 1e-9);
  const auto s0 =
      Simulate(t, kinds, together, Options(Admission::kFraction, 0.0));
  EXPECT_NEAR(s0.mean_jct_s, 100, 1e-9);
}

// The measured law by hand: two jobs of 100 s started together on one GPU
// share it for their whole run, each at 1 / slowdown(u, 2).
TEST(ModelSimulation, TwoJobsUnderTheMeasuredLawByHand) {
  using estimator::GpuSharing;
  const Topology t = MakeTopology({{80}});
  const std::vector<ModelJob> together = {{0, 0, 100}, {0, 0, 100}};
  for (const double u : {1.0, 0.5, 0.0}) {
    std::vector<ModelJobKind> kinds = {WorkloadKind("a", 10 * kGiB)};
    kinds[0].busy_fraction = u;
    for (const GpuSharing mode : {GpuSharing::kTimeslice, GpuSharing::kMps}) {
      ModelSimOptions o = Options(Admission::kFraction, 0);
      o.interference = InterferenceLaw::Measured(mode);
      const auto r = Simulate(t, kinds, together, o);
      EXPECT_NEAR(r.mean_jct_s, 100 * estimator::CoLocationSlowdown(mode, u, 2),
                  1e-9)
          << u;
      EXPECT_EQ(r.interference, o.interference);
    }
  }
  // u = 1 under time-slicing: more than twice as long (the switches).
  std::vector<ModelJobKind> busy = {WorkloadKind("a", 10 * kGiB)};
  busy[0].busy_fraction = 1;
  ModelSimOptions o = Options(Admission::kFraction, 0);
  o.interference = InterferenceLaw{};
  EXPECT_NEAR(Simulate(t, busy, together, o).mean_jct_s,
              200 * estimator::kTimesliceCost, 1e-9);
  // Whole GPUs share nothing: the law does not touch them.
  o.admission = Admission::kWhole;
  EXPECT_NEAR(Simulate(t, busy, together, o).mean_jct_s, 150, 1e-9);
}

TEST(ModelSimulation, FractionsRunMoreJobsAtOnceThanWholeGpus) {
  const Topology t = MakeTopology({{80, 80}});
  const std::vector<ModelJobKind> kinds = {WorkloadKind("a", 10 * kGiB),
                                           WorkloadKind("b", 30 * kGiB)};
  std::vector<ModelJob> jobs;
  for (int i = 0; i < 8; ++i) jobs.push_back({i % 2, i * 1.0, 1000});
  const auto w = Simulate(t, kinds, jobs, Options(Admission::kWhole, 0));
  const auto f = Simulate(t, kinds, jobs, Options(Admission::kFraction, 0));
  EXPECT_EQ(w.max_running, 2);
  EXPECT_EQ(f.max_running, 8);  // 4 x (10 + 30) GiB fits 2 x 80 GiB
  EXPECT_EQ(w.completed, 8);
  EXPECT_EQ(f.completed, 8);
  EXPECT_LT(f.mean_jct_s, w.mean_jct_s);
  EXPECT_LT(f.delay_p95_s, w.delay_p95_s);
  // No graphs: split can only do what fraction does.
  const auto s = Simulate(t, kinds, jobs, Options(Admission::kSplit, 0));
  EXPECT_EQ(s.mean_jct_s, f.mean_jct_s);
  EXPECT_EQ(s.split_jobs, 0);
}

TEST(ModelSimulation, JobsThatNeverFitAreCountedNotQueued) {
  const Topology t = MakeTopology({{80, 80}});
  const std::vector<ModelJobKind> kinds = {WorkloadKind("a", 10 * kGiB),
                                           WorkloadKind("huge", 100 * kGiB),
                                           WorkloadKind("giant", 200 * kGiB)};
  const std::vector<ModelJob> jobs = {{1, 0, 50}, {2, 1, 50}, {0, 2, 50}};
  const auto w = Simulate(t, kinds, jobs, Options(Admission::kWhole, 0));
  EXPECT_EQ(w.never_ran, 1);  // giant needs 3 GPUs of a 2-GPU node
  EXPECT_EQ(w.completed, 2);
  EXPECT_EQ(w.outcomes[0].gpus, 2);
  const auto f = Simulate(t, kinds, jobs, Options(Admission::kFraction, 0));
  EXPECT_EQ(f.never_ran, 2);  // neither fits one GPU
  EXPECT_EQ(f.completed, 1);
  EXPECT_NEAR(f.outcomes[2].start_s, 2, 1e-12);  // nothing blocks it
}

// Many random arrivals on a small cluster: never over capacity, every job
// accounted for, the utilization within bounds.
TEST(ModelSimulation, KeepsTheInvariantsUnderLoad) {
  const Topology t = MakeTopology({{80, 80, 40}, {40, 40}});
  std::vector<ModelJobKind> kinds;
  for (const int gib : {3, 7, 15, 22, 35, 60, 90}) {
    kinds.push_back(WorkloadKind("k" + std::to_string(gib), gib * kGiB));
  }
  ModelWorkloadOptions w;
  w.jobs = 150;
  w.arrival_per_hour = 60;
  w.duration = *ParseDurationDistribution("lognormal:7,1");
  for (const uint64_t seed : {1, 2, 3}) {
    const auto jobs =
        GenerateModelJobs(static_cast<int>(kinds.size()), w, seed);
    for (const Admission a : kAdmissions) {
      // alpha -1: the measured law (time-slicing, u = 0.94).
      for (const double alpha : {0.0, 0.7, -1.0}) {
        for (const char* policy : {"fifo", "backfill"}) {
          ModelSimOptions o = Options(a, alpha);
          if (alpha < 0) o.interference = InterferenceLaw{};
          o.queue_policy = policy;
          o.scorer = "tessera";
          const auto r = Simulate(t, kinds, jobs, o);
          EXPECT_EQ(r.completed + r.never_ran, r.jobs);
          for (const UtilizationPoint& p : r.utilization) {
            EXPECT_LE(p.gpu_pct, 100.0 + 1e-9);
            EXPECT_LE(p.memory_pct, 100.0 + 1e-9);
          }
          for (size_t j = 0; j < jobs.size(); ++j) {
            const JobOutcome& out = r.outcomes[j];
            if (!out.ran) continue;
            EXPECT_GE(out.start_s, jobs[j].arrival_s);
            // Never faster than alone, and at most the law's slowdown
            // with k = the jobs running at most.
            const double run = out.finish_s - out.start_s;
            const double worst =
                1 / InterferenceRate(o.interference,
                                     kinds[jobs[j].kind].busy_fraction,
                                     r.max_running);
            EXPECT_GE(run, jobs[j].duration_s * (1 - 1e-9));
            EXPECT_LE(run, jobs[j].duration_s * worst * (1 + 1e-9));
          }
        }
      }
    }
  }
}

// The errors name ModelSimOptions' fields (the CLI maps them to its flags).
TEST(ModelSimulation, RejectsUnknownScorerPolicyAndPool) {
  const Topology t = MakeTopology({{80}});
  const std::vector<ModelJobKind> kinds = {WorkloadKind("a", kGiB)};
  ModelSimOptions o = Options(Admission::kFraction, 0);
  o.scorer = "nope";
  auto r = SimulateModelJobs(t, kinds, {{0, 0, 1}}, o);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, StartsWith("scorer: "));
  o = Options(Admission::kFraction, 0);
  o.queue_policy = "nope";
  r = SimulateModelJobs(t, kinds, {{0, 0, 1}}, o);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, StartsWith("queue_policy: "));
  o = Options(Admission::kFraction, 0);
  o.pool = "nope";
  r = SimulateModelJobs(t, kinds, {{0, 0, 1}}, o);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, StartsWith("pool: unknown pool 'nope'"));
  o = Options(Admission::kFraction, 0);
  EXPECT_FALSE(SimulateModelJobs(t, kinds, {{3, 0, 1}}, o));
}

// The comparison on equal work: only jobs every run completed count.
TEST(ModelExperiment, ComparesJctOverTheJobsEveryRunCompleted) {
  const Topology t = MakeTopology({{80, 80}});
  const std::vector<ModelJobKind> kinds = {WorkloadKind("a", 10 * kGiB),
                                           WorkloadKind("huge", 100 * kGiB)};
  const std::vector<ModelJob> jobs = {{0, 0, 100}, {1, 0, 500}, {0, 0, 100}};
  const auto w = Simulate(t, kinds, jobs, Options(Admission::kWhole, 0));
  const auto f = Simulate(t, kinds, jobs, Options(Admission::kFraction, 0));
  // Whole: job 0 on one GPU; huge waits for both (FIFO) until 100, so job
  // 2 waits behind it until 600. Fraction never runs huge.
  EXPECT_NEAR(w.outcomes[2].finish_s, 700, 1e-9);
  EXPECT_EQ(f.never_ran, 1);
  const auto jct = MeanJctOfCommonJobs({&w, &f});
  ASSERT_EQ(jct.size(), 2u);
  EXPECT_NEAR(jct[0], (100 + 700) / 2.0, 1e-9);
  EXPECT_NEAR(jct[1], 100, 1e-9);
  EXPECT_NEAR(f.mean_jct_s, 100, 1e-9);
  EXPECT_NEAR(w.mean_jct_s, (100 + 600 + 700) / 3.0, 1e-9);
}

TEST(ModelExperiment, ReplaysTheSameArrivalsUnderEveryAdmission) {
  const Topology t = MakeTopology({{80, 80}});
  const std::vector<ModelJobKind> kinds = {WorkloadKind("a", 10 * kGiB),
                                           WorkloadKind("b", 50 * kGiB)};
  ModelExperimentOptions o;
  o.workload.jobs = 40;
  o.workload.arrival_per_hour = 20;
  o.workload.duration = *ParseDurationDistribution("exp:1800");
  o.sim.scorer = "best-fit";
  o.interference = {InterferenceLaw::Linear(0), InterferenceLaw::Linear(1)};
  o.seeds = 2;
  o.threads = 2;
  SplitCache cache;
  auto a = RunModelExperiment(t, kinds, o, cache);
  ASSERT_TRUE(a) << a.error().message;
  ASSERT_EQ(a->size(), 16u);  // 2 seeds x 2 alphas x 4 admissions
  EXPECT_EQ((*a)[0].admission, Admission::kWhole);
  EXPECT_EQ((*a)[1].admission, Admission::kFraction);
  EXPECT_EQ((*a)[3].admission, Admission::kTessera);
  EXPECT_EQ((*a)[4].interference, InterferenceLaw::Linear(1));
  EXPECT_EQ((*a)[8].seed, 43u);
  auto b = RunModelExperiment(t, kinds, o, cache);
  ASSERT_TRUE(b);
  for (size_t i = 0; i < a->size(); ++i) {
    EXPECT_EQ((*a)[i].mean_jct_s, (*b)[i].mean_jct_s);
  }
  // With no interference, fraction packs the 50 GiB and 10 GiB jobs
  // together and waits less than whole GPUs.
  EXPECT_LT((*a)[1].delay_mean_s, (*a)[0].delay_mean_s);
  // Whole GPUs are untouched by interference.
  EXPECT_EQ((*a)[0].mean_jct_s, (*a)[4].mean_jct_s);
  o.seeds = 0;
  EXPECT_FALSE(RunModelExperiment(t, kinds, o, cache));
}

// The default experiment runs the measured law; laws of both kinds can
// sit side by side and each run is labelled with its own.
TEST(ModelExperiment, DefaultsToTheMeasuredLaw) {
  const Topology t = MakeTopology({{80, 80}});
  const std::vector<ModelJobKind> kinds = {WorkloadKind("a", 10 * kGiB),
                                           WorkloadKind("b", 50 * kGiB)};
  ModelExperimentOptions o;
  o.workload.jobs = 30;
  o.workload.arrival_per_hour = 20;
  o.workload.duration = *ParseDurationDistribution("exp:1800");
  o.sim.scorer = "best-fit";
  ASSERT_EQ(o.interference.size(), 1u);
  EXPECT_EQ(o.interference[0], InterferenceLaw{});
  EXPECT_EQ(ModelSimOptions{}.interference, InterferenceLaw{});
  o.interference.push_back(
      InterferenceLaw::Measured(estimator::GpuSharing::kMps));
  o.interference.push_back(InterferenceLaw::Linear(0));
  SplitCache cache;
  auto r = RunModelExperiment(t, kinds, o, cache);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->size(), 12u);  // 3 laws x 4 admissions
  EXPECT_EQ((*r)[1].interference, InterferenceLaw{});
  EXPECT_EQ((*r)[5].interference.sharing, estimator::GpuSharing::kMps);
  EXPECT_EQ((*r)[9].interference, InterferenceLaw::Linear(0));
  // Fractions share GPUs: time-slicing costs them more than MPS, and MPS
  // more than free sharing; whole GPUs are untouched.
  EXPECT_GT((*r)[1].mean_jct_s, (*r)[5].mean_jct_s);
  EXPECT_GT((*r)[5].mean_jct_s, (*r)[9].mean_jct_s);
  EXPECT_EQ((*r)[0].mean_jct_s, (*r)[4].mean_jct_s);
  o.interference = {InterferenceLaw::Linear(-0.5)};
  auto bad = RunModelExperiment(t, kinds, o, cache);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "interference.alpha: must be >= 0");
}

// The experiment's and the sizing's errors name their fields
// (ModelExperimentOptions, SizeModelJobKinds's arguments), not a CLI's flags.
TEST(ModelExperiment, BadOptionsNameTheField) {
  const Topology t = MakeTopology({{80}});
  const std::vector<ModelJobKind> kinds = {WorkloadKind("a", kGiB)};
  SplitCache cache;
  auto message = [&](const ModelExperimentOptions& o) {
    auto r = RunModelExperiment(t, kinds, o, cache);
    return r ? std::string() : r.error().message;
  };
  ModelExperimentOptions o;
  o.seeds = 0;
  EXPECT_EQ(message(o), "seeds: must be at least 1");
  o = {};
  o.workload.jobs = 0;
  EXPECT_EQ(message(o), "workload.jobs: must be at least 1");
  o = {};
  o.workload.arrival_per_hour = 0;
  EXPECT_EQ(message(o), "workload.arrival_per_hour: must be > 0");
  o = {};
  o.interference.clear();
  EXPECT_EQ(message(o), "interference: no values");
  auto none = SizeModelJobKinds({}, {1}, "a100-80gb", 0.1, 1);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().message, "paths: no model files");
  auto zero = SizeModelJobKinds({"a.onnx"}, {0}, "a100-80gb", 0.1, 1);
  ASSERT_FALSE(zero);
  EXPECT_EQ(zero.error().message, "batches: 0 is not a positive batch size");
}

// GPT-2 training at batch 1, sized once for the split tests.
const std::vector<ModelJobKind>& Gpt2() {
  static const std::vector<ModelJobKind> kinds = [] {
    auto k = SizeModelJobKinds(
        {std::string(TESSERA_SOURCE_DIR) + "/models/zoo/gpt2.onnx"}, {1},
        "a100-80gb", 0.10, 1);
    EXPECT_TRUE(k) << k.error().message;
    return k ? *k : std::vector<ModelJobKind>{};
  }();
  return kinds;
}

// A kind's busy fraction is the PyTorch runtime model's, for the same
// training step on the same GPU kind.
TEST(ModelWorkload, KindsCarryTheRuntimeModelsBusyFraction) {
  ASSERT_EQ(Gpt2().size(), 1u);
  const ModelJobKind& gpt2 = Gpt2().front();
  const auto catalog = estimator::DeviceCatalog::BuiltIn();
  estimator::ProfileOptions options;
  options.training = true;
  options.runtime.runtime = estimator::Runtime::kPyTorch;
  auto p = estimator::ProfileModel(*gpt2.sized.model,
                                   *catalog.Find("a100-80gb"), options);
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_DOUBLE_EQ(gpt2.busy_fraction, p->runtime->gpu_busy_fraction());
  EXPECT_GT(gpt2.busy_fraction, 0);
  EXPECT_LE(gpt2.busy_fraction, 1);
}

// Two A100s, each holding 70% of GPT-2's demand.
Topology TwoSmallA100s(const ModelJobKind& gpt2) {
  Topology t = MakeTopology({{1, 1}});
  for (GpuInfo& g : t.gpus) {
    g.kind = "a100-80gb";
    g.memory_mib = gpt2.demand_mib * 7 / 10;
  }
  return t;
}

// GPT-2 training on two GPUs too small for it alone: fraction never runs
// it, whole GPUs take both, and split runs it over the two slivers as a
// gang at the placer's step.
TEST(ModelSplit, AdmitsAJobThatFitsNoSingleGpu) {
  const std::vector<ModelJobKind>& kinds = Gpt2();
  ASSERT_EQ(kinds.size(), 1u);
  const ModelJobKind& gpt2 = kinds.front();
  EXPECT_EQ(gpt2.name, "gpt2/b1");
  EXPECT_GT(gpt2.demand_mib, kGiB);
  EXPECT_GT(gpt2.step_s, 0);
  const Topology t = TwoSmallA100s(gpt2);
  const std::vector<ModelJob> jobs = {{0, 0, 1000}};
  const auto f = Simulate(t, kinds, jobs, Options(Admission::kFraction, 0));
  EXPECT_EQ(f.never_ran, 1);
  const auto w = Simulate(t, kinds, jobs, Options(Admission::kWhole, 0));
  EXPECT_EQ(w.completed, 1);
  EXPECT_EQ(w.outcomes[0].gpus, 2);
  SplitCache cache;
  auto s =
      SimulateModelJobs(t, kinds, jobs, Options(Admission::kSplit, 0), &cache);
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->violation, "");
  EXPECT_EQ(s->completed, 1);
  EXPECT_EQ(s->split_jobs, 1);
  EXPECT_TRUE(s->outcomes[0].split);
  EXPECT_EQ(s->outcomes[0].gpus, 2);
  // A split step is never faster than one whole GPU's.
  EXPECT_GE(s->mean_jct_s, 1000 * (1 - 1e-9));
  EXPECT_GT(cache.placer_calls(), 0);
  EXPECT_GT(cache.hits(), 0);  // the empty-cluster check, then the start
}

// The split cache skips the placer for GPUs SplitAcrossSlivers would not
// use; its threshold must be the service's: 100 free milli make a sliver,
// 99 do not.
TEST(ModelSplit, SliverThresholdMatchesTheService) {
  ASSERT_EQ(Gpt2().size(), 1u);
  const ModelJobKind& gpt2 = Gpt2().front();
  const Topology t = TwoSmallA100s(gpt2);
  for (const int free : {100, 99}) {
    ClusterState state(t);
    for (int g = 0; g < 2; ++g) {
      Allocation a{0, {{g, kFullGpuMilli - free, 0}}, 0, 0, false};
      ASSERT_TRUE(state.Reserve(g + 1, a).ok());
    }
    const bool service =
        SplitAcrossSlivers(state, "default", gpt2.sized, 0.10).has_value();
    SplitCache cache;
    const bool cached =
        cache.Find(state, "default", 0, gpt2, 0.10).allocation.has_value();
    EXPECT_EQ(service, free >= 100) << free;
    EXPECT_EQ(cached, service) << free;
    EXPECT_EQ(cache.filtered(), free >= 100 ? 0 : 1) << free;
  }
}

// The cache answers as SplitAcrossSlivers does, placer skipped or not, on
// random states of a node of four GPUs each holding half of GPT-2.
TEST(ModelSplit, CacheAnswersAsTheServiceOnRandomStates) {
  ASSERT_EQ(Gpt2().size(), 1u);
  const ModelJobKind& gpt2 = Gpt2().front();
  Topology t = MakeTopology({{1, 1, 1, 1}});
  for (GpuInfo& g : t.gpus) {
    g.kind = "a100-80gb";
    g.memory_mib = gpt2.demand_mib / 2;
  }
  std::mt19937_64 rng(5);
  SplitCache cache;
  int splits = 0;
  for (int trial = 0; trial < 15; ++trial) {
    ClusterState state(t);
    for (int g = 0; g < 4; ++g) {
      const int milli = std::uniform_int_distribution<int>(0, 1000)(rng);
      const int64_t mib =
          std::uniform_int_distribution<int64_t>(0, t.gpus[g].memory_mib)(rng);
      ASSERT_TRUE(
          state.Reserve(g + 1, {0, {{g, milli, mib}}, 0, 0, false}).ok());
    }
    const auto service = SplitAcrossSlivers(state, "default", gpt2.sized, 0.10);
    const auto cached = cache.Find(state, "default", 0, gpt2, 0.10).allocation;
    ASSERT_EQ(cached.has_value(), service.has_value()) << trial;
    if (!service) continue;
    ++splits;
    ASSERT_EQ(cached->gpus.size(), service->allocation.gpus.size());
    for (size_t i = 0; i < cached->gpus.size(); ++i) {
      EXPECT_EQ(cached->gpus[i], service->allocation.gpus[i]);
    }
  }
  EXPECT_GT(splits, 0);
  EXPECT_GT(cache.filtered(), 0);
}

// Runs in parallel share the split cache and place concurrently; the
// results do not depend on the number of threads.
TEST(ModelSplit, ExperimentIsTheSameOnOneThreadOrTwo) {
  ASSERT_EQ(Gpt2().size(), 1u);
  std::vector<ModelJobKind> kinds = {Gpt2().front(), WorkloadKind("small", 1)};
  kinds[1].demand_mib = Gpt2().front().demand_mib / 4;
  Topology t = MakeTopology({{1, 1, 1}});
  for (GpuInfo& g : t.gpus) {
    g.kind = "a100-80gb";
    g.memory_mib = Gpt2().front().demand_mib * 7 / 10;
  }
  ModelExperimentOptions o;
  o.workload.jobs = 12;
  o.workload.arrival_per_hour = 10;
  o.workload.duration = *ParseDurationDistribution("exp:1200");
  o.interference = {InterferenceLaw::Linear(0), InterferenceLaw::Linear(0.5)};
  o.seeds = 2;
  std::vector<std::vector<ModelSimResult>> runs;
  for (const int threads : {1, 2}) {
    o.threads = threads;
    SplitCache cache;
    auto r = RunModelExperiment(t, kinds, o, cache);
    ASSERT_TRUE(r) << r.error().message;
    runs.push_back(std::move(r).value());
  }
  int64_t splits = 0;
  for (size_t i = 0; i < runs[0].size(); ++i) {
    EXPECT_EQ(runs[0][i].mean_jct_s, runs[1][i].mean_jct_s) << i;
    EXPECT_EQ(runs[0][i].split_jobs, runs[1][i].split_jobs) << i;
    splits += runs[0][i].split_jobs;
  }
  EXPECT_GT(splits, 0);
}

// The tessera admission decides per job by predicted finish: where
// sharing is free it shares like fraction, where it costs more throughput
// than it gives it waits for whole GPUs like whole; the same arrivals.
TEST(ModelExperiment, TesseraFollowsTheBestFixedAdmission) {
  const Topology t = MakeTopology({{80, 80}, {80, 80}});
  std::vector<ModelJobKind> kinds;
  for (const int gib : {5, 10, 20, 35}) {
    kinds.push_back(WorkloadKind("k" + std::to_string(gib), gib * kGiB));
  }
  ModelExperimentOptions o;
  o.workload.jobs = 120;
  o.workload.arrival_per_hour = 12;
  o.workload.duration = *ParseDurationDistribution("lognormal:7,1");
  o.sim.scorer = "tessera";
  o.interference = {InterferenceLaw::Linear(0), InterferenceLaw::Linear(1.5)};
  o.seeds = 3;
  o.threads = 2;
  SplitCache cache;
  auto r = RunModelExperiment(t, kinds, o, cache);
  ASSERT_TRUE(r) << r.error().message;
  const std::vector<ModelSummary> all = Summarize(*r, o.interference);
  auto jct = [&](Admission a, double alpha) {
    return FindSummary(all, a, InterferenceLaw::Linear(alpha)).jct_common;
  };
  EXPECT_LE(jct(Admission::kTessera, 0), 1.02 * jct(Admission::kFraction, 0));
  EXPECT_LT(jct(Admission::kTessera, 0), 0.5 * jct(Admission::kWhole, 0));
  EXPECT_LE(jct(Admission::kTessera, 1.5), 1.02 * jct(Admission::kWhole, 1.5));
  EXPECT_LT(jct(Admission::kTessera, 1.5),
            0.9 * jct(Admission::kFraction, 1.5));
  for (const ModelSimResult& x : *r) {
    EXPECT_EQ(x.completed, x.jobs);
    if (x.admission == Admission::kTessera && x.interference.alpha == 1.5) {
      EXPECT_GT(x.decided_waits, 0);  // it chose to wait, more than once
    }
  }
}

}  // namespace
}  // namespace tessera::scheduler
