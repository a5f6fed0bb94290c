// ParsePlan / LoadPlan: the keys of plan.json that a split needs.
#include <fstream>
#include <unordered_map>

#include "split/split.h"

namespace tessera::split {
namespace {

using Json = nlohmann::json;

Error KeyError(const std::string& source, const std::string& key,
               const std::string& what) {
  return BadInput(source + ": " + key + ": " + what);
}

}  // namespace

Result<PlanAssignment> ParsePlan(const Json& plan, const std::string& source) {
  if (!plan.is_object()) {
    return BadInput(source +
                    ": not a plan (expected a JSON object as written "
                    "by `tessera plan -o`)");
  }
  PlanAssignment out;
  out.source = source;
  if (auto it = plan.find("algorithm"); it != plan.end() && it->is_string()) {
    out.algorithm = it->get<std::string>();
  }

  const auto devices = plan.find("devices");
  if (devices == plan.end()) {
    return KeyError(source, "devices", "missing (is this a plan.json?)");
  }
  if (!devices->is_array() || devices->empty()) {
    return KeyError(source, "devices", "expected a non-empty array");
  }
  std::unordered_map<std::string, int> index;
  for (size_t i = 0; i < devices->size(); ++i) {
    const Json& d = (*devices)[i];
    const std::string where = "devices[" + std::to_string(i) + "]";
    if (!d.is_object() || !d.contains("id") || !d["id"].is_string()) {
      return KeyError(source, where, "expected an object with a string \"id\"");
    }
    std::string id = d["id"].get<std::string>();
    if (id.empty()) return KeyError(source, where + ".id", "empty device id");
    auto [it, inserted] = index.emplace(id, static_cast<int>(i));
    if (!inserted) {
      return KeyError(source, where + ".id",
                      "device '" + id + "' is listed twice (also devices[" +
                          std::to_string(it->second) + "])");
    }
    out.devices.push_back(std::move(id));
  }

  const auto placement = plan.find("placement");
  if (placement == plan.end()) {
    return KeyError(source, "placement", "missing (is this a plan.json?)");
  }
  if (!placement->is_object()) {
    return KeyError(source, "placement",
                    "expected an object mapping node names to device ids");
  }
  out.placement.reserve(placement->size());
  for (const auto& [node, device] : placement->items()) {
    if (!device.is_string()) {
      return KeyError(source, "placement." + node,
                      "expected a device id string, got " +
                          std::string(device.type_name()));
    }
    const std::string id = device.get<std::string>();
    const auto it = index.find(id);
    if (it == index.end()) {
      return KeyError(source, "placement." + node,
                      "device '" + id + "' is not one of the plan's devices");
    }
    out.placement.emplace_back(node, it->second);
  }
  return out;
}

Result<PlanAssignment> LoadPlan(const std::string& path) {
  std::ifstream in(path);
  if (!in) return BadInput(path + ": cannot be opened for reading");
  Json plan;
  try {
    plan = Json::parse(in);
  } catch (const Json::parse_error& e) {
    return BadInput(path + ": not valid JSON (" + e.what() +
                    "); expected a plan written by `tessera plan -o`");
  }
  return ParsePlan(plan, path);
}

}  // namespace tessera::split
