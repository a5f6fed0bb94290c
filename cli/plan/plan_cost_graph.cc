// `tessera plan --cost-graph FILE.json`: a graph given by its costs, in
// tessera's own format (placer/maxload/cost_graph.h, docs/cost_graph.md) or as
// the max-load inputs of Tarnawski et al. (placer/maxload/max_load.h), each
// detected by its keys; placed by the exact contiguous DP, then the ILP
// (docs/placer_max_load.md).
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/output.h"
#include "cli/plan/plan.h"
#include "common/json_depth.h"
#include "common/yaml_reader.h"
#include "placer/maxload/cost_graph.h"
#include "placer/maxload/max_load.h"
#include "placer/solver/solve_status.h"

namespace tessera::cli {
namespace {

// Larger than the largest published input (4 MB) by far.
constexpr std::uintmax_t kMaxCostGraphBytes = std::uintmax_t{256} << 20;

Result<nlohmann::json> ReadJson(const std::string& path) {
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (!ec && size > kMaxCostGraphBytes) {
    return BadInput("--cost-graph " + path + ": larger than 256 MiB");
  }
  Result<std::string> text = ReadTextFile(path);
  if (!text) return text.error().WithContext("--cost-graph");
  if (JsonDepth(*text) > kMaxJsonDepth) {
    return BadInput("--cost-graph " + path + ": nested too deeply");
  }
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded()) {
    return BadInput("--cost-graph " + path + ": malformed JSON");
  }
  return j;
}

// The problem in `path`, either format; `format` gets "tessera-cost-graph"
// or "tarnawski".
Result<placer::MaxLoadProblem> ReadCostGraph(const std::string& path,
                                             std::string* format) {
  Result<nlohmann::json> j = ReadJson(path);
  if (!j) return j.error();
  if (placer::IsTesseraCostGraph(*j)) {
    *format = placer::kCostGraphFormat;
    return placer::ParseCostGraph(*j, path);
  }
  if (placer::IsTarnawskiFormat(*j)) {
    *format = "tarnawski";
    return placer::ParseTarnawski(*j, path);
  }
  return BadInput(
      "--cost-graph " + path +
      ": not a format tessera reads: tessera's cost graph has \"format\": "
      "\"tessera-cost-graph\" (docs/cost_graph.md); the max-load inputs of "
      "Tarnawski et al. have maxSizePerFPGA, nodes and edges "
      "(docs/placer_max_load.md)");
}

// Default seconds for the ILP after the DP, unless --ilp-time-limit.
constexpr double kDefaultIlpSeconds = 10;
// Seconds of local search after an ILP that did not prove its split.
constexpr double kLocalSeconds = 10;

// What the solvers found: the contiguous DP's split, the ILP's (unless
// --algo contiguous), local search's (unless the ILP proved its split),
// and the placement chosen from them, the last one's.
struct CostGraphSolution {
  placer::MaxLoadDpResult dp;
  std::optional<placer::MaxLoadIlpResult> ilp;
  std::optional<placer::MaxLoadLocalResult> local;
  placer::MaxLoadPlacement chosen;
  bool dp_optimal() const { return dp.status == placer::SolveStatus::kOptimal; }
  bool ilp_optimal() const {
    return ilp && ilp->status == placer::SolveStatus::kOptimal;
  }
};

// Runs the exact contiguous DP, then (unless --algo contiguous) the ILP
// over all placements started from it, then, unless the ILP proved its
// split, local search from the best.
Result<CostGraphSolution> SolveCostGraph(
    const PlanArgs& args, const placer::MaxLoadProblem& problem) {
  const std::string& algo = args.algo;
  if (algo != "auto" && algo != "contiguous" && algo != "ilp") {
    return BadInput(
        "--algo " + algo +
        ": with --cost-graph, one of auto (the contiguous DP, then the ILP "
        "from it), contiguous (the DP only) or ilp (the same as auto)");
  }
  Result<placer::MaxLoadDpResult> dp = placer::SolveContiguousMaxLoad(problem);
  if (!dp) return dp.error();
  // No contiguous split, or none before a cap stopped the search: exit 3
  // either way, as always.
  if (!placer::HasSolution(dp->status)) return Infeasible(dp->why);
  CostGraphSolution s;
  s.dp = std::move(dp).value();
  s.chosen = s.dp.placement;
  if (algo != "contiguous") {
    placer::MaxLoadIlpOptions o;
    o.time_limit_s = args.ilp_time_limit_s.value_or(kDefaultIlpSeconds);
    o.warm = &s.dp.placement;
    Result<placer::MaxLoadIlpResult> r = placer::SolveMaxLoadIlp(problem, o);
    if (!r) return r.error();
    if (!placer::HasSolution(r->status)) {
      return placer::NoSolutionError(r->status, r->why);
    }
    s.ilp = *r;
    s.chosen = s.ilp->placement;
  }
  if (s.ilp && s.ilp->status != placer::SolveStatus::kOptimal) {
    s.local = placer::ImproveMaxLoadLocally(problem, s.chosen, kLocalSeconds);
    s.chosen = s.local->placement;
  }
  return s;
}

// The plan JSON: what each solver found, the objective, each device's
// nodes (`count`) and load, and the placement.
nlohmann::ordered_json CostGraphJson(const PlanArgs& args,
                                     const placer::MaxLoadProblem& problem,
                                     const std::string& format,
                                     const CostGraphSolution& s,
                                     const placer::MaxLoadEvaluation& eval,
                                     const std::vector<int>& count) {
  const placer::MaxLoadDpResult& dp = s.dp;
  const std::optional<placer::MaxLoadIlpResult>& ilp = s.ilp;
  nlohmann::ordered_json placement = nlohmann::ordered_json::object();
  for (size_t v = 0; v < problem.nodes.size(); ++v) {
    placement[std::to_string(problem.nodes[v].id)] =
        placer::MaxLoadDeviceName(problem, s.chosen.device[v]);
  }
  nlohmann::ordered_json device_list = nlohmann::ordered_json::array();
  for (int d = 0; d < problem.Devices(); ++d) {
    device_list.push_back({{"id", placer::MaxLoadDeviceName(problem, d)},
                           {"nodes", count[d]},
                           {"load", eval.loads[d]}});
  }
  // The JSON's "optimal" (a contract) is SolveStatus::kOptimal.
  nlohmann::ordered_json contiguous = {
      {"max_load", dp.max_load}, {"optimal", s.dp_optimal()},
      {"units", dp.units},       {"ideals", dp.ideals},
      {"blocks", dp.blocks},     {"seconds", dp.seconds}};
  if (!s.dp_optimal()) contiguous["stopped"] = dp.why;
  nlohmann::ordered_json out = {
      {"cost_graph", args.cost_graph},
      {"format", format},
      {"algorithm", ilp ? "ilp" : "contiguous-dp"},
      {"optimal", ilp ? s.ilp_optimal() : s.dp_optimal()},
      {"contiguous", std::move(contiguous)}};
  double seconds = dp.seconds;
  if (ilp) {
    out["ilp"] = {{"max_load", ilp->max_load},
                  {"lower_bound", ilp->lower_bound},
                  {"gap", ilp->Gap()},
                  {"optimal", s.ilp_optimal()},
                  {"improved_on_contiguous", ilp->improved_warm},
                  {"units", ilp->units},
                  {"seconds", ilp->seconds}};
    if (!ilp->solver_failure.empty()) {
      out["ilp"]["solver_failure"] = ilp->solver_failure;
    }
    seconds += ilp->seconds;
  }
  if (s.local) {
    out["local_search"] = {{"max_load", s.local->max_load},
                           {"moves", s.local->moves},
                           {"restarts_won", s.local->restarts_won},
                           {"seconds", s.local->seconds}};
    seconds += s.local->seconds;
  }
  out["placement_time_ms"] = seconds * 1e3;
  nlohmann::ordered_json objective = {{"max_load", eval.max_load}};
  if (ilp) objective["lower_bound"] = ilp->lower_bound;
  out["objective"] = std::move(objective);
  out["devices"] = std::move(device_list);
  out["placement"] = std::move(placement);
  return out;
}

// The table: the graph, what each solver found, then each device's nodes
// (`count`) and load.
void PrintCostGraph(const PlanArgs& args, const placer::MaxLoadProblem& problem,
                    const CostGraphSolution& s,
                    const placer::MaxLoadEvaluation& eval,
                    const std::vector<int>& count) {
  const placer::MaxLoadDpResult& dp = s.dp;
  const std::optional<placer::MaxLoadIlpResult>& ilp = s.ilp;
  const std::optional<placer::MaxLoadLocalResult>& local = s.local;
  std::cout << args.cost_graph << ": " << problem.nodes.size() << " nodes on";
  for (const placer::MaxLoadKind& k : problem.kinds) {
    std::cout << " " << k.count << " " << k.name;
  }
  std::cout << "\n"
            << "contiguous: max load " << Fixed(dp.max_load, 4) << " ("
            << (s.dp_optimal() ? "the optimum over contiguous splits"
                               : "the best found: " + dp.why)
            << "; " << dp.units << " units, " << dp.ideals << " ideals, "
            << Fixed(dp.seconds * 1e3, 1) << " ms)\n";
  if (ilp) {
    std::cout << "any split:  max load " << Fixed(ilp->max_load, 4) << " ("
              << (s.ilp_optimal()
                      ? "proven optimal"
                      : "lower bound " + Fixed(ilp->lower_bound, 4) + ", gap " +
                            Fixed(ilp->Gap() * 100, 1) + "%")
              << (ilp->improved_warm ? ", better than contiguous"
                                     : ", the contiguous split kept")
              << "; ILP " << Fixed(ilp->seconds, 1) << " s)\n";
    if (!ilp->solver_failure.empty()) {
      std::cout << "            " << ilp->solver_failure << "\n";
    }
  }
  if (local && local->max_load < ilp->max_load) {
    std::cout << "local search: max load " << Fixed(local->max_load, 4)
              << " (gap now "
              << Fixed((local->max_load - ilp->lower_bound) / local->max_load *
                           100,
                       1)
              << "%; " << local->moves << " moves"
              << (local->restarts_won > 0 ? " from a random restart" : "")
              << ", " << Fixed(local->seconds, 1) << " s)\n";
  }
  TextTable t({"device", "nodes", "load"}, {false, true, true});
  for (int d = 0; d < problem.Devices(); ++d) {
    t.AddRow({placer::MaxLoadDeviceName(problem, d), std::to_string(count[d]),
              Fixed(eval.loads[d], 4)});
  }
  std::cout << t.Render();
}

// Places a cost graph (SolveCostGraph); prints a table or the plan JSON.
int PlaceCostGraph(const PlanArgs& args, const placer::MaxLoadProblem& problem,
                   const std::string& format) {
  Result<CostGraphSolution> solved = SolveCostGraph(args, problem);
  if (!solved) return ReportError(solved.error());
  const CostGraphSolution& s = *solved;
  const placer::MaxLoadEvaluation eval =
      placer::EvaluateMaxLoad(problem, s.chosen);
  std::vector<int> count(problem.Devices(), 0);
  for (size_t v = 0; v < problem.nodes.size(); ++v) ++count[s.chosen.device[v]];
  const nlohmann::ordered_json out =
      CostGraphJson(args, problem, format, s, eval, count);
  if (!args.output.empty()) {
    std::ofstream f(args.output);
    f << out.dump(2) << "\n";
    if (!f) {
      return ReportError(BadInput("-o " + args.output + ": cannot write"));
    }
  }
  if (args.json) {
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  PrintCostGraph(args, problem, s, eval, count);
  return 0;
}

}  // namespace

int RunPlanCostGraph(const PlanArgs& args) {
  std::string format;
  Result<placer::MaxLoadProblem> problem =
      ReadCostGraph(args.cost_graph, &format);
  if (!problem) return ReportError(problem.error());
  return PlaceCostGraph(args, *problem, format);
}

}  // namespace tessera::cli
