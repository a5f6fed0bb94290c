#ifndef TESSERA_PLACER_BAECHI_PENDING_HEAP_INTERNAL_H_
#define TESSERA_PLACER_BAECHI_PENDING_HEAP_INTERNAL_H_

// Internal: the list scheduler's `pending` heaps (list_scheduler.cc): per
// device, the ready ops whose inputs arrive there after it is free, least
// (arrival, rank) on top. A 4-ary heap of 16-byte entries: at 10^6 ops x 8
// devices each op passes through most devices' heaps, and std's binary
// heap of 24-byte entries (arrival, priority, op) took 7% of `perf`'s
// samples in its sift-downs; this one takes 2-3% off m-ETF. The keys are
// unique (an op enters a device's heap once; ranks are distinct), so the
// top, and so the schedule, does not depend on the heap's shape.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tessera::placer {

struct PendingEntry {
  double arrival;  // when the op's inputs would be on the device
  uint32_t rank;   // the op's place by priority (rank_set_internal.h)
  uint32_t op;
};

class PendingHeap {
 public:
  bool empty() const { return v_.empty(); }
  size_t size() const { return v_.size(); }
  const PendingEntry& top() const { return v_.front(); }

  void Push(const PendingEntry& e) {
    size_t i = v_.size();
    v_.push_back(e);
    while (i > 0) {
      const size_t parent = (i - 1) / kArity;
      if (!Before(e, v_[parent])) break;
      v_[i] = v_[parent];
      i = parent;
    }
    v_[i] = e;
  }

  void Pop() {
    const PendingEntry last = v_.back();
    v_.pop_back();
    if (!v_.empty()) SiftDown(0, last);
  }

  // Removes the entries `drop` holds for and restores the heap.
  template <typename Pred>
  void EraseIf(Pred drop) {
    std::erase_if(v_, drop);
    for (size_t i = v_.size() / kArity + 1; i-- > 0;) {
      if (i < v_.size()) SiftDown(i, v_[i]);
    }
  }

 private:
  static constexpr size_t kArity = 4;

  static bool Before(const PendingEntry& a, const PendingEntry& b) {
    return a.arrival < b.arrival || (a.arrival == b.arrival && a.rank < b.rank);
  }
  // Puts `e` at hole `i` or below, moving the least children up. (`e` by
  // value: it may be the entry at `i`, which the first move overwrites.)
  void SiftDown(size_t i, PendingEntry e) {
    const size_t n = v_.size();
    for (;;) {
      const size_t first = kArity * i + 1;
      if (first >= n) break;
      const size_t end = std::min(first + kArity, n);
      size_t best = first;
      for (size_t c = first + 1; c < end; ++c) {
        if (Before(v_[c], v_[best])) best = c;
      }
      if (!Before(v_[best], e)) break;
      v_[i] = v_[best];
      i = best;
    }
    v_[i] = e;
  }

  std::vector<PendingEntry> v_;
};

}  // namespace tessera::placer

#endif  // TESSERA_PLACER_BAECHI_PENDING_HEAP_INTERNAL_H_
