// The max-load model of Tarnawski et al. (placer/max_load.h): reading the
// published JSON inputs and expert splits, and evaluating a placement.

#include "placer/max_load.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace tessera::placer {
namespace {

using Json = nlohmann::json;

// Inputs larger than this are refused rather than read.
constexpr size_t kMaxItems = 1'000'000;
// Device counts above this are refused (they are stored in an int).
constexpr int64_t kMaxDevices = 1'000'000;
// Whole numbers given as JSON floats are exact up to 2^53.
constexpr double kMaxExactWhole = 9007199254740992.0;

// A finite JSON number, or nullopt.
std::optional<double> Number(const Json& v) {
  if (!v.is_number()) return std::nullopt;
  const double d = v.get<double>();
  if (!std::isfinite(d)) return std::nullopt;
  return d;
}

// A whole JSON number (an integer, or a float with no fraction such as
// 17185374208.0) in [lo, hi], or nullopt.
std::optional<int64_t> Whole(const Json& v, int64_t lo, int64_t hi) {
  int64_t w = 0;
  if (v.is_number_unsigned()) {
    const auto u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(hi)) return std::nullopt;
    w = static_cast<int64_t>(u);
  } else if (v.is_number_integer()) {
    w = v.get<int64_t>();
  } else if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!std::isfinite(d) || std::floor(d) != d ||
        std::fabs(d) > kMaxExactWhole)
      return std::nullopt;
    w = static_cast<int64_t>(d);
  } else {
    return std::nullopt;
  }
  if (w < lo || w > hi) return std::nullopt;
  return w;
}

// true/false, or the numbers 1/0.
std::optional<bool> Flag(const Json& v) {
  if (v.is_boolean()) return v.get<bool>();
  const auto w = Whole(v, 0, 1);
  if (!w) return std::nullopt;
  return *w == 1;
}

class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  Error Bad(const std::string& field, const std::string& what) const {
    return BadInput(source_ + ": " + field + ": " + what);
  }

  // The member `key` of object `o`, or an error naming `field`.
  Result<const Json*> Member(const Json& o, const char* key,
                             const std::string& field) const {
    const auto it = o.find(key);
    if (it == o.end()) return Bad(field, "missing");
    return &*it;
  }

  Result<double> NonNegative(const Json& o, const char* key,
                             const std::string& prefix) const {
    const std::string field = prefix + key;
    auto m = Member(o, key, field);
    if (!m) return m.error();
    const auto d = Number(**m);
    if (!d || *d < 0) return Bad(field, "must be a number >= 0");
    return *d;
  }

  Result<int64_t> WholeField(const Json& o, const char* key,
                             const std::string& prefix, int64_t lo,
                             int64_t hi) const {
    const std::string field = prefix + key;
    auto m = Member(o, key, field);
    if (!m) return m.error();
    const auto w = Whole(**m, lo, hi);
    if (!w) {
      return Bad(field, "must be a whole number in [" + std::to_string(lo) +
                            ", " + std::to_string(hi) + "]");
    }
    return *w;
  }

  Result<bool> FlagField(const Json& o, const char* key,
                         const std::string& prefix) const {
    const std::string field = prefix + key;
    auto m = Member(o, key, field);
    if (!m) return m.error();
    const auto b = Flag(**m);
    if (!b) return Bad(field, "must be true/false or 1/0");
    return *b;
  }

 private:
  std::string source_;
};

constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();

// A node on a cycle among the nodes Kahn's algorithm left (each has a
// predecessor among them): walk predecessors until one repeats.
int NodeOnCycle(const std::vector<std::vector<int>>& preds,
                const std::vector<int>& indegree) {
  int v = 0;
  while (indegree[v] == 0) ++v;
  std::vector<bool> seen(indegree.size(), false);
  while (!seen[v]) {
    seen[v] = true;
    for (const int u : preds[v]) {
      if (indegree[u] > 0) {
        v = u;
        break;
      }
    }
  }
  return v;
}

}  // namespace

double MaxLoadProblem::OutCost(int node) const {
  double cost = 0;
  for (const MaxLoadEdge& e : edges) {
    if (e.from == node) cost = std::max(cost, e.cost);
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

  // Compute (an unsupported node adds nothing here; reported below).
  for (size_t v = 0; v < n; ++v) {
    const int d = x.device[v];
    ev.loads[d] += std::max(p.nodes[v].time[kind_of[d]], 0.0);
  }
  // Communication: u's device pays OutCost(u) once if any successor is
  // elsewhere; each distinct other device receiving u pays it once. Kinds
  // that are not charged (the CPU of the published inputs) pay nothing.
  std::vector<std::vector<int>> succ(n);
  std::vector<double> out_cost(n, 0.0);
  for (const MaxLoadEdge& e : p.edges) {
    succ[e.from].push_back(e.to);
    out_cost[e.from] = std::max(out_cost[e.from], e.cost);
  }
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
    if (charged(du)) ev.loads[du] += out_cost[u];
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

  auto memory = r.WholeField(j, "maxSizePerFPGA", "", 0, kMaxInt64 / 4);
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
  if (!jn.is_array()) return r.Bad("nodes", "must be an array");
  if (jn.size() > kMaxItems) {
    return r.Bad("nodes", std::to_string(jn.size()) + " nodes, at most " +
                              std::to_string(kMaxItems));
  }
  std::unordered_map<int64_t, int> index;
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
    auto size = r.WholeField(o, "size", prefix, 0, kMaxInt64 / 4);
    if (!size) return size.error();
    node.size = *size;
    const auto [it, fresh] =
        index.emplace(node.id, static_cast<int>(p.nodes.size()));
    if (!fresh) {
      return r.Bad(prefix + "id", "duplicate id " + std::to_string(node.id) +
                                      " (also nodes[" +
                                      std::to_string(it->second) + "])");
    }
    p.nodes.push_back(node);
  }

  auto edges = r.Member(j, "edges", "edges");
  if (!edges) return edges.error();
  const Json& je = **edges;
  if (!je.is_array()) return r.Bad("edges", "must be an array");
  if (je.size() > kMaxItems) {
    return r.Bad("edges", std::to_string(je.size()) + " edges, at most " +
                              std::to_string(kMaxItems));
  }
  p.edges.reserve(je.size());
  for (size_t i = 0; i < je.size(); ++i) {
    const std::string at = "edges[" + std::to_string(i) + "]";
    const Json& o = je[i];
    if (!o.is_object()) return r.Bad(at, "must be an object");
    const std::string prefix = at + ".";
    MaxLoadEdge e;
    int* ends[] = {&e.from, &e.to};
    const char* keys[] = {"sourceId", "destId"};
    for (int k = 0; k < 2; ++k) {
      auto id = r.WholeField(o, keys[k], prefix, -kMaxInt64, kMaxInt64);
      if (!id) return id.error();
      const auto it = index.find(*id);
      if (it == index.end()) {
        return r.Bad(prefix + keys[k],
                     "unknown node id " + std::to_string(*id));
      }
      *ends[k] = it->second;
    }
    if (e.from == e.to) {
      return r.Bad(at,
                   "self-loop on node " + std::to_string(p.nodes[e.from].id));
    }
    auto cost = r.NonNegative(o, "cost", prefix);
    if (!cost) return cost.error();
    e.cost = *cost;
    p.edges.push_back(e);
  }

  // Acyclic (Kahn's algorithm).
  const size_t n = p.nodes.size();
  std::vector<std::vector<int>> succ(n);
  std::vector<std::vector<int>> preds(n);
  std::vector<int> indegree(n, 0);
  for (const MaxLoadEdge& e : p.edges) {
    succ[e.from].push_back(e.to);
    preds[e.to].push_back(e.from);
    ++indegree[e.to];
  }
  std::vector<int> ready;
  for (size_t v = 0; v < n; ++v) {
    if (indegree[v] == 0) ready.push_back(static_cast<int>(v));
  }
  size_t done = 0;
  while (!ready.empty()) {
    const int v = ready.back();
    ready.pop_back();
    ++done;
    for (const int w : succ[v]) {
      if (--indegree[w] == 0) ready.push_back(w);
    }
  }
  if (done != n) {
    const int v = NodeOnCycle(preds, indegree);
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
