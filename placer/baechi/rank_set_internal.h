#ifndef TESSERA_PLACER_BAECHI_RANK_SET_INTERNAL_H_
#define TESSERA_PLACER_BAECHI_RANK_SET_INTERNAL_H_

// Internal: a set of ranks 0..n-1 with insert, erase and "least rank" in
// a few word operations each: a bitmap with two summary levels (a bit per
// word below that is not zero). The list scheduler keeps its ready ops in
// such sets, ordered by rank (priority), instead of binary heaps: at 10^6
// ops a heap's pops missed the cache at most of their ~17 levels, and a
// set has no stale entries to pop.

#include <bit>
#include <cstdint>
#include <vector>

namespace tessera::placer {

// The ops from the highest priority to the lowest (ties: lower id first):
// by_rank[r] is the op of rank r.
std::vector<uint32_t> ByPriority(const std::vector<double>& priority);

class RankSet {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;

  explicit RankSet(uint32_t n = 0) { Resize(n); }

  void Resize(uint32_t n) {
    const size_t w0 = (static_cast<size_t>(n) + 63) / 64;
    const size_t w1 = (w0 + 63) / 64;
    const size_t w2 = (w1 + 63) / 64;
    bits_.assign(w0, 0);
    l1_.assign(w1, 0);
    l2_.assign(w2, 0);
    size_ = 0;
    min_ = kUnknown;
  }

  bool Contains(uint32_t r) const { return (bits_[r >> 6] >> (r & 63)) & 1u; }
  bool empty() const { return size_ == 0; }
  uint32_t size() const { return size_; }

  void Insert(uint32_t r) {
    uint64_t& w = bits_[r >> 6];
    const uint64_t bit = uint64_t{1} << (r & 63);
    if (w & bit) return;
    w |= bit;
    ++size_;
    if (size_ == 1 || (min_ != kUnknown && r < min_)) min_ = r;
    l1_[r >> 12] |= uint64_t{1} << ((r >> 6) & 63);
    l2_[r >> 18] |= uint64_t{1} << ((r >> 12) & 63);
  }

  void Erase(uint32_t r) {
    uint64_t& w = bits_[r >> 6];
    const uint64_t bit = uint64_t{1} << (r & 63);
    if (!(w & bit)) return;
    w &= ~bit;
    --size_;
    if (r == min_) min_ = kUnknown;
    if (w != 0) return;
    uint64_t& w1 = l1_[r >> 12];
    w1 &= ~(uint64_t{1} << ((r >> 6) & 63));
    if (w1 != 0) return;
    l2_[r >> 18] &= ~(uint64_t{1} << ((r >> 12) & 63));
  }

  // The least rank in the set, or kNone. Remembered until it is erased.
  uint32_t Min() const {
    if (size_ == 0) return kNone;
    if (min_ != kUnknown) return min_;
    size_t i2 = 0;
    while (l2_[i2] == 0) ++i2;
    const size_t i1 = i2 * 64 + static_cast<size_t>(std::countr_zero(l2_[i2]));
    const size_t i0 = i1 * 64 + static_cast<size_t>(std::countr_zero(l1_[i1]));
    min_ = static_cast<uint32_t>(
        i0 * 64 + static_cast<size_t>(std::countr_zero(bits_[i0])));
    return min_;
  }

 private:
  std::vector<uint64_t> bits_, l1_, l2_;
  uint32_t size_ = 0;
  // The least rank when known; kUnknown after the least was erased (the
  // next Min finds it again).
  static constexpr uint32_t kUnknown = UINT32_MAX - 1;
  mutable uint32_t min_ = kUnknown;
};

}  // namespace tessera::placer

#endif  // TESSERA_PLACER_BAECHI_RANK_SET_INTERNAL_H_
