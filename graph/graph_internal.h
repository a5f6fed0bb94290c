#ifndef TESSERA_GRAPH_GRAPH_INTERNAL_H_
#define TESSERA_GRAPH_GRAPH_INTERNAL_H_

// Helpers shared inside graph/ only; no other component includes this.

#include <cstdint>
#include <string_view>

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

}  // namespace tessera::graph::internal

#endif  // TESSERA_GRAPH_GRAPH_INTERNAL_H_
