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

// Pushes `n` entries for ops 0..n-1, arrivals drawn from 0..arrivals-1 and
// ranks from 0..ranks-1 (ranks == 0: the op's own id); returns them.
std::vector<PendingEntry> PushRandom(PendingHeap& heap, int n,
                                     uint64_t arrivals, uint64_t ranks,
                                     std::mt19937_64& rng) {
  std::vector<PendingEntry> all;
  for (int i = 0; i < n; ++i) {
    const double arrival = static_cast<double>(rng() % arrivals);
    const auto rank = static_cast<uint32_t>(ranks == 0 ? i : rng() % ranks);
    const PendingEntry e{arrival, rank, static_cast<uint32_t>(i)};
    heap.Push(e);
    all.push_back(e);
  }
  return all;
}

TEST(PendingHeap, PopsInArrivalThenRankOrder) {
  std::mt19937_64 rng(1);
  for (int round = 0; round < 200; ++round) {
    const int n = 1 + static_cast<int>(rng() % 300);
    PendingHeap heap;
    // Few distinct arrivals, so that ranks break many ties.
    const std::vector<PendingEntry> all = PushRandom(heap, n, 7, 0, rng);
    ExpectPopsInOrder(heap, all);
  }
}

TEST(PendingHeap, EraseIfKeepsAHeapOfTheRest) {
  std::mt19937_64 rng(2);
  for (int round = 0; round < 300; ++round) {
    const int n = 1 + static_cast<int>(rng() % 400);
    PendingHeap heap;
    std::vector<PendingEntry> all = PushRandom(heap, n, 50, 100000, rng);
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
