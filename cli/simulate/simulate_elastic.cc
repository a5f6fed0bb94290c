// `tessera simulate --mode timed --elastic PCT`: the same arrivals replayed
// gang-only and with that % of the multi-GPU pods elastic, per scorer x
// queue policy; makespan, mean JCT (all pods, the elastic ones), mean wait,
// utilization and the grows and shrinks. sim/timed_elastic.h does the
// work; this file prints (docs/simulate_timed.md, "Elastic jobs").
#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/output.h"
#include "cli/simulate/simulate.h"
#include "cli/simulate/simulate_elastic.h"
#include "common/strings.h"
#include "scheduler/policy.h"
#include "sim/timed_elastic.h"
#include "sim/timed_replay.h"

namespace tessera::cli {
namespace {

using sim::ElasticComparison;
using sim::ElasticTimedRun;

// The elastic replay's fields (sim::ElasticTimedOptions) its errors name,
// and their flags (WithFlagNames).
constexpr FieldFlag kTimedElasticFlags[] = {
    {"elastic_pct", "--elastic"},
    {"min_workers", "--elastic-min"},
    {"scaling_efficiency", "--elastic-efficiency"},
    {"base.model_pods_pct", "--model-pods"},
    {"base.queues", "--quotas"}};

struct Pair {
  std::string scorer, queue_policy;
  ElasticComparison c;
};

double Ratio(double a, double b) { return b > 0 ? a / b : 0; }

nlohmann::json ElasticJson(const SimulateArgs& args, const TraceInput& in,
                           const std::vector<Pair>& pairs) {
  nlohmann::json out;
  out["mode"] = "timed";
  out["nodes_file"] = args.nodes;
  out["pods_file"] = args.pods;
  out["nodes"] = in.topology.nodes.size();
  out["gpus"] = in.topology.gpus.size();
  out["pods"] = in.pods.size();
  out["seed"] = args.first_seed;
  out["load_factor"] = args.load;
  out["cluster_fraction"] = args.cluster_fraction;
  out["elastic"] = {{"pct", args.elastic},
                    {"min", args.elastic_min},
                    {"efficiency", args.elastic_efficiency},
                    {"pods", pairs.empty() ? 0 : pairs[0].c.gang.elastic_pods}};
  nlohmann::json results = nlohmann::json::array();
  for (const Pair& p : pairs) {
    const ElasticTimedRun &g = p.c.gang, &e = p.c.elastic;
    results.push_back({{"policy", p.scorer},
                       {"queue_policy", p.queue_policy},
                       {"gang", ElasticRunJson(g)},
                       {"elastic", ElasticRunJson(e)},
                       {"ratio", ElasticRatioJson(p.c)}});
  }
  out["results"] = std::move(results);
  return out;
}

void PrintElastic(const SimulateArgs& args, const TraceInput& in,
                  const std::vector<Pair>& pairs) {
  const int64_t elastic_pods = pairs.empty() ? 0 : pairs[0].c.gang.elastic_pods;
  std::cout << "Cluster " << WithThousands(int64_t(in.topology.nodes.size()))
            << " nodes, " << WithThousands(int64_t(in.topology.gpus.size()))
            << " GPUs (" << args.nodes << "); "
            << WithThousands(int64_t(in.pods.size())) << " pods (" << args.pods
            << "), load x" << Fixed(args.load, 2) << ", seed "
            << args.first_seed << ".\nElastic: " << args.elastic
            << "% of the multi-GPU pods by name = "
            << WithThousands(elastic_pods) << " pods, min " << args.elastic_min
            << " worker(s), max their GPUs, speedup(k) = "
            << "1 + (k-1) x " << Fixed(args.elastic_efficiency, 2)
            << ".\nThe same arrivals gang-only (every pod as in the trace) "
               "and elastic.\n\n";
  TextTable table = ElasticTable({"policy", "queue"}, "elastic JCT");
  for (const Pair& p : pairs) {
    AddElasticRows(table, {p.scorer, p.queue_policy}, p.c);
  }
  std::cout << table.Render()
            << "\n  JCT: departure - arrival; elastic JCT: over the pods "
               "picked elastic (as gangs in the\n  gang run); wait: time "
               "queued before starting; util: allocated GPU / capacity,\n"
               "  time-weighted; grows / shrinks: events (workers added; "
               "extras taken back for a start).\n";
}

}  // namespace

nlohmann::json ElasticRunJson(const ElasticTimedRun& r) {
  return {{"started", r.started},
          {"unplaceable", r.unplaceable},
          {"stuck", r.stuck},
          {"preemptions", r.preemptions},
          {"makespan_s", r.makespan_s},
          {"mean_jct_s", r.mean_jct_s},
          {"mean_elastic_jct_s", r.mean_elastic_jct_s},
          {"mean_wait_s", r.mean_wait_s},
          {"mean_elastic_wait_s", r.mean_elastic_wait_s},
          {"mean_utilization_pct", r.mean_utilization_pct},
          {"grows", r.grows},
          {"workers_grown", r.workers_grown},
          {"shrinks", r.shrinks},
          {"workers_taken_back", r.workers_taken_back},
          {"rounds", r.rounds},
          {"seconds", r.seconds}};
}

nlohmann::json ElasticRatioJson(const ElasticComparison& c) {
  const ElasticTimedRun &g = c.gang, &e = c.elastic;
  return {
      {"makespan", Ratio(e.makespan_s, g.makespan_s)},
      {"mean_jct", Ratio(e.mean_jct_s, g.mean_jct_s)},
      {"mean_elastic_jct", Ratio(e.mean_elastic_jct_s, g.mean_elastic_jct_s)},
      {"mean_wait", Ratio(e.mean_wait_s, g.mean_wait_s)}};
}

TextTable ElasticTable(const std::vector<std::string>& label_headers,
                       const std::string& elastic_jct_header) {
  std::vector<std::string> header = label_headers;
  std::vector<bool> right(label_headers.size(), false);
  for (const char* h :
       {"run", "started", "makespan", "mean JCT", "", "mean wait", "util",
        "grows", "shrinks", "preempted", "run s"}) {
    header.emplace_back(*h == 0 ? elastic_jct_header : h);
    right.push_back(header.back() != "run");
  }
  return TextTable(std::move(header), std::move(right));
}

void AddElasticRows(TextTable& table, const std::vector<std::string>& labels,
                    const ElasticComparison& c) {
  const ElasticTimedRun &g = c.gang, &e = c.elastic;
  for (const ElasticTimedRun* r : {&g, &e}) {
    std::vector<std::string> row = labels;
    for (std::string& cell : std::vector<std::string>{
             r->elastic ? "elastic" : "gang", WithThousands(r->started),
             HumanDuration(r->makespan_s), HumanDuration(r->mean_jct_s),
             HumanDuration(r->mean_elastic_jct_s),
             HumanDuration(r->mean_wait_s),
             Fixed(r->mean_utilization_pct, 1) + "%",
             r->elastic ? WithThousands(r->grows) : "-",
             r->elastic ? WithThousands(r->shrinks) : "-",
             WithThousands(r->preemptions), Fixed(r->seconds, 1)}) {
      row.push_back(std::move(cell));
    }
    table.AddRow(std::move(row));
  }
  std::vector<std::string> row = labels;
  for (std::string& cell : std::vector<std::string>{
           "elastic/gang", "", Fixed(Ratio(e.makespan_s, g.makespan_s), 3),
           Fixed(Ratio(e.mean_jct_s, g.mean_jct_s), 3),
           Fixed(Ratio(e.mean_elastic_jct_s, g.mean_elastic_jct_s), 3),
           Fixed(Ratio(e.mean_wait_s, g.mean_wait_s), 3),
           Fixed(e.mean_utilization_pct - g.mean_utilization_pct, 1) + " pt",
           "", "", "", ""}) {
    row.push_back(std::move(cell));
  }
  table.AddRow(std::move(row));
}

int RunSimulateTimedElastic(const SimulateArgs& args) {
  if (args.elastic < 0 || args.elastic > 100) {
    return ReportError(BadInput("--elastic: a percentage in 0..100, got " +
                                std::to_string(args.elastic)));
  }
  if (args.model_pods != 0 || args.quotas != "none") {
    return ReportError(
        BadInput("--elastic: not combined with --model-pods or --quotas"));
  }
  if (!args.plot.empty()) {
    return ReportError(BadInput("--plot: not drawn with --elastic (yet)"));
  }
  auto loaded = LoadTimedInput(args);
  if (!loaded) return ReportError(loaded.error());
  const TraceInput& in = loaded->trace;
  auto scorers = PolicyList(args.policy);
  if (!scorers) return ReportError(scorers.error());
  auto queue_policies = QueuePolicyList(args.queue_policy);
  if (!queue_policies) return ReportError(queue_policies.error());
  std::vector<Pair> pairs;
  Progress progress("simulate --mode timed --elastic");
  for (const std::string& scorer : *scorers) {
    for (const std::string& queue_policy : *queue_policies) {
      sim::ElasticTimedOptions o;
      o.base.scorer = scorer;
      o.base.queue_policy = queue_policy;
      o.base.seed = args.first_seed;
      o.base.load_factor = args.load;
      o.base.teams = args.teams;
      o.elastic_pct = args.elastic;
      o.min_workers = args.elastic_min;
      o.scaling_efficiency = args.elastic_efficiency;
      o.base.progress = [&](double done) {
        progress.Stage(scorer + " " + queue_policy + ": " +
                       Fixed(100 * done, 0) + "% done");
      };
      auto c = sim::CompareElastic(in.topology, in.pods, o, args.threads);
      if (!c) return ReportError(WithFlagNames(c.error(), kTimedElasticFlags));
      pairs.push_back({scorer, queue_policy, std::move(c).value()});
    }
  }
  progress.Done();
  if (args.json) {
    std::cout << ElasticJson(args, in, pairs).dump(2) << "\n";
  } else {
    PrintElastic(args, in, pairs);
  }
  return 0;
}

}  // namespace tessera::cli
