// ManifestJson: manifest.json, how the parts fit together.
#include <iterator>
#include <map>
#include <ostream>

#include "common/strings.h"
#include "split/split.h"

namespace tessera::split {
namespace {

using Json = nlohmann::json;

Json Names(const graph::OpGraph& g, std::span<const graph::TensorId> ids) {
  Json names = Json::array();
  for (const graph::TensorId t : ids) names.push_back(g.tensor(t).name);
  return names;
}

Json Bytes(int64_t bytes) { return bytes >= 0 ? Json(bytes) : Json(nullptr); }

}  // namespace

std::string PartFileName(int index) {
  return "part_" + std::to_string(index) + ".onnx";
}

Json ManifestJson(const graph::Model& model, const PlanAssignment& plan,
                  const Partition& partition, const std::string& plan_path) {
  const graph::OpGraph& g = *model.graph;
  Json parts = Json::array();
  Json order = Json::array();
  for (size_t i = 0; i < partition.parts.size(); ++i) {
    const Part& part = partition.parts[i];
    int64_t weight_bytes = 0;
    for (const graph::TensorId t : part.initializers) {
      weight_bytes += std::max<int64_t>(g.tensor(t).bytes, 0);
    }
    for (const graph::NodeId n : part.nodes) {
      if (partition.node_part[n] >= 0) continue;  // a copied Constant
      for (const graph::TensorId t : g.node(n).outputs) {
        weight_bytes += std::max<int64_t>(g.tensor(t).bytes, 0);
      }
    }
    parts.push_back({{"index", i},
                     {"file", PartFileName(static_cast<int>(i))},
                     {"device", plan.devices[part.device]},
                     {"level", part.level},
                     {"ops", part.ops},
                     {"nodes", part.nodes.size()},
                     {"inputs", Names(g, part.inputs)},
                     {"outputs", Names(g, part.outputs)},
                     {"weight_bytes", weight_bytes}});
    order.push_back(i);
  }
  Json transfers = Json::array();
  int64_t total = 0;
  bool total_known = true;
  for (const Transfer& t : partition.transfers) {
    const int64_t bytes = g.tensor(t.tensor).bytes;
    if (bytes < 0) total_known = false;
    total += std::max<int64_t>(bytes, 0);
    transfers.push_back(
        {{"tensor", g.tensor(t.tensor).name},
         {"from_part", t.from_part},
         {"to_part", t.to_part},
         {"from_device", plan.devices[partition.parts[t.from_part].device]},
         {"to_device", plan.devices[partition.parts[t.to_part].device]},
         {"bytes", Bytes(bytes)}});
  }
  Json inputs = Json::array();
  for (const graph::TensorId t : g.inputs()) inputs.push_back(g.tensor(t).name);
  return {{"format", "tessera-split/1"},
          {"model", model.path},
          {"plan", plan_path},
          {"algorithm", plan.algorithm},
          {"inputs", std::move(inputs)},
          {"outputs", Names(g, g.outputs())},
          {"devices", plan.devices},
          {"devices_used", partition.devices_used},
          {"device_cycle", partition.device_cycle()},
          {"parts", std::move(parts)},
          {"transfers", std::move(transfers)},
          {"transfer_bytes", total_known ? Json(total) : Json(nullptr)},
          {"order", std::move(order)}};
}

void WritePartsDot(const Json& manifest, std::ostream& out) {
  // One colour per device, as `tessera plan --dot` colours devices.
  static constexpr const char* kColours[] = {
      "#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3", "#fdb462",
      "#b3de69", "#fccde5", "#d9d9d9", "#bc80bd", "#ccebc5", "#ffed6f"};
  const Json& devices = manifest["devices"];
  std::map<std::string, size_t> colour;
  for (size_t d = 0; d < devices.size(); ++d) {
    colour[devices[d].get<std::string>()] = d % std::size(kColours);
  }
  out << "digraph parts {\n  rankdir=TB;\n  node [shape=box, style=filled, "
         "fontname=\"Helvetica\"];\n";
  // Parts of one level side by side.
  std::map<int, std::vector<int>> levels;
  for (const Json& p : manifest["parts"]) {
    const int index = p["index"].get<int>();
    const std::string device = p["device"].get<std::string>();
    out << "  p" << index << " [label=\"" << p["file"].get<std::string>()
        << "\\n"
        << device << "\\n"
        << p["ops"].get<int>() << " ops\", fillcolor=\""
        << kColours[colour[device]] << "\"];\n";
    levels[p["level"].get<int>()].push_back(index);
  }
  for (const auto& [level, parts] : levels) {
    out << "  { rank=same;";
    for (const int p : parts) out << " p" << p << ";";
    out << " }\n";
  }
  // One edge per (from, to) with the tensors and bytes it carries.
  std::map<std::pair<int, int>, std::pair<int, int64_t>> edges;
  for (const Json& t : manifest["transfers"]) {
    auto& e = edges[{t["from_part"].get<int>(), t["to_part"].get<int>()}];
    ++e.first;
    if (t["bytes"].is_number()) e.second += t["bytes"].get<int64_t>();
  }
  for (const auto& [edge, e] : edges) {
    out << "  p" << edge.first << " -> p" << edge.second << " [label=\""
        << e.first << (e.first == 1 ? " tensor" : " tensors");
    if (e.second > 0) out << "\\n" << HumanBytes(e.second);
    out << "\"];\n";
  }
  out << "}\n";
}

}  // namespace tessera::split
