// `tessera simulate --mode models --elastic PCT --elastic-workers MIN:MAX`:
// per seed, the same generated model jobs gang-only and with PCT% of the
// jobs whose model fits one GPU data-parallel sweeps of MAX replicas
// (elastic MIN..MAX). sim/model_elastic.h does the work; this file prints
// (docs/simulate_models.md, "Elastic jobs").
#include <charconv>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/output.h"
#include "cli/simulate/simulate.h"
#include "cli/simulate/simulate_elastic.h"
#include "common/strings.h"
#include "sim/model_elastic.h"
#include "sim/model_workload.h"

namespace tessera::cli {
namespace {

// The fields the elastic model-job replay's errors name
// (sim::ModelElasticOptions, the ElasticTimedOptions it fills, the job
// durations), and their flags (WithFlagNames).
constexpr FieldFlag kModelsElasticFlags[] = {
    {"duration", "--duration"},
    {"pct", "--elastic"},
    {"elastic_pct", "--elastic"},
    {"min_workers, max_workers", "--elastic-workers"},
    {"min_workers", "--elastic-workers"},
    {"scaling_efficiency", "--elastic-efficiency"},
    {"pool", "--pool"},
    {"scorer", "--policy"},
    {"queue_policy", "--queue-policy"}};

struct Workers {
  int min = 1, max = 4;
};

Result<Workers> ParseWorkers(const std::string& text) {
  const auto bad = [&] {
    return BadInput("--elastic-workers: MIN:MAX with 1 <= MIN <= MAX, got '" +
                    text + "'");
  };
  const size_t colon = text.find(':');
  if (colon == std::string::npos) return bad();
  Workers w;
  const char* begin = text.data();
  const char* end = begin + text.size();
  auto [p, ec] = std::from_chars(begin, begin + colon, w.min);
  if (ec != std::errc() || p != begin + colon) return bad();
  auto [q, ec2] = std::from_chars(begin + colon + 1, end, w.max);
  if (ec2 != std::errc() || q != end) return bad();
  if (w.min < 1 || w.max < w.min) return bad();
  return w;
}

double Mean(const std::vector<double>& v) {
  double s = 0;
  for (const double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

}  // namespace

Status CheckModelsElasticArgs(const SimulateArgs& args) {
  if (args.elastic < 0 || args.elastic > 100) {
    return BadInput("--elastic: a percentage in 0..100, got " +
                    std::to_string(args.elastic));
  }
  if (auto w = ParseWorkers(args.elastic_workers); !w) return w.error();
  if (!(args.elastic_efficiency > 0 && args.elastic_efficiency <= 1)) {
    return BadInput("--elastic-efficiency: in (0, 1], got " +
                    Fixed(args.elastic_efficiency, 3));
  }
  if (args.interference || !args.interference_sweep.empty() || args.sharing) {
    return BadInput(
        "--elastic: workers hold whole GPUs, nobody shares one: not combined "
        "with --interference, --interference-sweep or --sharing");
  }
  if (!args.plot.empty()) {
    return BadInput("--plot: not drawn with --elastic (yet)");
  }
  return {};
}

int RunSimulateModelsElastic(const SimulateArgs& args,
                             const scheduler::Topology& topology,
                             const std::string& pool,
                             const scheduler::GpuInfo& gpu,
                             const std::vector<sim::ModelJobKind>& kinds) {
  const Workers workers = *ParseWorkers(args.elastic_workers);
  auto duration = sim::ParseDurationDistribution(args.duration);
  if (!duration) {
    return ReportError(WithFlagNames(duration.error(), kModelsElasticFlags));
  }
  sim::ModelWorkloadOptions workload;
  workload.jobs = args.jobs;
  workload.arrival_per_hour = args.arrival_per_hour;
  workload.duration = *duration;

  struct SeedRun {
    uint64_t seed = 0;
    int64_t sweeps = 0;
    sim::ElasticComparison c;
  };
  std::vector<SeedRun> runs;
  Progress progress("simulate models --elastic");
  for (int i = 0; i < args.seeds; ++i) {
    const uint64_t seed = args.first_seed + static_cast<uint64_t>(i);
    progress.Stage("seed " + std::to_string(seed));
    const std::vector<sim::ModelJob> jobs =
        sim::GenerateModelJobs(static_cast<int>(kinds.size()), workload, seed);
    sim::ModelElasticOptions o;
    o.pct = args.elastic;
    o.min_workers = workers.min;
    o.max_workers = workers.max;
    o.scaling_efficiency = args.elastic_efficiency;
    o.scorer = args.policy;
    o.queue_policy = args.queue_policy;
    o.pool = pool;
    o.seed = seed;
    auto c = sim::CompareModelElastic(topology, kinds, jobs, o, args.threads);
    if (!c) {
      progress.Done();
      return ReportError(WithFlagNames(c.error(), kModelsElasticFlags));
    }
    runs.push_back({seed, c->gang.elastic_pods, std::move(c).value()});
  }
  progress.Done();

  std::vector<double> makespan, jct, sweep_jct, wait;
  for (const SeedRun& r : runs) {
    const nlohmann::json ratio = ElasticRatioJson(r.c);
    makespan.push_back(ratio["makespan"].get<double>());
    jct.push_back(ratio["mean_jct"].get<double>());
    sweep_jct.push_back(ratio["mean_elastic_jct"].get<double>());
    wait.push_back(ratio["mean_wait"].get<double>());
  }
  if (args.json) {
    nlohmann::json kinds_json = nlohmann::json::array();
    for (const sim::ModelJobKind& k : kinds) {
      kinds_json.push_back(
          {{"name", k.name},
           {"memory_mib", k.demand_mib},
           {"whole_gpus", sim::WholeDemand(k, gpu.memory_mib).gpus}});
    }
    nlohmann::json results = nlohmann::json::array();
    for (const SeedRun& r : runs) {
      results.push_back({{"seed", r.seed},
                         {"sweeps", r.sweeps},
                         {"gang", ElasticRunJson(r.c.gang)},
                         {"elastic", ElasticRunJson(r.c.elastic)},
                         {"ratio", ElasticRatioJson(r.c)}});
    }
    const nlohmann::json out = {
        {"mode", "models"},
        {"config", args.config},
        {"pool", pool},
        {"gpu", {{"kind", gpu.kind}, {"memory_mib", gpu.memory_mib}}},
        {"scorer", args.policy},
        {"queue_policy", args.queue_policy},
        {"jobs", args.jobs},
        {"arrival_per_hour", args.arrival_per_hour},
        {"duration", args.duration},
        {"seeds", args.seeds},
        {"first_seed", args.first_seed},
        {"elastic",
         {{"pct", args.elastic},
          {"min", workers.min},
          {"max", workers.max},
          {"efficiency", args.elastic_efficiency}}},
        {"kinds", std::move(kinds_json)},
        {"results", std::move(results)},
        {"mean_ratio",
         {{"makespan", Mean(makespan)},
          {"mean_jct", Mean(jct)},
          {"mean_elastic_jct", Mean(sweep_jct)},
          {"mean_wait", Mean(wait)}}}};
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::cout << "Cluster: pool " << pool << " of " << args.config << ", "
            << gpu.kind << "; scorer " << args.policy << ", queue "
            << args.queue_policy << "\nJobs: " << args.jobs
            << " per seed, Poisson " << Fixed(args.arrival_per_hour, 1)
            << " per hour, duration " << args.duration << ", " << kinds.size()
            << " (model, batch) kinds, whole GPUs by memory."
            << "\nElastic: " << args.elastic
            << "% of the jobs whose model fits one GPU (by name) are "
               "data-parallel sweeps of "
            << workers.max << " replicas, one whole GPU each: a gang of "
            << workers.max << ", or elastic " << workers.min << ".."
            << workers.max << " workers with speedup(k) = 1 + (k-1) x "
            << Fixed(args.elastic_efficiency, 2) << ".\n\n";
  TextTable table = ElasticTable({"seed", "sweeps"}, "sweep JCT");
  for (const SeedRun& r : runs) {
    AddElasticRows(table, {std::to_string(r.seed), std::to_string(r.sweeps)},
                   r.c);
  }
  std::cout << table.Render() << "\n  Elastic/gang over " << runs.size()
            << " seed(s), mean: makespan " << Fixed(Mean(makespan), 3)
            << ", mean JCT " << Fixed(Mean(jct), 3) << ", sweeps' JCT "
            << Fixed(Mean(sweep_jct), 3) << ", mean wait "
            << Fixed(Mean(wait), 3)
            << ".\n  JCT: finish - arrival; sweep JCT: over the sweeps (as "
               "gangs in the gang run); util: allocated GPUs / the cluster's, "
               "time-weighted.\n";
  return 0;
}

}  // namespace tessera::cli
