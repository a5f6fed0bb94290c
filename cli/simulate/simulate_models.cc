// `tessera simulate --mode models`: model jobs from the zoo on a serve
// config's cluster under three admissions (whole GPUs, fractions, fractions
// plus splitting), under the co-location slowdown measured on an H100 or
// one or several linear interference factors.
// sim/model_workload.h does the work and sim/model_analysis.h sums it up; this
// file prints (docs/simulate_models.md).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "cli/output.h"
#include "cli/simulate/simulate.h"
#include "cli/simulate/simulate_elastic.h"
#include "cli/simulate/svg_chart.h"
#include "common/strings.h"
#include "estimator/interference.h"
#include "scheduler/admission.h"
#include "scheduler/policy.h"
#include "server/serve_config.h"
#include "sim/model_analysis.h"
#include "sim/model_workload.h"

namespace tessera::cli {
namespace {

namespace fs = std::filesystem;
using scheduler::InterferenceLaw;
using sim::Admission;
using sim::Crossover;
using sim::FindSummary;
using sim::ModelJobKind;
using sim::ModelSimResult;
using sim::ModelSummary;
using sim::Summarize;
using Summary = sim::ModelSummary;

constexpr const char* kZoo = "models/zoo";

// The fields the model-job replay's errors name (sim::ModelExperimentOptions
// and the ModelSimOptions of each run, SizeModelJobKinds's model paths and
// batches, the pool), and their flags (WithFlagNames).
constexpr FieldFlag kModelsFlags[] = {
    {"duration", "--duration"},
    {"pool", "--pool"},
    {"paths", "--models"},
    {"batches", "--batches"},
    {"seeds", "--seeds"},
    {"workload.jobs", "--jobs"},
    {"workload.arrival_per_hour", "--arrival-rate"},
    {"interference", "--interference-sweep"},
    {"interference.alpha", "--interference"},
    {"scorer", "--policy"},
    {"queue_policy", "--queue-policy"},
    {"sharing", "--sharing"}};

// Everything the command read and decided before the runs.
struct Setup {
  scheduler::Topology topology;
  std::string pool;
  scheduler::GpuInfo gpu;
  int pool_gpus = 0;
  double headroom = 0;
  sim::DurationDistribution duration;
  std::vector<std::string> models;
  std::vector<InterferenceLaw> laws;  // several: a sweep of linear laws
};

Result<std::vector<std::string>> ModelFiles(const SimulateArgs& args) {
  if (!args.models.empty()) {
    for (const std::string& m : args.models) {
      std::error_code ec;
      if (!fs::is_regular_file(m, ec)) {
        return BadInput("--models: " + m + ": no such file");
      }
    }
    return args.models;
  }
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(kZoo, ec)) {
    if (e.path().extension() == ".onnx") files.push_back(e.path().string());
  }
  if (files.empty()) {
    return BadInput(std::string("--models: none given, and no ") + kZoo +
                    "/*.onnx under the working directory");
  }
  std::sort(files.begin(), files.end());
  return files;
}

Status CheckArgs(const SimulateArgs& args) {
  if (args.jobs < 1) return BadInput("--jobs: must be at least 1");
  if (!(args.arrival_per_hour > 0)) {
    return BadInput("--arrival-rate: must be > 0 jobs per hour");
  }
  if (args.seeds < 1) return BadInput("--seeds: must be at least 1");
  if (args.interference && !(*args.interference >= 0)) {
    return BadInput("--interference: must be >= 0");
  }
  if (args.sharing) {
    if (auto s = estimator::ParseGpuSharing(*args.sharing); !s) {
      return WithFlagNames(s.error(), kModelsFlags);
    }
    if (args.interference || !args.interference_sweep.empty()) {
      return BadInput(
          "--sharing: applies to the measured co-location slowdown, which "
          "--interference and --interference-sweep replace");
    }
  }
  for (const double a : args.interference_sweep) {
    if (!(a >= 0)) {
      return BadInput("--interference-sweep: " + Fixed(a, 3) + " is negative");
    }
  }
  const auto known = scheduler::ScorerNames();
  if (std::find(known.begin(), known.end(), args.policy) == known.end()) {
    std::string list;
    for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
    return BadInput("--policy: models mode compares admissions under one " +
                    std::string("scorer; '") + args.policy + "' is none of " +
                    list);
  }
  scheduler::PolicyConfig queue;
  queue.name = args.queue_policy;
  if (auto p = scheduler::MakePolicy(queue); !p) {
    return p.error().WithContext("--queue-policy");
  }
  return {};
}

Result<Setup> Prepare(const SimulateArgs& args) {
  TESSERA_RETURN_IF_ERROR(CheckArgs(args));
  Setup s;
  auto duration = sim::ParseDurationDistribution(args.duration);
  if (!duration) return WithFlagNames(duration.error(), kModelsFlags);
  s.duration = *duration;
  auto config = server::LoadServeConfig(args.config);
  if (!config) return config.error();
  s.topology = config->service.topology;
  s.headroom = config->service.model_headroom;
  auto pool = sim::ResolveModelPool(s.topology, args.pool);
  if (!pool) return WithFlagNames(pool.error(), kModelsFlags);
  s.pool = *pool;
  const scheduler::GpuInfo* gpu = sim::PoolGpu(s.topology, s.pool);
  if (gpu == nullptr) {
    return BadInput(args.config + ": pool '" + s.pool + "' has no GPUs");
  }
  s.gpu = *gpu;
  for (const auto& n : s.topology.nodes) {
    if (n.pool == s.pool) s.pool_gpus += static_cast<int>(n.gpus.size());
  }
  auto models = ModelFiles(args);
  if (!models) return models.error();
  s.models = std::move(models).value();
  std::vector<double> alphas = args.interference_sweep;
  if (alphas.empty() && args.interference) alphas = {*args.interference};
  std::sort(alphas.begin(), alphas.end());
  alphas.erase(std::unique(alphas.begin(), alphas.end()), alphas.end());
  for (const double a : alphas) s.laws.push_back(InterferenceLaw::Linear(a));
  if (s.laws.empty()) {
    s.laws.push_back(InterferenceLaw::Measured(
        *estimator::ParseGpuSharing(args.sharing.value_or("timeslice"))));
  }
  return s;
}

// The law as the text output names it: the measured one with its formula.
std::string LawText(const InterferenceLaw& law) {
  if (law.alpha) return "alpha = " + Fixed(*law.alpha, 2);
  const bool mps = law.sharing == estimator::GpuSharing::kMps;
  return "measured on an H100, " +
         std::string(estimator::GpuSharingName(law.sharing)) +
         " (k jobs on a GPU: step x " +
         (mps ? "(1 + " + Fixed(estimator::kMpsOverlapCost, 3) + " (k - 1) u)"
              : "(1 + u (" + Fixed(estimator::kTimesliceCost, 3) + " k - 1))") +
         ", u: GPU busy)";
}

std::string Conclusion(const std::vector<Summary>& all, Admission a,
                       const std::vector<InterferenceLaw>& laws) {
  auto ratio = [&](const InterferenceLaw& law) {
    const double whole = FindSummary(all, Admission::kWhole, law).jct_common;
    return whole > 0 ? FindSummary(all, a, law).jct_common / whole : 1.0;
  };
  const std::string name(AdmissionName(a));
  const double first = ratio(laws.front()), last = ratio(laws.back());
  if (!laws.front().alpha) {
    return name + (first < 1 ? " beats" : " does not beat") +
           " whole GPUs on mean JCT under the " +
           scheduler::InterferenceName(laws.front()) + " slowdown (" +
           Fixed(first, 2) + "x)";
  }
  const std::string range =
      Fixed(first, 2) + "x at alpha " + Fixed(*laws.front().alpha, 2) + ", " +
      Fixed(last, 2) + "x at " + Fixed(*laws.back().alpha, 2);
  if (auto x = Crossover(all, a, laws)) {
    return name + (first < 1 ? " beats" : " trails") +
           " whole GPUs on mean JCT up to alpha ~ " + Fixed(*x, 2) +
           (first < 1 ? " and loses" : " and wins") + " beyond (" + range + ")";
  }
  return name + (first < 1 ? " beats" : " does not beat") +
         " whole GPUs on mean JCT at every alpha swept (" + range + ")";
}

// tessera's mean JCT (over the jobs every admission completed) against
// the best of the fixed admissions under one law, seed by seed.
// The best fixed admission is the one with the lowest mean over seeds
// among those that completed as many jobs as tessera;
// the ratio is seed by seed (paired: the same arrivals), with its
// standard error.
struct TesseraVsBest {
  std::string best_name;
  double best = 0, tessera = 0;
  sim::PairedRatio paired;
};
TesseraVsBest CompareWithBest(const std::vector<ModelSimResult>& results,
                              const std::vector<Summary>& all,
                              const InterferenceLaw& law) {
  TesseraVsBest v;
  Admission best = Admission::kWhole;
  // Only admissions that ran the jobs tessera ran: one that never runs the
  // jobs no single GPU holds keeps them out of everyone's queue.
  const double ran = FindSummary(all, Admission::kTessera, law).completed;
  for (const Admission a : sim::kFixedAdmissions) {
    if (FindSummary(all, a, law).completed < ran - 0.5) continue;
    const double j = FindSummary(all, a, law).jct_common;
    if (v.best_name.empty() || j < v.best) {
      v.best = j;
      v.best_name = std::string(AdmissionName(a));
      best = a;
    }
  }
  v.tessera = FindSummary(all, Admission::kTessera, law).jct_common;
  v.paired = sim::CompareSeedBySeed(results, Admission::kTessera, best, law);
  return v;
}

// "1.004x +- 0.006"
std::string RatioText(const sim::PairedRatio& p) {
  return Fixed(p.mean, 3) + "x +- " + Fixed(2 * p.standard_error, 3);
}

std::string TesseraConclusion(const std::vector<ModelSimResult>& results,
                              const std::vector<Summary>& all,
                              const std::vector<InterferenceLaw>& laws) {
  int worse = 0, better = 0;
  for (const InterferenceLaw& law : laws) {
    const sim::PairedRatio p = CompareWithBest(results, all, law).paired;
    // Worse: beyond two standard errors and by more than half a percent
    // (at alpha 0 every admission but whole runs the same jobs at full
    // speed, and tiny differences in GPU choice are not worth a claim).
    if (p.mean - 2 * p.standard_error > 1.005) ++worse;
    if (p.mean + 2 * p.standard_error < 1) ++better;
  }
  return "tessera (whole, fraction, split or wait by predicted finish) is "
         "worse than the best fixed admission beyond two standard errors "
         "at " +
         std::to_string(worse) + " of " + std::to_string(laws.size()) +
         " laws, better at " + std::to_string(better);
}

nlohmann::ordered_json KindsJson(const Setup& s,
                                 const std::vector<ModelJobKind>& kinds) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const ModelJobKind& k : kinds) {
    out.push_back(
        {{"name", k.name},
         {"path", k.path},
         {"batch", k.batch},
         {"memory_mib", k.demand_mib},
         {"step_ms", k.step_s * 1e3},
         {"gpu_busy_fraction", k.busy_fraction},
         {"fraction_milli", sim::FractionDemand(k, s.gpu.memory_mib).gpu_milli},
         {"whole_gpus", sim::WholeDemand(k, s.gpu.memory_mib).gpus}});
  }
  return out;
}

struct Timing {
  double sizing_s = 0, simulation_s = 0;
  int64_t placer_calls = 0, cache_hits = 0, skipped = 0;
};

nlohmann::ordered_json ModelsJson(const SimulateArgs& args, const Setup& s,
                                  const std::vector<ModelJobKind>& kinds,
                                  const std::vector<ModelSimResult>& runs,
                                  const std::vector<Summary>& all,
                                  const Timing& timing) {
  nlohmann::ordered_json results = nlohmann::ordered_json::array();
  for (const Summary& x : all) {
    const double whole =
        FindSummary(all, Admission::kWhole, x.interference).jct_common;
    const InterferenceLaw& law = x.interference;
    results.push_back(
        {{"admission", std::string(AdmissionName(x.admission))},
         {"interference", law.alpha ? nlohmann::ordered_json(*law.alpha)
                                    : nlohmann::ordered_json(nullptr)},
         {"interference_law", law.alpha ? "linear" : "measured"},
         {"sharing", law.alpha ? nlohmann::ordered_json(nullptr)
                               : nlohmann::ordered_json(std::string(
                                     estimator::GpuSharingName(law.sharing)))},
         {"mean_jct_s", x.jct},
         {"mean_jct_range_s", {x.jct_min, x.jct_max}},
         {"mean_jct_common_s", x.jct_common},
         {"mean_jct_common_range_s", {x.common_min, x.common_max}},
         {"jct_vs_whole", whole > 0
                              ? nlohmann::ordered_json(x.jct_common / whole)
                              : nlohmann::ordered_json(nullptr)},
         {"queueing_delay_s",
          {{"mean", x.delay_mean}, {"p50", x.delay_p50}, {"p95", x.delay_p95}}},
         {"utilization_pct", {{"gpu", x.gpu_util}, {"memory", x.memory_util}}},
         {"makespan_s", x.makespan},
         {"mean_stretch", x.stretch},
         {"jobs", x.jobs},
         {"completed", x.completed},
         {"never_ran", x.never_ran},
         {"split_jobs", x.split_jobs},
         {"split_speed", x.split_speed},
         {"split_speed_at_shares", x.split_shared_speed},
         {"max_running", x.max_running}});
  }
  nlohmann::ordered_json comparison = nlohmann::ordered_json::array();
  for (const Admission a : {Admission::kFraction, Admission::kSplit}) {
    const auto x = Crossover(all, a, s.laws);
    comparison.push_back(
        {{"admission", std::string(AdmissionName(a))},
         {"crossover_interference",
          x ? nlohmann::ordered_json(*x) : nlohmann::ordered_json(nullptr)},
         {"summary", Conclusion(all, a, s.laws)}});
  }
  for (const InterferenceLaw& law : s.laws) {
    const TesseraVsBest v = CompareWithBest(runs, all, law);
    comparison.push_back(
        {{"admission", "tessera"},
         {"interference", law.alpha ? nlohmann::ordered_json(*law.alpha)
                                    : nlohmann::ordered_json(nullptr)},
         {"sharing", law.alpha ? nlohmann::ordered_json(nullptr)
                               : nlohmann::ordered_json(std::string(
                                     estimator::GpuSharingName(law.sharing)))},
         {"best_fixed", v.best_name},
         {"best_fixed_jct_s", v.best},
         {"tessera_jct_s", v.tessera},
         {"tessera_vs_best", v.paired.mean},
         {"tessera_vs_best_standard_error", v.paired.standard_error}});
  }
  return {
      {"mode", "models"},
      {"config", args.config},
      {"pool", s.pool},
      {"gpu",
       {{"kind", s.gpu.kind},
        {"memory_mib", s.gpu.memory_mib},
        {"count", s.pool_gpus}}},
      {"scorer", args.policy},
      {"queue_policy", args.queue_policy},
      {"jobs", args.jobs},
      {"arrival_per_hour", args.arrival_per_hour},
      {"duration", {{"spec", args.duration}, {"mean_s", s.duration.Mean()}}},
      {"batches", args.batches},
      {"models", s.models},
      {"seeds", args.seeds},
      {"first_seed", args.first_seed},
      {"headroom", s.headroom},
      {"kinds", KindsJson(s, kinds)},
      {"results", std::move(results)},
      {"comparison", std::move(comparison)},
      {"timing",
       {{"sizing_s", timing.sizing_s},
        {"simulation_s", timing.simulation_s},
        {"placer_calls", timing.placer_calls},
        {"split_cache_hits", timing.cache_hits},
        {"placer_calls_skipped", timing.skipped}}}};
}

void PrintKinds(const Setup& s, const std::vector<ModelJobKind>& kinds) {
  std::cout << "Job kinds (training, sized on " << s.gpu.kind << ", need x "
            << Fixed(1 + s.headroom, 2) << "):\n";
  TextTable t(
      {"kind", "memory", "GPU share", "whole GPUs", "step ms", "GPU busy"},
      {false, true, true, true, true, true});
  for (const ModelJobKind& k : kinds) {
    const auto f = sim::FractionDemand(k, s.gpu.memory_mib);
    const auto w = sim::WholeDemand(k, s.gpu.memory_mib);
    t.AddRow(
        {k.name, HumanBytes(k.demand_mib << 20),
         k.demand_mib > s.gpu.memory_mib ? "-" : std::to_string(f.gpu_milli),
         std::to_string(w.gpus), Fixed(k.step_s * 1e3, 1),
         Fixed(k.busy_fraction, 2)});
  }
  std::cout << t.Render() << "\n";
}

void PrintResults(const std::vector<Summary>& all, const InterferenceLaw& law) {
  std::cout << "Interference " << LawText(law) << ", mean over seeds:\n";
  TextTable t({"admission", "done", "never", "split", "mean JCT", "common JCT",
               "vs whole", "delay mean", "p50", "p95", "makespan", "GPU util",
               "mem util"},
              {false, true, true, true, true, true, true, true, true, true,
               true, true, true});
  const double whole = FindSummary(all, Admission::kWhole, law).jct_common;
  for (const Admission a : sim::kAdmissions) {
    const Summary& x = FindSummary(all, a, law);
    t.AddRow({std::string(AdmissionName(a)), Fixed(x.completed, 1),
              Fixed(x.never_ran, 1), Fixed(x.split_jobs, 1),
              HumanDuration(x.jct), HumanDuration(x.jct_common),
              whole > 0 ? Fixed(x.jct_common / whole, 2) + "x" : "-",
              HumanDuration(x.delay_mean), HumanDuration(x.delay_p50),
              HumanDuration(x.delay_p95), HumanDuration(x.makespan),
              Fixed(x.gpu_util, 1) + "%", Fixed(x.memory_util, 1) + "%"});
  }
  std::cout << t.Render();
  const Summary& split = FindSummary(all, Admission::kSplit, law);
  if (split.split_jobs > 0) {
    std::cout << "  split gangs ran at " << Fixed(split.split_speed, 3)
              << " of one whole GPU's speed before interference (mean; "
              << Fixed(split.split_shared_speed, 3)
              << " if capped at the slivers' compute shares)\n";
  }
  std::cout << "\n";
}

void PrintSweep(const Setup& s, const std::vector<ModelSimResult>& results,
                const std::vector<Summary>& all) {
  std::cout << "Mean JCT of the jobs every admission completed, as "
               "interference grows (x: relative to whole):\n";
  TextTable t({"alpha", "whole", "fraction", "", "split", "", "tessera", "",
               "vs best fixed"},
              {true, true, true, true, true, true, true, true, true});
  for (const InterferenceLaw& law : s.laws) {
    const double whole = FindSummary(all, Admission::kWhole, law).jct_common;
    std::vector<std::string> row = {Fixed(law.alpha.value_or(0), 2),
                                    HumanDuration(whole)};
    for (const Admission a :
         {Admission::kFraction, Admission::kSplit, Admission::kTessera}) {
      const double j = FindSummary(all, a, law).jct_common;
      row.push_back(HumanDuration(j));
      row.push_back(whole > 0 ? Fixed(j / whole, 2) + "x" : "-");
    }
    const TesseraVsBest v = CompareWithBest(results, all, law);
    row.push_back(v.best > 0 ? RatioText(v.paired) + " (" + v.best_name + ")"
                             : "-");
    t.AddRow(row);
  }
  std::cout << t.Render() << "\n";
  for (const Admission a : {Admission::kFraction, Admission::kSplit}) {
    std::cout << "  " << Conclusion(all, a, s.laws) << "\n";
  }
  std::cout << "  " << TesseraConclusion(results, all, s.laws)
            << "\n  (vs best fixed: seed by seed, mean +- two standard "
               "errors)\n\n";
}

void PrintText(const SimulateArgs& args, const Setup& s,
               const std::vector<ModelJobKind>& kinds,
               const std::vector<ModelSimResult>& results,
               const std::vector<Summary>& all, const Timing& timing) {
  std::cout << "Cluster: pool " << s.pool << " of " << args.config << ", "
            << s.pool_gpus << " x " << s.gpu.kind << " ("
            << HumanBytes(s.gpu.memory_mib << 20) << "); scorer " << args.policy
            << ", queue " << args.queue_policy << "\n"
            << "Jobs: " << args.jobs << " per seed, Poisson "
            << Fixed(args.arrival_per_hour, 1) << "/h, run time "
            << args.duration << " (mean " << HumanDuration(s.duration.Mean())
            << "), kinds uniform over " << kinds.size() << " (model, batch); "
            << args.seeds << " seed" << (args.seeds == 1 ? "" : "s") << " from "
            << args.first_seed << "\n\n";
  PrintKinds(s, kinds);
  for (const InterferenceLaw& law : s.laws) PrintResults(all, law);
  if (s.laws.size() > 1) {
    PrintSweep(s, results, all);
  } else {
    const TesseraVsBest v = CompareWithBest(results, all, s.laws.front());
    std::cout << "tessera against the best fixed admission (" << v.best_name
              << "), seed by seed: " << RatioText(v.paired)
              << " (mean +- two standard errors)\n\n";
  }
  std::cout << "Sizing " << Fixed(timing.sizing_s, 2) << " s, simulation "
            << Fixed(timing.simulation_s, 2) << " s (placer calls "
            << timing.placer_calls << ", split cache hits " << timing.cache_hits
            << ", splits ruled out without the placer " << timing.skipped
            << ")\n";
}

// Several alphas (a sweep): mean JCT against alpha per admission, band
// over seeds.
// One: GPU utilization over time of the first seed.
Status Plot(const SimulateArgs& args, const Setup& s,
            const std::vector<ModelSimResult>& results,
            const std::vector<Summary>& all) {
  LineChart chart;
  const std::string inputs = std::to_string(args.jobs) + " jobs, " +
                             Fixed(args.arrival_per_hour, 1) + "/h, " +
                             args.duration + ", " +
                             std::to_string(s.pool_gpus) + " x " + s.gpu.kind;
  if (s.laws.size() > 1) {
    chart.title = "Mean job completion time as interference grows";
    chart.subtitle = inputs + "; mean of " + std::to_string(args.seeds) +
                     " seeds, band: min to max";
    chart.x_label = "interference alpha (time x (1 + alpha (k - 1)))";
    chart.y_label = "mean JCT of the jobs all four completed (hours)";
    for (const Admission a : sim::kAdmissions) {
      ChartSeries series;
      series.name = std::string(AdmissionName(a));
      for (const InterferenceLaw& law : s.laws) {
        const Summary& x = FindSummary(all, a, law);
        const double alpha = law.alpha.value_or(0);
        series.points.emplace_back(alpha, x.jct_common / 3600);
        if (args.seeds > 1) {
          series.band.push_back(
              {alpha, {x.common_min / 3600, x.common_max / 3600}});
        }
      }
      chart.series.push_back(std::move(series));
    }
  } else {
    chart.title = "GPU compute allocated over time";
    chart.subtitle = inputs + "; seed " + std::to_string(args.first_seed) +
                     ", interference " +
                     scheduler::InterferenceName(s.laws.front());
    chart.x_label = "time (hours)";
    chart.y_label = "allocated GPU compute (% of the pool)";
    chart.step = true;
    chart.y_range = std::make_pair(0.0, 100.0);
    for (const ModelSimResult& r : results) {
      if (r.seed != args.first_seed) continue;
      ChartSeries series;
      series.name = std::string(AdmissionName(r.admission));
      for (const auto& p : r.utilization) {
        series.points.emplace_back(p.t / 3600, p.gpu_pct);
      }
      chart.series.push_back(std::move(series));
    }
  }
  return WriteSvg(args.plot, chart);
}

}  // namespace

int RunSimulateModels(const SimulateArgs& args) {
  if (args.elastic != 0) {
    if (Status st = CheckModelsElasticArgs(args); !st.ok()) {
      return ReportError(st.error());
    }
  }
  auto setup = Prepare(args);
  if (!setup) return ReportError(setup.error());
  const Setup& s = *setup;
  Progress progress("simulate models");
  Timing timing;
  double start = MonotonicSeconds();
  auto kinds = sim::SizeModelJobKinds(
      s.models, args.batches, s.gpu.kind, s.headroom, args.threads,
      [&](int done, int total) {
        progress.Stage("sizing " + std::to_string(done) + "/" +
                       std::to_string(total) + " (model, batch)");
      });
  if (!kinds) {
    progress.Done();
    return ReportError(WithFlagNames(kinds.error(), kModelsFlags));
  }
  timing.sizing_s = MonotonicSeconds() - start;
  if (args.elastic != 0) {
    progress.Done();
    return RunSimulateModelsElastic(args, s.topology, s.pool, s.gpu, *kinds);
  }

  sim::ModelExperimentOptions options;
  options.workload.jobs = args.jobs;
  options.workload.arrival_per_hour = args.arrival_per_hour;
  options.workload.duration = s.duration;
  options.sim.scorer = args.policy;
  options.sim.queue_policy = args.queue_policy;
  options.sim.pool = s.pool;
  options.sim.headroom = s.headroom;
  options.interference = s.laws;
  options.seeds = args.seeds;
  options.first_seed = args.first_seed;
  options.threads = args.threads;
  sim::SplitCache cache;
  start = MonotonicSeconds();
  auto results = sim::RunModelExperiment(
      s.topology, *kinds, options, cache, [&](int done, int total) {
        progress.Stage("runs " + std::to_string(done) + "/" +
                       std::to_string(total));
      });
  progress.Done();
  if (!results) {
    return ReportError(WithFlagNames(results.error(), kModelsFlags));
  }
  timing.simulation_s = MonotonicSeconds() - start;
  timing.placer_calls = cache.placer_calls();
  timing.cache_hits = cache.hits();
  timing.skipped = cache.filtered();

  const std::vector<Summary> all = Summarize(*results, s.laws);
  if (args.json) {
    std::cout << ModelsJson(args, s, *kinds, *results, all, timing).dump(2)
              << "\n";
  } else {
    PrintText(args, s, *kinds, *results, all, timing);
  }
  if (!args.plot.empty()) {
    if (Status st = Plot(args, s, *results, all); !st.ok()) {
      return ReportError(st.error());
    }
    if (!args.json) std::cout << "Chart written to " << args.plot << "\n";
  }
  return 0;
}

}  // namespace tessera::cli
