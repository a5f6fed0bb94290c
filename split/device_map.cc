// DeviceMapJson: the split as a PyTorch-style device map over module paths.
#include <map>
#include <set>

#include "split/split.h"

namespace tessera::split {
namespace {

using Json = nlohmann::json;

struct Module {
  std::set<std::string> children;  // full paths
  std::map<int, int> own_ops;      // device -> ops directly in this module
  std::set<int> devices;           // of every op in the subtree
};

std::string Parent(const std::string& path) {
  const size_t dot = path.rfind('.');
  return dot == std::string::npos ? "" : path.substr(0, dot);
}

void Emit(const std::map<std::string, Module>& modules, const std::string& path,
          Json* map, Json* split_below, Json* own_ops) {
  const Module& m = modules.at(path);
  if (m.devices.size() == 1) {
    (*map)[path] = *m.devices.begin();
    return;
  }
  if (m.own_ops.size() > 1) {
    Json ops = Json::object();
    for (const auto& [d, count] : m.own_ops) ops[std::to_string(d)] = count;
    split_below->push_back(
        {{"module", path},
         {"devices",
          Json(std::vector<int>(m.devices.begin(), m.devices.end()))},
         {"own_ops_per_device", std::move(ops)}});
  } else if (m.own_ops.size() == 1) {
    own_ops->push_back({{"module", path},
                        {"device", m.own_ops.begin()->first},
                        {"ops", m.own_ops.begin()->second}});
  }
  for (const std::string& child : m.children) {
    Emit(modules, child, map, split_below, own_ops);
  }
}

}  // namespace

std::string ModulePath(std::string_view name, bool* is_pytorch) {
  *is_pytorch = false;
  if (name.size() < 2 || name[0] != '/') return "";
  const size_t last = name.rfind('/');
  if (last + 1 >= name.size()) return "";  // ends in '/': no op name
  *is_pytorch = true;
  std::string path;
  size_t begin = 1;
  while (begin < last) {
    size_t end = name.find('/', begin);
    const std::string_view scope = name.substr(begin, end - begin);
    begin = end + 1;
    if (scope.empty()) continue;
    // PyTorch writes a child either by its attribute name ("attention") or
    // by its full path from the enclosing scope ("layer1.0" in "layer1").
    if (!path.empty() && scope.size() > path.size() &&
        scope.substr(0, path.size()) == path && scope[path.size()] == '.') {
      path = std::string(scope);
    } else {
      path =
          path.empty() ? std::string(scope) : path + "." + std::string(scope);
    }
  }
  return path;
}

Json DeviceMapJson(const graph::OpGraph& g, std::span<const int> node_device,
                   std::span<const std::string> devices) {
  std::map<std::string, Module> modules;
  modules[""];
  int mapped = 0;
  int unmapped = 0;
  for (graph::NodeId n = 0; n < g.num_nodes(); ++n) {
    const graph::NodeView v = g.node(n);
    if (v.op_type == "Constant" && v.domain.empty()) continue;  // copied
    if (node_device[n] < 0) continue;                           // copied
    bool pytorch = false;
    std::string path = ModulePath(v.name, &pytorch);
    if (!pytorch) {
      ++unmapped;
      continue;
    }
    ++mapped;
    const int d = node_device[n];
    ++modules[path].own_ops[d];
    for (std::string p = path;; p = Parent(p)) {
      Module& m = modules[p];
      m.devices.insert(d);
      if (p.empty()) break;
      modules[Parent(p)].children.insert(p);
    }
  }
  Json map = Json::object();
  Json split_below = Json::array();
  Json own_ops = Json::array();
  Json out = {{"format", "tessera-device-map/1"}, {"devices", devices}};
  if (mapped > 0) Emit(modules, "", &map, &split_below, &own_ops);
  out["device_map"] = std::move(map);
  out["split_below_module"] = std::move(split_below);
  out["own_ops_of_split_modules"] = std::move(own_ops);
  out["mapped_nodes"] = mapped;
  out["unmapped_nodes"] = unmapped;
  std::string note;
  if (mapped == 0) {
    note =
        "the node names carry no PyTorch module paths (like "
        "'/encoder/layer.0/attention/MatMul'), so there is nothing to map; "
        "manifest.json has the split";
  } else {
    note =
        "values index `devices`; a module maps to a device when all its "
        "operators are there. split_below_module lists modules whose own "
        "operators (outside any child module) the plan puts on more than one "
        "device: a device_map cannot express those splits. "
        "own_ops_of_split_modules lists modules whose children are on "
        "different devices and whose own operators (residual adds, reshapes) "
        "the plan puts on one device; in PyTorch those run where their "
        "inputs are";
    if (unmapped > 0) {
      note += "; " + std::to_string(unmapped) +
              " operator(s) have names without a module path and are not "
              "mapped";
    }
  }
  out["note"] = std::move(note);
  return out;
}

}  // namespace tessera::split
