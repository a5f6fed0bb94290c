// PendingHeap (pending_heap_internal.h): whatever was pushed, popped and
// erased, the top is the least (arrival, rank) left, as with a sorted list.
#include "placer/baechi/pending_heap_internal.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

namespace tessera::placer {
namespace {

bool Less(const PendingEntry& a, const PendingEntry& b) {
  return a.arrival < b.arrival || (a.arrival == b.arrival && a.rank < b.rank);
}

// Pops everything and checks it comes out as `expected` sorted.
void ExpectPopsInOrder(PendingHeap& heap, std::vector<PendingEntry> expected) {
  std::sort(expected.begin(), expected.end(), Less);
  ASSERT_EQ(heap.size(), expected.size());
  for (const PendingEntry& e : expected) {
    ASSERT_FALSE(heap.empty());
    EXPECT_EQ(heap.top().rank, e.rank);
    EXPECT_EQ(heap.top().arrival, e.arrival);
    heap.Pop();
  }
  EXPECT_TRUE(heap.empty());
}

TEST(PendingHeap, PopsInArrivalThenRankOrder) {
  std::mt19937_64 rng(1);
  for (int round = 0; round < 200; ++round) {
    const int n = 1 + static_cast<int>(rng() % 300);
    PendingHeap heap;
    std::vector<PendingEntry> all;
    for (int i = 0; i < n; ++i) {
      // Few distinct arrivals, so that ranks break many ties.
      const PendingEntry e{static_cast<double>(rng() % 7),
                           static_cast<uint32_t>(i), static_cast<uint32_t>(i)};
      heap.Push(e);
      all.push_back(e);
    }
    ExpectPopsInOrder(heap, all);
  }
}

TEST(PendingHeap, EraseIfKeepsAHeapOfTheRest) {
  std::mt19937_64 rng(2);
  for (int round = 0; round < 300; ++round) {
    const int n = 1 + static_cast<int>(rng() % 400);
    PendingHeap heap;
    std::vector<PendingEntry> all;
    for (int i = 0; i < n; ++i) {
      const PendingEntry e{static_cast<double>(rng() % 50),
                           static_cast<uint32_t>(rng() % 100000),
                           static_cast<uint32_t>(i)};
      heap.Push(e);
      all.push_back(e);
    }
    // Some pops first, so the heap is not in push order.
    std::sort(all.begin(), all.end(), Less);
    const size_t pops = rng() % (all.size() / 2 + 1);
    for (size_t i = 0; i < pops; ++i) heap.Pop();
    all.erase(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(pops));
    std::vector<uint8_t> gone(n, 0);
    for (uint8_t& g : gone) g = rng() % 3 == 0;
    heap.EraseIf([&](const PendingEntry& e) { return gone[e.op] != 0; });
    std::erase_if(all, [&](const PendingEntry& e) { return gone[e.op] != 0; });
    ExpectPopsInOrder(heap, all);
  }
}

}  // namespace
}  // namespace tessera::placer
