// tessera's cost-graph format (placer/maxload/cost_graph.h,
// docs/cost_graph.md): reading it into a MaxLoadProblem, with errors that name
// the field and its index, and writing a MaxLoadProblem back out.
//
// Reading is one pass per array (devices, link, operators, edges), then
// backward_of is resolved (it may name a later operator), co-location
// turned into color classes (union-find over colocate keys and backward_of
// pairs) and the edges checked for a cycle. O(operators + edges).

#include "placer/maxload/cost_graph.h"

#include <algorithm>
#include <initializer_list>
#include <optional>
#include <unordered_map>
#include <utility>

#include "placer/maxload/max_load_internal.h"

namespace tessera::placer {
namespace {

using max_load_internal::kMaxBytes;
using max_load_internal::kMaxDevices;
using max_load_internal::kMaxInt64;
using max_load_internal::Reader;
using max_load_internal::UnionFind;
using Json = nlohmann::json;

// Times held at most (operators x device kinds, 8 bytes each): a file of
// a few hundred MB could otherwise ask for many GB.
constexpr size_t kMaxTimes = 100'000'000;

// Keys starting with this are annotations: ignored wherever they appear.
constexpr std::string_view kAnnotationPrefix = "x-";

std::string Join(std::initializer_list<const char*> names) {
  std::string out;
  for (const char* n : names) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

// Every key of object `o` (field `at`) is known or an annotation.
Status CheckKeys(const Reader& r, const Json& o, const std::string& at,
                 std::initializer_list<const char*> known) {
  for (const auto& [key, value] : o.items()) {
    if (std::string_view(key).starts_with(kAnnotationPrefix)) continue;
    bool found = false;
    for (const char* k : known) found = found || key == k;
    if (!found) {
      return r.Bad(at.empty() ? key : at + "." + key,
                   "unknown key (known: " + Join(known) +
                       "; keys starting with x- are ignored)");
    }
  }
  return {};
}

// The optional string member `key` of `o`; "" when absent.
Result<std::string> OptionalString(const Reader& r, const Json& o,
                                   const char* key, const std::string& prefix) {
  const auto it = o.find(key);
  if (it == o.end()) return std::string();
  if (!it->is_string()) return r.Bad(prefix + key, "must be a string");
  return it->get<std::string>();
}

class CostGraphReader {
 public:
  CostGraphReader(const Json& j, const std::string& source)
      : j_(j), r_(source) {
    p_.source = source;
  }

  Result<MaxLoadProblem> Read() && {
    if (!j_.is_object()) return BadInput(p_.source + ": must be a JSON object");
    TESSERA_RETURN_IF_ERROR(CheckHeader());
    TESSERA_RETURN_IF_ERROR(CheckKeys(r_, j_, "",
                                      {"format", "version", "model", "devices",
                                       "link", "operators", "edges"}));
    if (auto model = OptionalString(r_, j_, "model", ""); !model) {
      return model.error();
    }
    TESSERA_RETURN_IF_ERROR(ReadDevices());
    TESSERA_RETURN_IF_ERROR(ReadLink());
    TESSERA_RETURN_IF_ERROR(ReadOperators());
    TESSERA_RETURN_IF_ERROR(ResolveBackward());
    AssignColors();
    TESSERA_RETURN_IF_ERROR(ReadEdges());
    if (const int v = max_load_internal::NodeOnCycle(p_); v >= 0) {
      return r_.Bad("edges", "a cycle through operator " +
                                 std::to_string(p_.nodes[v].id));
    }
    return std::move(p_);
  }

 private:
  Status CheckHeader() const {
    auto format = r_.Member(j_, "format", "format");
    if (!format) return format.error();
    if (!(*format)->is_string() ||
        (*format)->get<std::string>() != kCostGraphFormat) {
      return r_.Bad("format",
                    "must be \"" + std::string(kCostGraphFormat) + "\"");
    }
    auto version = r_.Member(j_, "version", "version");
    if (!version) return version.error();
    const auto v = max_load_internal::Whole(**version, -kMaxInt64, kMaxInt64);
    if (!v) return r_.Bad("version", "must be a whole number");
    if (*v != kCostGraphVersion) {
      return r_.Bad("version", std::to_string(*v) +
                                   " is not supported: this tessera reads "
                                   "version " +
                                   std::to_string(kCostGraphVersion));
    }
    return {};
  }

  Status ReadDevices() {
    auto devices = r_.Member(j_, "devices", "devices");
    if (!devices) return devices.error();
    const Json& jd = **devices;
    if (!jd.is_array()) return r_.Bad("devices", "must be an array");
    if (jd.empty() || jd.size() > kMaxCostGraphKinds) {
      return r_.Bad("devices", "must list 1 to " +
                                   std::to_string(kMaxCostGraphKinds) +
                                   " device kinds");
    }
    int64_t total = 0;
    for (size_t i = 0; i < jd.size(); ++i) {
      const std::string at = "devices[" + std::to_string(i) + "]";
      const Json& o = jd[i];
      if (!o.is_object()) return r_.Bad(at, "must be an object");
      TESSERA_RETURN_IF_ERROR(CheckKeys(
          r_, o, at,
          {"kind", "count", "memory_bytes", "charges_communication"}));
      auto kind = ReadKind(o, at + ".");
      if (!kind) return kind.error();
      const auto [it, fresh] = kind_index_.emplace(kind->name, i);
      if (!fresh) {
        return r_.Bad(at + ".kind", "duplicate kind \"" + kind->name +
                                        "\" (also devices[" +
                                        std::to_string(it->second) + "])");
      }
      total += kind->count;
      p_.kinds.push_back(std::move(*kind));
    }
    if (total < 1 || total > kMaxDevices) {
      return r_.Bad("devices", "the counts add up to " + std::to_string(total) +
                                   ": must be 1 to " +
                                   std::to_string(kMaxDevices));
    }
    return {};
  }

  Result<MaxLoadKind> ReadKind(const Json& o, const std::string& prefix) const {
    MaxLoadKind k;
    auto name = r_.Member(o, "kind", prefix + "kind");
    if (!name) return name.error();
    if (!(*name)->is_string() || (*name)->get<std::string>().empty()) {
      return r_.Bad(prefix + "kind", "must be a non-empty string");
    }
    k.name = (*name)->get<std::string>();
    auto count = r_.WholeField(o, "count", prefix, 0, kMaxDevices);
    if (!count) return count.error();
    k.count = static_cast<int>(*count);
    if (const auto m = o.find("memory_bytes"); m != o.end() && !m->is_null()) {
      auto memory = r_.WholeField(o, "memory_bytes", prefix, 0, kMaxBytes);
      if (!memory) return memory.error();
      k.memory = *memory;
    }
    if (o.contains("charges_communication")) {
      auto charges = r_.FlagField(o, "charges_communication", prefix);
      if (!charges) return charges.error();
      k.charges_communication = *charges;
    }
    return k;
  }

  Status ReadLink() {
    const auto it = j_.find("link");
    if (it == j_.end()) return {};
    const Json& o = *it;
    if (!o.is_object()) return r_.Bad("link", "must be an object");
    TESSERA_RETURN_IF_ERROR(
        CheckKeys(r_, o, "link", {"bytes_per_s", "latency_s"}));
    auto bandwidth = r_.NonNegative(o, "bytes_per_s", "link.");
    if (!bandwidth) return bandwidth.error();
    if (!(*bandwidth > 0)) return r_.Bad("link.bytes_per_s", "must be > 0");
    bytes_per_s_ = *bandwidth;
    if (o.contains("latency_s")) {
      auto latency = r_.NonNegative(o, "latency_s", "link.");
      if (!latency) return latency.error();
      latency_s_ = *latency;
    }
    return {};
  }

  Status ReadOperators() {
    auto ops = r_.Member(j_, "operators", "operators");
    if (!ops) return ops.error();
    const Json& jo = **ops;
    TESSERA_RETURN_IF_ERROR(r_.CheckArray(jo, "operators", "operators"));
    if (jo.size() * p_.kinds.size() > kMaxTimes) {
      return r_.Bad("operators", std::to_string(jo.size()) + " operators x " +
                                     std::to_string(p_.kinds.size()) +
                                     " device kinds: more than " +
                                     std::to_string(kMaxTimes) + " times");
    }
    p_.nodes.reserve(jo.size());
    colocate_.assign(jo.size(), "");
    backward_of_.assign(jo.size(), std::nullopt);
    for (size_t i = 0; i < jo.size(); ++i) {
      const std::string at = "operators[" + std::to_string(i) + "]";
      const Json& o = jo[i];
      if (!o.is_object()) return r_.Bad(at, "must be an object");
      TESSERA_RETURN_IF_ERROR(
          CheckKeys(r_, o, at,
                    {"id", "name", "op_type", "time_s", "memory_bytes",
                     "colocate", "backward", "backward_of"}));
      TESSERA_RETURN_IF_ERROR(ReadOperator(o, i, at + "."));
      TESSERA_RETURN_IF_ERROR(max_load_internal::IndexNode(
          r_, p_, static_cast<int>(i), at + ".", index_));
    }
    return {};
  }

  Status ReadOperator(const Json& o, size_t i, const std::string& prefix) {
    MaxLoadNode node;
    auto id = r_.WholeField(o, "id", prefix, -kMaxInt64, kMaxInt64);
    if (!id) return id.error();
    node.id = *id;
    auto name = OptionalString(r_, o, "name", prefix);
    if (!name) return name.error();
    node.name = std::move(*name);
    if (auto op_type = OptionalString(r_, o, "op_type", prefix); !op_type) {
      return op_type.error();
    }
    auto time = ReadTimes(o, prefix);
    if (!time) return time.error();
    node.time = std::move(*time);
    if (o.contains("memory_bytes")) {
      auto size = r_.WholeField(o, "memory_bytes", prefix, 0, kMaxBytes);
      if (!size) return size.error();
      node.size = *size;
    }
    if (const auto c = o.find("colocate"); c != o.end() && !c->is_null()) {
      const auto whole = max_load_internal::Whole(*c, -kMaxInt64, kMaxInt64);
      if (c->is_string() && !c->get<std::string>().empty()) {
        colocate_[i] = "s" + c->get<std::string>();
      } else if (!c->is_string() && whole) {
        colocate_[i] = "i" + std::to_string(*whole);
      } else {
        return r_.Bad(prefix + "colocate",
                      "must be a non-empty string, a whole number or null");
      }
    }
    if (o.contains("backward")) {
      auto backward = r_.FlagField(o, "backward", prefix);
      if (!backward) return backward.error();
      node.backward = *backward;
    }
    if (o.contains("backward_of")) {
      auto forward =
          r_.WholeField(o, "backward_of", prefix, -kMaxInt64, kMaxInt64);
      if (!forward) return forward.error();
      if (o.contains("backward") && !node.backward) {
        return r_.Bad(prefix + "backward",
                      "false, but backward_of makes it a backward operator");
      }
      backward_of_[i] = *forward;
      node.backward = true;
    }
    p_.nodes.push_back(std::move(node));
    return {};
  }

  // time_s: an object of kind -> seconds (a kind left out or null: cannot
  // run there), or one number for every kind.
  Result<std::vector<double>> ReadTimes(const Json& o,
                                        const std::string& prefix) const {
    const std::string field = prefix + "time_s";
    auto t = r_.Member(o, "time_s", field);
    if (!t) return t.error();
    const Json& jt = **t;
    if (jt.is_number()) {
      const auto d = max_load_internal::Number(jt);
      if (!d || *d < 0) return r_.Bad(field, "must be a number >= 0");
      return std::vector<double>(p_.kinds.size(), *d);
    }
    if (!jt.is_object()) {
      return r_.Bad(field,
                    "must be an object of device kind -> seconds, or a "
                    "number for every kind");
    }
    std::vector<double> time(p_.kinds.size(), kUnsupported);
    bool runs = false;
    for (const auto& [kind, value] : jt.items()) {
      const auto k = kind_index_.find(kind);
      if (k == kind_index_.end()) {
        return r_.Bad(field + "." + kind,
                      "unknown device kind (devices has " + KindNames() + ")");
      }
      if (value.is_null()) continue;
      const auto d = max_load_internal::Number(value);
      if (!d || *d < 0) {
        return r_.Bad(field + "." + kind, "must be a number >= 0 or null");
      }
      time[k->second] = *d;
      runs = true;
    }
    if (!runs) {
      return r_.Bad(field, "gives no device kind: an operator must run on one");
    }
    return time;
  }

  std::string KindNames() const {
    std::string out;
    for (const MaxLoadKind& k : p_.kinds) {
      out += (out.empty() ? "" : ", ") + k.name;
    }
    return out;
  }

  Status ResolveBackward() const {
    for (size_t i = 0; i < p_.nodes.size(); ++i) {
      if (!backward_of_[i]) continue;
      const std::string field =
          "operators[" + std::to_string(i) + "].backward_of";
      const auto it = index_.find(*backward_of_[i]);
      if (it == index_.end()) {
        return r_.Bad(field,
                      "no operator has id " + std::to_string(*backward_of_[i]));
      }
      if (it->second == static_cast<int>(i)) {
        return r_.Bad(field, "names the operator itself");
      }
      if (p_.nodes[it->second].backward) {
        return r_.Bad(field, "operator " + std::to_string(*backward_of_[i]) +
                                 " is itself a backward operator");
      }
    }
    return {};
  }

  // Colors: the classes of colocate keys and backward_of pairs, numbered
  // in the order of their first operator.
  void AssignColors() {
    const size_t n = p_.nodes.size();
    UnionFind uf(static_cast<int>(n));
    std::vector<bool> colored(n, false);
    std::unordered_map<std::string, int> first_of_key;
    for (size_t v = 0; v < n; ++v) {
      const int node = static_cast<int>(v);
      if (!colocate_[v].empty()) {
        colored[v] = true;
        const auto [it, fresh] = first_of_key.emplace(colocate_[v], node);
        if (!fresh) uf.Join(node, it->second);
      }
      if (backward_of_[v]) {
        const int forward = index_.at(*backward_of_[v]);
        colored[v] = colored[forward] = true;
        uf.Join(node, forward);
      }
    }
    std::unordered_map<int, int64_t> color_of_root;
    for (size_t v = 0; v < n; ++v) {
      if (!colored[v]) continue;
      const auto next = static_cast<int64_t>(color_of_root.size());
      p_.nodes[v].color =
          color_of_root.emplace(uf.Find(static_cast<int>(v)), next)
              .first->second;
    }
  }

  Status ReadEdges() {
    auto edges = r_.Member(j_, "edges", "edges");
    if (!edges) return edges.error();
    const Json& je = **edges;
    TESSERA_RETURN_IF_ERROR(r_.CheckArray(je, "edges", "edges"));
    p_.edges.reserve(je.size());
    for (size_t i = 0; i < je.size(); ++i) {
      const std::string at = "edges[" + std::to_string(i) + "]";
      const Json& o = je[i];
      if (!o.is_object()) return r_.Bad(at, "must be an object");
      TESSERA_RETURN_IF_ERROR(
          CheckKeys(r_, o, at, {"from", "to", "bytes", "time_s"}));
      MaxLoadEdge e;
      TESSERA_RETURN_IF_ERROR(max_load_internal::ReadEdgeEnds(
          r_, p_, index_, o, at, "from", "to", e));
      auto cost = ReadEdgeCost(o, at);
      if (!cost) return cost.error();
      e.cost = *cost;
      p_.edges.push_back(e);
    }
    return {};
  }

  Result<double> ReadEdgeCost(const Json& o, const std::string& at) const {
    const bool bytes = o.contains("bytes");
    if (bytes == o.contains("time_s")) {
      return r_.Bad(at, bytes ? "gives both bytes and time_s: give one"
                              : "gives neither bytes nor time_s: give one");
    }
    if (!bytes) return r_.NonNegative(o, "time_s", at + ".");
    auto b = r_.WholeField(o, "bytes", at + ".", 0, kMaxBytes);
    if (!b) return b.error();
    if (bytes_per_s_ == 0) {
      return r_.Bad(at + ".bytes",
                    "needs link.bytes_per_s to become a time (no link given)");
    }
    return CostOfBytes(*b, bytes_per_s_, latency_s_);
  }

  const Json& j_;
  Reader r_;
  MaxLoadProblem p_;
  std::unordered_map<std::string, size_t> kind_index_;
  max_load_internal::NodeIndex index_;
  double bytes_per_s_ = 0, latency_s_ = 0;
  // Per operator: its colocate key ("s<string>" or "i<integer>", "" for
  // none) and its backward_of id.
  std::vector<std::string> colocate_;
  std::vector<std::optional<int64_t>> backward_of_;
};

// Whether node v's color need not be written: its color class is exactly
// one component of the forward_of pairs (so backward_of says it).
std::vector<bool> ColorImplied(const MaxLoadProblem& p,
                               const std::vector<int>& forward_of) {
  const size_t n = p.nodes.size();
  std::vector<bool> implied(n, false);
  if (forward_of.size() != n) return implied;
  UnionFind pairs(static_cast<int>(n));
  std::vector<int> pair_size(n, 0);
  for (size_t v = 0; v < n; ++v) {
    if (forward_of[v] >= 0) pairs.Join(static_cast<int>(v), forward_of[v]);
  }
  // Per color: its members' one pair root (-1: several), and its size.
  std::unordered_map<int64_t, std::pair<int, int>> color;
  for (size_t v = 0; v < n; ++v) {
    const int root = pairs.Find(static_cast<int>(v));
    ++pair_size[root];
    if (p.nodes[v].color == -1) continue;
    const auto [it, fresh] =
        color.emplace(p.nodes[v].color, std::pair{root, 0});
    if (it->second.first != root) it->second.first = -1;
    ++it->second.second;
  }
  for (size_t v = 0; v < n; ++v) {
    if (p.nodes[v].color == -1) continue;
    const auto [root, size] = color.at(p.nodes[v].color);
    implied[v] = root >= 0 && size >= 2 && pair_size[root] == size;
  }
  return implied;
}

nlohmann::ordered_json DevicesJson(const MaxLoadProblem& p) {
  nlohmann::ordered_json devices = nlohmann::ordered_json::array();
  for (const MaxLoadKind& k : p.kinds) {
    nlohmann::ordered_json d = {{"kind", k.name}, {"count", k.count}};
    if (k.memory >= 0) d["memory_bytes"] = k.memory;
    d["charges_communication"] = k.charges_communication;
    devices.push_back(std::move(d));
  }
  return devices;
}

nlohmann::ordered_json OperatorJson(const MaxLoadProblem& p, size_t v,
                                    const CostGraphExtras& x, bool implied) {
  const MaxLoadNode& node = p.nodes[v];
  nlohmann::ordered_json op = {{"id", node.id}};
  if (!node.name.empty()) op["name"] = node.name;
  if (v < x.op_types.size() && !x.op_types[v].empty()) {
    op["op_type"] = x.op_types[v];
  }
  nlohmann::ordered_json time = nlohmann::ordered_json::object();
  for (size_t k = 0; k < p.kinds.size(); ++k) {
    if (node.RunsOn(static_cast<int>(k))) time[p.kinds[k].name] = node.time[k];
  }
  op["time_s"] = std::move(time);
  op["memory_bytes"] = node.size;
  if (node.color != -1 && !implied) op["colocate"] = node.color;
  const int forward = v < x.forward_of.size() ? x.forward_of[v] : -1;
  if (forward >= 0) {
    op["backward_of"] = p.nodes[forward].id;
  } else if (node.backward) {
    op["backward"] = true;
  }
  return op;
}

}  // namespace

bool IsTesseraCostGraph(const nlohmann::json& j) {
  if (!j.is_object()) return false;
  const auto it = j.find("format");
  return it != j.end() && it->is_string() &&
         it->get<std::string>() == kCostGraphFormat;
}

Result<MaxLoadProblem> ParseCostGraph(const nlohmann::json& j,
                                      const std::string& source) {
  return CostGraphReader(j, source).Read();
}

double CostOfBytes(int64_t bytes, double bytes_per_s, double latency_s) {
  return latency_s + static_cast<double>(bytes) / bytes_per_s;
}

nlohmann::ordered_json CostGraphJson(const MaxLoadProblem& p,
                                     const CostGraphExtras& x) {
  nlohmann::ordered_json j = {{"format", kCostGraphFormat},
                              {"version", kCostGraphVersion}};
  if (!x.model.empty()) j["model"] = x.model;
  j["devices"] = DevicesJson(p);
  const bool bytes = x.edge_bytes.size() == p.edges.size() &&
                     x.link_bytes_per_s > 0 &&
                     std::any_of(x.edge_bytes.begin(), x.edge_bytes.end(),
                                 [](int64_t b) { return b >= 0; });
  if (bytes) {
    j["link"] = {{"bytes_per_s", x.link_bytes_per_s},
                 {"latency_s", x.link_latency_s}};
  }
  const std::vector<bool> implied = ColorImplied(p, x.forward_of);
  nlohmann::ordered_json ops = nlohmann::ordered_json::array();
  for (size_t v = 0; v < p.nodes.size(); ++v) {
    ops.push_back(OperatorJson(p, v, x, implied[v]));
  }
  j["operators"] = std::move(ops);
  nlohmann::ordered_json edges = nlohmann::ordered_json::array();
  for (size_t i = 0; i < p.edges.size(); ++i) {
    const MaxLoadEdge& e = p.edges[i];
    nlohmann::ordered_json edge = {{"from", p.nodes[e.from].id},
                                   {"to", p.nodes[e.to].id}};
    if (bytes && x.edge_bytes[i] >= 0) {
      edge["bytes"] = x.edge_bytes[i];
    } else {
      edge["time_s"] = e.cost;
    }
    edges.push_back(std::move(edge));
  }
  j["edges"] = std::move(edges);
  return j;
}

}  // namespace tessera::placer
