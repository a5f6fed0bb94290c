// The max-load model of Tarnawski et al. (placer/maxload/max_load.h): reading
// the published JSON inputs and expert splits, and evaluating a placement.

#include "placer/maxload/max_load.h"

#include <algorithm>
#include <cstddef>
#include <unordered_map>
#include <utility>

#include "placer/maxload/max_load_internal.h"

namespace tessera::placer {

using max_load_internal::kMaxBytes;
using max_load_internal::kMaxDevices;
using max_load_internal::kMaxInt64;
using max_load_internal::Reader;
using max_load_internal::Whole;
using Json = nlohmann::json;

std::vector<double> MaxLoadProblem::OutCosts() const {
  std::vector<double> cost(nodes.size(), 0.0);
  for (const MaxLoadEdge& e : edges) {
    cost[e.from] = std::max(cost[e.from], e.cost);
  }
  return cost;
}

int MaxLoadProblem::Devices() const {
  int n = 0;
  for (const MaxLoadKind& k : kinds) n += k.count;
  return n;
}

int MaxLoadProblem::KindOf(int device) const {
  for (size_t k = 0; k < kinds.size(); ++k) {
    if (device < kinds[k].count) return static_cast<int>(k);
    device -= kinds[k].count;
  }
  return -1;
}

int MaxLoadProblem::FirstDevice(int kind) const {
  int first = 0;
  for (int k = 0; k < kind; ++k) first += kinds[k].count;
  return first;
}

std::vector<MaxLoadKind> TarnawskiKinds(int64_t memory, int accelerators,
                                        int cpus) {
  return {{"acc", accelerators, memory, true}, {"cpu", cpus, -1, false}};
}

std::string MaxLoadDeviceName(const MaxLoadProblem& p, int device) {
  const int kind = device < 0 ? -1 : p.KindOf(device);
  if (kind < 0) return "device " + std::to_string(device) + " (none such)";
  const std::string& name = p.kinds[kind].name;
  const bool digit = !name.empty() && name.back() >= '0' && name.back() <= '9';
  return name + (digit ? "_" : "") +
         std::to_string(device - p.FirstDevice(kind));
}

MaxLoadEvaluation EvaluateMaxLoad(const MaxLoadProblem& p,
                                  const MaxLoadPlacement& x) {
  MaxLoadEvaluation ev;
  const int devices = p.Devices();
  ev.loads.assign(static_cast<size_t>(std::max(devices, 0)), 0.0);
  const size_t n = p.nodes.size();
  if (x.device.size() != n) {
    ev.violation = "placement has " + std::to_string(x.device.size()) +
                   " devices for " + std::to_string(n) + " nodes";
    return ev;
  }
  for (size_t v = 0; v < n; ++v) {
    const int d = x.device[v];
    if (d < 0 || d >= devices) {
      ev.violation = "node " + std::to_string(p.nodes[v].id) + " on device " +
                     std::to_string(d) + ", out of range [0, " +
                     std::to_string(devices) + ")";
      return ev;
    }
  }
  std::vector<int> kind_of(static_cast<size_t>(devices));
  for (int d = 0; d < devices; ++d) kind_of[d] = p.KindOf(d);
  const auto charged = [&](int d) {
    return p.kinds[kind_of[d]].charges_communication;
  };
  const auto charged_send = [&](int d) {
    return charged(d) && p.kinds[kind_of[d]].charges_sends;
  };

  // Compute (an unsupported node adds nothing here; reported below).
  for (size_t v = 0; v < n; ++v) {
    const int d = x.device[v];
    ev.loads[d] += std::max(p.nodes[v].time[kind_of[d]], 0.0);
  }
  // Communication: u's device pays its outgoing cost once if any successor is
  // elsewhere; each distinct other device receiving u pays it once. Kinds
  // that are not charged (the CPU of the published inputs) pay nothing;
  // kinds not charged for sends (tessera's pipeline stages) only receive.
  std::vector<std::vector<int>> succ(n);
  for (const MaxLoadEdge& e : p.edges) succ[e.from].push_back(e.to);
  const std::vector<double> out_cost = p.OutCosts();
  std::vector<int> receivers;
  for (size_t u = 0; u < n; ++u) {
    const int du = x.device[u];
    receivers.clear();
    for (const int v : succ[u]) {
      if (x.device[v] != du) receivers.push_back(x.device[v]);
    }
    if (receivers.empty()) continue;
    std::sort(receivers.begin(), receivers.end());
    receivers.erase(std::unique(receivers.begin(), receivers.end()),
                    receivers.end());
    if (charged_send(du)) ev.loads[du] += out_cost[u];
    for (const int r : receivers) {
      if (charged(r)) ev.loads[r] += out_cost[u];
    }
  }
  for (const double l : ev.loads) ev.max_load = std::max(ev.max_load, l);

  // Constraints, the first violated one reported.
  for (size_t v = 0; v < n; ++v) {
    const int d = x.device[v];
    if (!p.nodes[v].RunsOn(kind_of[d])) {
      ev.violation = "node " + std::to_string(p.nodes[v].id) +
                     " cannot run on " + p.kinds[kind_of[d]].name +
                     " devices but is on " + MaxLoadDeviceName(p, d);
      return ev;
    }
  }
  std::vector<int64_t> memory(static_cast<size_t>(devices), 0);
  for (size_t v = 0; v < n; ++v) memory[x.device[v]] += p.nodes[v].size;
  for (int d = 0; d < devices; ++d) {
    const int64_t limit = p.kinds[kind_of[d]].memory;
    if (limit >= 0 && memory[d] > limit) {
      ev.violation = MaxLoadDeviceName(p, d) + " holds " +
                     std::to_string(memory[d]) + " bytes, over its " +
                     std::to_string(limit);
      return ev;
    }
  }
  std::unordered_map<int64_t, size_t> first_of_color;
  for (size_t v = 0; v < n; ++v) {
    if (p.nodes[v].color == -1) continue;
    const auto [it, fresh] = first_of_color.emplace(p.nodes[v].color, v);
    if (fresh) continue;
    const size_t w = it->second;
    if (x.device[w] != x.device[v]) {
      ev.violation = "nodes " + std::to_string(p.nodes[w].id) + " (on " +
                     MaxLoadDeviceName(p, x.device[w]) + ") and " +
                     std::to_string(p.nodes[v].id) + " (on " +
                     MaxLoadDeviceName(p, x.device[v]) +
                     ") share color class " + std::to_string(p.nodes[v].color) +
                     " but not a device";
      return ev;
    }
  }
  return ev;
}

bool IsTarnawskiFormat(const nlohmann::json& j) {
  return j.is_object() && j.contains("maxSizePerFPGA") && j.contains("nodes") &&
         j.contains("edges");
}

Result<MaxLoadProblem> ParseTarnawski(const nlohmann::json& j,
                                      const std::string& source) {
  const Reader r(source);
  if (!j.is_object()) return BadInput(source + ": must be a JSON object");
  MaxLoadProblem p;
  p.source = source;

  auto memory = r.WholeField(j, "maxSizePerFPGA", "", 0, kMaxBytes);
  if (!memory) return memory.error();
  auto accelerators = r.WholeField(j, "maxFPGAs", "", 0, kMaxDevices);
  if (!accelerators) return accelerators.error();
  auto cpus = r.WholeField(j, "maxCPUs", "", 0, kMaxDevices);
  if (!cpus) return cpus.error();
  p.kinds = TarnawskiKinds(*memory, static_cast<int>(*accelerators),
                           static_cast<int>(*cpus));
  if (*accelerators + *cpus < 1) {
    return r.Bad("maxFPGAs, maxCPUs", "at least one device needed");
  }

  auto nodes = r.Member(j, "nodes", "nodes");
  if (!nodes) return nodes.error();
  const Json& jn = **nodes;
  TESSERA_RETURN_IF_ERROR(r.CheckArray(jn, "nodes", "nodes"));
  max_load_internal::NodeIndex index;
  p.nodes.reserve(jn.size());
  for (size_t i = 0; i < jn.size(); ++i) {
    const std::string at = "nodes[" + std::to_string(i) + "]";
    const Json& o = jn[i];
    if (!o.is_object()) return r.Bad(at, "must be an object");
    const std::string prefix = at + ".";
    MaxLoadNode node;
    auto id = r.WholeField(o, "id", prefix, -kMaxInt64, kMaxInt64);
    if (!id) return id.error();
    node.id = *id;
    auto on = r.FlagField(o, "supportedOnFpga", prefix);
    if (!on) return on.error();
    auto cpu = r.NonNegative(o, "cpuLatency", prefix);
    if (!cpu) return cpu.error();
    auto acc = r.NonNegative(o, "fpgaLatency", prefix);
    if (!acc) return acc.error();
    node.time = {*on ? *acc : kUnsupported, *cpu};
    if (const auto name = o.find("name");
        name != o.end() && name->is_string()) {
      node.name = name->get<std::string>();
    }
    auto backward = r.FlagField(o, "isBackwardNode", prefix);
    if (!backward) return backward.error();
    node.backward = *backward;
    const auto color = o.find("colorClass");
    if (color != o.end() && !color->is_null()) {
      const auto c = Whole(*color, -1, kMaxInt64);
      if (!c) {
        return r.Bad(prefix + "colorClass",
                     "must be a whole number >= -1 or null");
      }
      node.color = *c;
    }
    auto size = r.WholeField(o, "size", prefix, 0, kMaxBytes);
    if (!size) return size.error();
    node.size = *size;
    p.nodes.push_back(node);
    TESSERA_RETURN_IF_ERROR(max_load_internal::IndexNode(
        r, p, static_cast<int>(p.nodes.size()) - 1, prefix, index));
  }

  auto edges = r.Member(j, "edges", "edges");
  if (!edges) return edges.error();
  const Json& je = **edges;
  TESSERA_RETURN_IF_ERROR(r.CheckArray(je, "edges", "edges"));
  p.edges.reserve(je.size());
  for (size_t i = 0; i < je.size(); ++i) {
    const std::string at = "edges[" + std::to_string(i) + "]";
    const Json& o = je[i];
    if (!o.is_object()) return r.Bad(at, "must be an object");
    const std::string prefix = at + ".";
    MaxLoadEdge e;
    TESSERA_RETURN_IF_ERROR(max_load_internal::ReadEdgeEnds(
        r, p, index, o, at, "sourceId", "destId", e));
    auto cost = r.NonNegative(o, "cost", prefix);
    if (!cost) return cost.error();
    e.cost = *cost;
    p.edges.push_back(e);
  }

  if (const int v = max_load_internal::NodeOnCycle(p); v >= 0) {
    return r.Bad("edges",
                 "a cycle through node " + std::to_string(p.nodes[v].id));
  }
  return p;
}

Result<MaxLoadPlacement> ParseExpertSplit(const nlohmann::json& j,
                                          const MaxLoadProblem& p,
                                          bool follow_colors) {
  if (!j.is_object()) return BadInput("expert split: must be a JSON object");
  std::unordered_map<int64_t, int> index;
  for (size_t v = 0; v < p.nodes.size(); ++v) {
    index.emplace(p.nodes[v].id, static_cast<int>(v));
  }
  MaxLoadPlacement x;
  x.device.assign(p.nodes.size(), -1);
  if (p.kinds.size() != 2) {
    return BadInput("expert split: " + p.source +
                    " is not an input of the published format");
  }
  const std::pair<const char*, int> groups[] = {{"fpgas", 0}, {"cpus", 1}};
  for (const auto& [key, kind] : groups) {
    const int count = p.kinds[kind].count;
    const int first = p.FirstDevice(kind);
    const auto it = j.find(key);
    if (it == j.end()) continue;
    if (!it->is_array()) {
      return BadInput(std::string("expert split: ") + key +
                      ": must be an array");
    }
    if (it->size() > static_cast<size_t>(count)) {
      return BadInput(std::string("expert split: ") + key + ": " +
                      std::to_string(it->size()) + " devices, but " + p.source +
                      " has " + std::to_string(count));
    }
    for (size_t d = 0; d < it->size(); ++d) {
      const std::string at =
          std::string("expert split: ") + key + "[" + std::to_string(d) + "]";
      const Json& dev = (*it)[d];
      const auto nodes = dev.is_object() ? dev.find("nodes") : dev.end();
      if (!dev.is_object() || nodes == dev.end() || !nodes->is_array()) {
        return BadInput(at + ".nodes: must be an array of node ids");
      }
      for (size_t k = 0; k < nodes->size(); ++k) {
        const std::string field = at + ".nodes[" + std::to_string(k) + "]";
        const auto id = Whole((*nodes)[k], -kMaxInt64, kMaxInt64);
        if (!id) return BadInput(field + ": must be a whole number");
        const auto found = index.find(*id);
        if (found == index.end()) {
          return BadInput(field + ": unknown node id " + std::to_string(*id));
        }
        int& slot = x.device[found->second];
        if (slot != -1) {
          return BadInput(field + ": node " + std::to_string(*id) +
                          " already on " + MaxLoadDeviceName(p, slot));
        }
        slot = first + static_cast<int>(d);
      }
    }
  }
  if (follow_colors) {
    std::unordered_map<int64_t, int> color_device;
    for (size_t v = 0; v < p.nodes.size(); ++v) {
      if (x.device[v] != -1 && p.nodes[v].color != -1) {
        color_device.emplace(p.nodes[v].color, x.device[v]);
      }
    }
    for (size_t v = 0; v < p.nodes.size(); ++v) {
      const auto it = color_device.find(p.nodes[v].color);
      if (x.device[v] == -1 && it != color_device.end()) {
        x.device[v] = it->second;
      }
    }
  }
  for (size_t v = 0; v < p.nodes.size(); ++v) {
    if (x.device[v] == -1) {
      return BadInput("expert split: node " + std::to_string(p.nodes[v].id) +
                      " of " + p.source + " is on no device");
    }
  }
  return x;
}

}  // namespace tessera::placer
