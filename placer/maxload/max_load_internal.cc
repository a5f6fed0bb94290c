// The JSON field readers and the cycle check shared by the readers of graphs
// given by their costs (placer/maxload/max_load_internal.h).

#include <cmath>
#include <vector>

#include "placer/maxload/max_load_internal.h"

namespace tessera::placer::max_load_internal {
namespace {

// Whole numbers given as JSON floats are exact up to 2^53.
constexpr double kMaxExactWhole = 9007199254740992.0;

}  // namespace

std::optional<double> Number(const Json& v) {
  if (!v.is_number()) return std::nullopt;
  const double d = v.get<double>();
  if (!std::isfinite(d)) return std::nullopt;
  return d;
}

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

std::optional<bool> Flag(const Json& v) {
  if (v.is_boolean()) return v.get<bool>();
  const auto w = Whole(v, 0, 1);
  if (!w) return std::nullopt;
  return *w == 1;
}

Error Reader::Bad(const std::string& field, const std::string& what) const {
  return BadInput(source_ + ": " + field + ": " + what);
}

Result<const Json*> Reader::Member(const Json& o, const char* key,
                                   const std::string& field) const {
  const auto it = o.find(key);
  if (it == o.end()) return Bad(field, "missing");
  return &*it;
}

Result<double> Reader::NonNegative(const Json& o, const char* key,
                                   const std::string& prefix) const {
  const std::string field = prefix + key;
  auto m = Member(o, key, field);
  if (!m) return m.error();
  const auto d = Number(**m);
  if (!d || *d < 0) return Bad(field, "must be a number >= 0");
  return *d;
}

Result<int64_t> Reader::WholeField(const Json& o, const char* key,
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

Result<bool> Reader::FlagField(const Json& o, const char* key,
                               const std::string& prefix) const {
  const std::string field = prefix + key;
  auto m = Member(o, key, field);
  if (!m) return m.error();
  const auto b = Flag(**m);
  if (!b) return Bad(field, "must be true/false or 1/0");
  return *b;
}

Status Reader::CheckArray(const Json& array, const std::string& field,
                          const char* what) const {
  if (!array.is_array()) return Bad(field, "must be an array");
  if (array.size() > kMaxItems) {
    return Bad(field, std::to_string(array.size()) + " " + what + ", at most " +
                          std::to_string(kMaxItems));
  }
  return {};
}

Status IndexNode(const Reader& r, const MaxLoadProblem& p, int node,
                 const std::string& prefix, NodeIndex& index) {
  const int64_t id = p.nodes[node].id;
  const auto [it, fresh] = index.emplace(id, node);
  if (fresh) return {};
  return r.Bad(prefix + "id", "duplicate id " + std::to_string(id) + " (also " +
                                  prefix.substr(0, prefix.find('[')) + "[" +
                                  std::to_string(it->second) + "])");
}

Status ReadEdgeEnds(const Reader& r, const MaxLoadProblem& p,
                    const NodeIndex& index, const Json& o,
                    const std::string& at, const char* from_key,
                    const char* to_key, MaxLoadEdge& e) {
  const std::string prefix = at + ".";
  int* ends[] = {&e.from, &e.to};
  const char* keys[] = {from_key, to_key};
  for (int k = 0; k < 2; ++k) {
    auto id = r.WholeField(o, keys[k], prefix, -kMaxInt64, kMaxInt64);
    if (!id) return id.error();
    const auto it = index.find(*id);
    if (it == index.end()) {
      return r.Bad(prefix + keys[k], "unknown node id " + std::to_string(*id));
    }
    *ends[k] = it->second;
  }
  if (e.from == e.to) {
    return r.Bad(at, "self-loop on node " + std::to_string(p.nodes[e.from].id));
  }
  return {};
}

int NodeOnCycle(const MaxLoadProblem& p) {
  // Kahn's algorithm; the nodes it leaves each have a predecessor among
  // them: walk predecessors from one until a node repeats.
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
  if (done == n) return -1;
  int v = 0;
  while (indegree[v] == 0) ++v;
  std::vector<bool> seen(n, false);
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

}  // namespace tessera::placer::max_load_internal
