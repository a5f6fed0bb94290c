// RankSet's companion: the ops' order by priority (rank_set_internal.h).

#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

#include "placer/baechi/rank_set_internal.h"

namespace tessera::placer {

// Four passes of a stable radix sort over the priorities' bits, turned so
// that the highest priority has the least key.
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
  constexpr int kBits = 16;
  std::vector<size_t> count(size_t{1} << kBits);
  for (int shift = 0; shift < 64; shift += kBits) {
    std::fill(count.begin(), count.end(), 0);
    for (size_t i = 0; i < n; ++i) ++count[(key[i] >> shift) & 0xffff];
    if (count[(key[0] >> shift) & 0xffff] == n) continue;  // one digit
    size_t sum = 0;
    for (size_t& c : count) {
      const size_t here = c;
      c = sum;
      sum += here;
    }
    for (size_t i = 0; i < n; ++i) {
      const size_t at = count[(key[i] >> shift) & 0xffff]++;
      key2[at] = key[i];
      ops2[at] = ops[i];
    }
    key.swap(key2);
    ops.swap(ops2);
  }
  return ops;
}

}  // namespace tessera::placer
