#ifndef TESSERA_PLACER_MAXLOAD_MAX_LOAD_INTERNAL_H_
#define TESSERA_PLACER_MAXLOAD_MAX_LOAD_INTERNAL_H_

// Internal to placer/: what the max-load code shares. The two readers of
// graphs given by their costs (the published format of Tarnawski et al. in
// max_load.cc, tessera's own in cost_graph.cc) share typed JSON fields whose
// errors name the field, the size limits and the cycle check (defined in
// max_load_internal.cc); the units (max_load_units.cc) and the cost-graph
// reader share a union-find.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "placer/maxload/max_load.h"

namespace tessera::placer::max_load_internal {

using Json = nlohmann::json;

// Inputs larger than this are refused rather than read (nodes, edges).
inline constexpr size_t kMaxItems = 1'000'000;
// Device counts above this are refused (they are stored in an int).
inline constexpr int64_t kMaxDevices = 1'000'000;
inline constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();
// Sizes and memory: far above any device, and four of them still add up
// without overflow.
inline constexpr int64_t kMaxBytes = kMaxInt64 / 4;

// A finite JSON number, or nullopt.
std::optional<double> Number(const Json& v);
// A whole JSON number (an integer, or a float with no fraction such as
// 17185374208.0) in [lo, hi], or nullopt.
std::optional<int64_t> Whole(const Json& v, int64_t lo, int64_t hi);
// true/false, or the numbers 1/0.
std::optional<bool> Flag(const Json& v);

// Reads fields of one input; every error is kBadInput
// "<source>: <field>: <what>".
class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  Error Bad(const std::string& field, const std::string& what) const;
  // The member `key` of object `o`, or an error naming `field`.
  Result<const Json*> Member(const Json& o, const char* key,
                             const std::string& field) const;
  // Member `key` of `o` (the field is prefix + key) as a number >= 0.
  Result<double> NonNegative(const Json& o, const char* key,
                             const std::string& prefix) const;
  // ... as a whole number in [lo, hi].
  Result<int64_t> WholeField(const Json& o, const char* key,
                             const std::string& prefix, int64_t lo,
                             int64_t hi) const;
  // ... as true/false or 1/0.
  Result<bool> FlagField(const Json& o, const char* key,
                         const std::string& prefix) const;
  // `array` (the value of `field`) is an array of at most kMaxItems
  // entries, called `what` in the message.
  Status CheckArray(const Json& array, const std::string& field,
                    const char* what) const;

 private:
  std::string source_;
};

// Node ids to node indices.
using NodeIndex = std::unordered_map<int64_t, int>;
// Adds node `node` (an index of `p.nodes`) to `index`; an error naming
// `prefix` + "id" when its id is taken.
Status IndexNode(const Reader& r, const MaxLoadProblem& p, int node,
                 const std::string& prefix, NodeIndex& index);
// Reads the ends of edge `at` (`o`'s members `from_key` and `to_key`, node
// ids) into `e` as node indices: errors for an id that is not a whole
// number, an unknown id, a self-loop.
Status ReadEdgeEnds(const Reader& r, const MaxLoadProblem& p,
                    const NodeIndex& index, const Json& o,
                    const std::string& at, const char* from_key,
                    const char* to_key, MaxLoadEdge& e);

// A node (index) on a cycle of `p`'s edges, or -1 when they form a DAG.
int NodeOnCycle(const MaxLoadProblem& p);

// Disjoint sets of 0..n-1 with path halving; a set's root is its smallest
// member.
class UnionFind {
 public:
  explicit UnionFind(int n) : parent_(n) {
    for (int i = 0; i < n; ++i) parent_[i] = i;
  }
  int Find(int x) {
    while (parent_[x] != x) {
      parent_[x] = parent_[parent_[x]];
      x = parent_[x];
    }
    return x;
  }
  // False when a and b were already in one set.
  bool Join(int a, int b) {
    a = Find(a);
    b = Find(b);
    if (a == b) return false;
    parent_[std::max(a, b)] = std::min(a, b);
    return true;
  }

 private:
  std::vector<int> parent_;
};

}  // namespace tessera::placer::max_load_internal

#endif  // TESSERA_PLACER_MAXLOAD_MAX_LOAD_INTERNAL_H_
