#ifndef TESSERA_GRAPH_GRAPH_INTERNAL_H_
#define TESSERA_GRAPH_GRAPH_INTERNAL_H_

// Helpers shared inside graph/ only; no other component includes this.

#include <cstdint>
#include <optional>
#include <string_view>

#include "graph/graph.h"

namespace tessera::graph::internal {

// FNV-1a, 32 bit: the key of OpGraph's sorted name indices.
inline uint32_t HashName(std::string_view s) {
  uint32_t h = 2166136261u;
  for (const char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 16777619u;
  }
  return h;
}

// IsNoOp's rule on what both the importer (from the proto) and OpGraph
// know: `cast_to` is a Cast's `to` type, `has_training_mode` whether a
// Dropout names its third input.
bool PassesThrough(std::string_view domain, std::string_view op_type,
                   DataType input, std::optional<DataType> cast_to,
                   bool has_training_mode);

}  // namespace tessera::graph::internal

#endif  // TESSERA_GRAPH_GRAPH_INTERNAL_H_
