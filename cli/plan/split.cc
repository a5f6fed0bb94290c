// `tessera split`: a plan's parts as ONNX models, manifest and device map.
#include "cli/plan/split.h"

#include <fstream>
#include <iostream>
#include <map>

#include "cli/model_loading.h"
#include "cli/output.h"
#include "common/strings.h"
#include "split/split.h"

namespace tessera::cli {
namespace {

using Json = nlohmann::json;

std::string BytesText(const Json& bytes) {
  return bytes.is_number() ? HumanBytes(bytes.get<int64_t>()) : "?";
}

void PrintParts(const split::SplitResult& r) {
  TextTable t(
      {"part", "device", "level", "ops", "inputs", "outputs", "weights"},
      {false, false, true, true, true, true, true});
  for (const Json& p : r.manifest["parts"]) {
    t.AddRow({p["file"].get<std::string>(), p["device"].get<std::string>(),
              std::to_string(p["level"].get<int>()),
              WithThousands(p["ops"].get<int64_t>()),
              std::to_string(p["inputs"].size()),
              std::to_string(p["outputs"].size()),
              HumanBytes(p["weight_bytes"].get<int64_t>())});
  }
  std::cout << t.Render() << "\n";
}

void PrintTransfers(const split::SplitResult& r) {
  const Json& transfers = r.manifest["transfers"];
  if (transfers.empty()) {
    std::cout << "transfers: none\n";
    return;
  }
  // Per (from part, to part): tensors and bytes.
  std::map<std::pair<int, int>, std::pair<int, int64_t>> edges;
  bool unknown = false;
  for (const Json& t : transfers) {
    auto& e = edges[{t["from_part"].get<int>(), t["to_part"].get<int>()}];
    ++e.first;
    if (t["bytes"].is_number()) {
      e.second += t["bytes"].get<int64_t>();
    } else {
      unknown = true;
    }
  }
  std::cout << "transfers: " << transfers.size() << " tensors, "
            << BytesText(r.manifest["transfer_bytes"])
            << (unknown ? " (some sizes unknown: bind the inputs with "
                          "--input or --batch)"
                        : "")
            << "\n";
  TextTable t({"from", "to", "tensors", "bytes"}, {false, false, true, true});
  for (const auto& [edge, e] : edges) {
    t.AddRow({"part_" + std::to_string(edge.first),
              "part_" + std::to_string(edge.second), std::to_string(e.first),
              HumanBytes(e.second)});
  }
  std::cout << t.Render() << "\n";
}

void PrintOrder(const split::SplitResult& r) {
  const split::Partition& p = r.partition;
  std::cout << "order:";
  for (size_t i = 0; i < p.parts.size(); ++i) {
    const bool same_level = i > 0 && p.parts[i].level == p.parts[i - 1].level;
    std::cout << (i == 0 ? " " : same_level ? ", " : " -> ") << i;
  }
  std::cout << "  (part numbers; parts listed with commas are independent)\n";
  if (p.device_cycle()) {
    std::cout << "the plan's device graph has a cycle: " << p.parts.size()
              << " parts for " << p.devices_used
              << " devices, so that the parts form a DAG\n";
  }
}

void PrintDeviceMap(const split::SplitResult& r, const std::string& dir) {
  const Json& dm = r.device_map;
  std::cout << dir << "/device_map.json: ";
  if (dm["mapped_nodes"].get<int>() == 0) {
    std::cout << "no PyTorch module paths in the node names\n";
    return;
  }
  std::cout << dm["device_map"].size() << " module(s) mapped";
  const Json& below = dm["split_below_module"];
  if (!below.empty()) {
    std::cout << "; split below the module boundary in " << below.size() << ":";
    size_t shown = 0;
    for (const Json& m : below) {
      if (shown++ == 3) {
        std::cout << " ...";
        break;
      }
      const std::string name = m["module"].get<std::string>();
      std::cout << " " << (name.empty() ? "(root)" : name);
    }
  }
  std::cout << "\n";
}

}  // namespace

int RunSplit(const SplitArgs& args) {
  auto plan = split::LoadPlan(args.plan);
  if (!plan) return ReportError(plan.error().WithContext("--plan"));
  graph::LoadOptions load;
  load.keep_proto = true;
  auto model =
      LoadModelForCommand(args.model, args.inputs, args.batch, load, "loading");
  if (!model) return ReportError(model.error());

  split::SplitOptions options;
  options.out_dir = args.output;
  options.force = args.force;
  options.check = !args.no_check;
  options.plan_path = args.plan;
  Progress progress("splitting " + args.model);
  options.progress = [&](std::string_view stage) { progress.Stage(stage); };
  auto result = split::SplitModel(*model, *plan, options);
  progress.Done();
  if (!result) return ReportError(result.error());
  for (const std::string& w : result->warnings) Warn(w);
  if (!args.dot.empty()) {
    std::ofstream dot(args.dot);
    if (dot) split::WritePartsDot(result->manifest, dot);
    dot.close();
    if (!dot) {
      return ReportError(BadInput("--dot " + args.dot + ": cannot write"));
    }
  }

  if (args.json) {
    Json out = {{"manifest", result->manifest},
                {"device_map", result->device_map},
                {"files", result->files},
                {"partition_ms", result->partition_s * 1e3},
                {"build_ms", result->build_s * 1e3},
                {"write_ms", result->write_s * 1e3}};
    std::cout << out.dump(2, ' ', false, Json::error_handler_t::replace)
              << "\n";
    return 0;
  }
  const split::Partition& p = result->partition;
  std::cout << args.model << " split by " << args.plan
            << (plan->algorithm.empty() ? "" : " (" + plan->algorithm + ")")
            << " into " << args.output << "/: " << p.parts.size()
            << (p.parts.size() == 1 ? " part" : " parts") << " on "
            << p.devices_used << (p.devices_used == 1 ? " device" : " devices")
            << "\n\n";
  PrintParts(*result);
  PrintTransfers(*result);
  PrintOrder(*result);
  PrintDeviceMap(*result, args.output);
  std::cout << (options.check ? "every part passes ONNX's checker; " : "")
            << "partitioned in " << FormatMs(result->partition_s)
            << " ms, built in " << FormatMs(result->build_s)
            << " ms, written in " << FormatMs(result->write_s) << " ms\n";
  return 0;
}

}  // namespace tessera::cli
