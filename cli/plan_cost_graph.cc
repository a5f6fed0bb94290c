// `tessera plan --cost-graph FILE.json`: a graph given by its costs. Today
// the max-load inputs of Tarnawski et al. (detected by their keys), placed
// by the exact contiguous DP (placer/max_load.h, docs/placer_max_load.md).
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/output.h"
#include "cli/plan.h"
#include "common/json_depth.h"
#include "common/yaml_reader.h"
#include "placer/max_load.h"

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

}  // namespace

int RunPlanCostGraph(const PlanArgs& args) {
  Result<nlohmann::json> j = ReadJson(args.cost_graph);
  if (!j) return ReportError(j.error());
  if (!placer::IsTarnawskiFormat(*j)) {
    return ReportError(BadInput(
        "--cost-graph " + args.cost_graph +
        ": not a format tessera reads: the max-load inputs of Tarnawski et "
        "al. have maxSizePerFPGA, nodes and edges (docs/placer_max_load.md)"));
  }
  Result<placer::MaxLoadProblem> problem =
      placer::ParseTarnawski(*j, args.cost_graph);
  if (!problem) return ReportError(problem.error());
  Result<placer::MaxLoadDpResult> dp = placer::SolveContiguousMaxLoad(*problem);
  if (!dp) return ReportError(dp.error());
  const placer::MaxLoadEvaluation eval =
      placer::EvaluateMaxLoad(*problem, dp->placement);
  const int devices = problem->Devices();
  nlohmann::ordered_json placement = nlohmann::ordered_json::object();
  std::vector<int> count(devices, 0);
  for (size_t v = 0; v < problem->nodes.size(); ++v) {
    const int d = dp->placement.device[v];
    placement[std::to_string(problem->nodes[v].id)] =
        placer::MaxLoadDeviceName(*problem, d);
    ++count[d];
  }
  nlohmann::ordered_json device_list = nlohmann::ordered_json::array();
  for (int d = 0; d < devices; ++d) {
    device_list.push_back({{"id", placer::MaxLoadDeviceName(*problem, d)},
                           {"nodes", count[d]},
                           {"load", eval.loads[d]}});
  }
  const nlohmann::ordered_json out = {
      {"cost_graph", args.cost_graph},
      {"format", "tarnawski"},
      {"algorithm", "contiguous-dp"},
      {"optimal", dp->optimal},
      {"ideals", dp->ideals},
      {"placement_time_ms", dp->seconds * 1e3},
      {"objective", {{"max_load", eval.max_load}}},
      {"devices", std::move(device_list)},
      {"placement", std::move(placement)}};
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
  std::cout << args.cost_graph << ": " << problem->nodes.size() << " nodes, "
            << problem->kinds[0].count << " accelerators, "
            << problem->kinds[1].count << " CPUs\n"
            << "max load " << Fixed(eval.max_load, 4)
            << " (the optimum over contiguous splits, " << dp->ideals
            << " ideals, " << Fixed(dp->seconds * 1e3, 1) << " ms)\n";
  TextTable t({"device", "nodes", "load"}, {false, true, true});
  for (int d = 0; d < devices; ++d) {
    t.AddRow({placer::MaxLoadDeviceName(*problem, d), std::to_string(count[d]),
              Fixed(eval.loads[d], 4)});
  }
  std::cout << t.Render();
  return 0;
}

}  // namespace tessera::cli
