// RankSet's companion: the ops' order by priority (rank_set_internal.h).

#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

#include "placer/baechi/rank_set_internal.h"

namespace tessera::placer {

// A stable radix sort over the priorities' bits, turned so that the
// highest priority has the least key.
std::vector<uint32_t> ByPriority(const std::vector<double>& priority) {
  const size_t n = priority.size();
  if (n == 0) return {};
  std::vector<uint64_t> key(n), key2(n);
  std::vector<uint32_t> ops(n), ops2(n);
  for (size_t i = 0; i < n; ++i) {
    // Doubles' bits ordered as the doubles are, then reversed: the
    // highest priority has the least key.
    // -0.0 is 0.0 (they compare equal, so their ties go by id too).
    const double x = priority[i] == 0.0 ? 0.0 : priority[i];
    const uint64_t b = std::bit_cast<uint64_t>(x);
    const uint64_t ordered = (b >> 63) ? ~b : b | (uint64_t{1} << 63);
    key[i] = ~ordered;
    ops[i] = static_cast<uint32_t>(i);
  }
  // Eight passes of one byte each (256 buckets stay in the cache, where
  // 65,536 did not), counted in one read; a byte the same in every key is
  // skipped.
  constexpr int kDigits = 8;
  std::vector<size_t> count(size_t{kDigits} << 8, 0);
  for (size_t i = 0; i < n; ++i) {
    for (int d = 0; d < kDigits; ++d) {
      ++count[(static_cast<size_t>(d) << 8) | ((key[i] >> (8 * d)) & 0xff)];
    }
  }
  for (int d = 0; d < kDigits; ++d) {
    size_t* c = count.data() + (static_cast<size_t>(d) << 8);
    const int shift = 8 * d;
    if (c[(key[0] >> shift) & 0xff] == n) continue;  // one value
    size_t sum = 0;
    for (int b = 0; b < 256; ++b) {
      const size_t here = c[b];
      c[b] = sum;
      sum += here;
    }
    for (size_t i = 0; i < n; ++i) {
      const size_t at = c[(key[i] >> shift) & 0xff]++;
      key2[at] = key[i];
      ops2[at] = ops[i];
    }
    key.swap(key2);
    ops.swap(ops2);
  }
  return ops;
}

}  // namespace tessera::placer
