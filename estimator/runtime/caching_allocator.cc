#include "estimator/runtime/caching_allocator.h"

#include <algorithm>
#include <iterator>

namespace tessera::estimator {

int64_t CachingAllocator::RoundedSize(int64_t bytes) const {
  const int64_t r = std::max<int64_t>(rules_.round_bytes, 1);
  return std::max<int64_t>(r, (bytes + r - 1) / r * r);
}

void CachingAllocator::InsertFree(int64_t id) {
  const Block& b = blocks_.at(id);
  (b.small ? free_small_ : free_large_)
      .insert({Key{b.size, b.segment, b.offset}, id});
}

void CachingAllocator::EraseFree(int64_t id) {
  const Block& b = blocks_.at(id);
  (b.small ? free_small_ : free_large_)
      .erase({Key{b.size, b.segment, b.offset}, id});
}

int64_t CachingAllocator::Allocate(int64_t bytes) {
  const int64_t size = RoundedSize(bytes);
  const bool small = size <= rules_.small_limit;
  auto& pool = small ? free_small_ : free_large_;
  auto it = pool.lower_bound({Key{size, 0, 0}, 0});
  int64_t id = 0;
  if (it != pool.end()) {
    id = it->second;
    pool.erase(it);
  } else {
    const int64_t segment_size =
        small                     ? rules_.small_segment
        : size < rules_.mid_limit ? rules_.mid_segment
                                  : (size + rules_.large_round - 1) /
                                        rules_.large_round * rules_.large_round;
    id = next_id_++;
    const int64_t seg = next_segment_++;
    blocks_[id] = Block{seg, 0, std::max(segment_size, size), false, small};
    segments_[seg][0] = id;
    reserved_ += blocks_[id].size;
  }
  Block& b = blocks_[id];
  b.free = false;
  // Split off the rest when it is worth keeping: any remainder in the small
  // pool, more than the small limit in the large pool.
  const int64_t rest = b.size - size;
  if (rest >= rules_.round_bytes && (small || rest > rules_.small_limit)) {
    const int64_t rid = next_id_++;
    blocks_[rid] = Block{b.segment, b.offset + size, rest, true, small};
    segments_[b.segment][b.offset + size] = rid;
    blocks_[id].size = size;
    InsertFree(rid);
  }
  allocated_ += blocks_[id].size;
  peak_allocated_ = std::max(peak_allocated_, allocated_);
  peak_reserved_ = std::max(peak_reserved_, reserved_);
  return id;
}

void CachingAllocator::Free(int64_t handle) {
  auto found = blocks_.find(handle);
  if (found == blocks_.end() || found->second.free) return;
  allocated_ -= found->second.size;
  found->second.free = true;
  auto& seg = segments_[found->second.segment];
  int64_t id = handle;
  // Merge with the next block, then with the previous one, when free.
  auto here = seg.find(found->second.offset);
  auto next = std::next(here);
  if (next != seg.end() && blocks_[next->second].free) {
    const int64_t nid = next->second;
    EraseFree(nid);
    blocks_[id].size += blocks_[nid].size;
    blocks_.erase(nid);
    seg.erase(next);
  }
  here = seg.find(blocks_[id].offset);
  if (here != seg.begin()) {
    auto prev = std::prev(here);
    if (blocks_[prev->second].free) {
      const int64_t pid = prev->second;
      EraseFree(pid);
      blocks_[pid].size += blocks_[id].size;
      blocks_.erase(id);
      seg.erase(here);
      id = pid;
    }
  }
  InsertFree(id);
}

}  // namespace tessera::estimator
