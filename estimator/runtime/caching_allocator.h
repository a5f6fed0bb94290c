#ifndef TESSERA_ESTIMATOR_RUNTIME_CACHING_ALLOCATOR_H_
#define TESSERA_ESTIMATOR_RUNTIME_CACHING_ALLOCATOR_H_

// A simulation of a framework's caching GPU allocator (PyTorch's
// CUDACachingAllocator, without streams): requests are rounded, served
// best-fit from cached free blocks of their pool (small or large) and split;
// when none fits, a new segment is taken from the GPU and kept. Freed blocks
// merge with free neighbours in their segment and stay cached. It reports
// the live bytes (allocated) and the bytes held from the GPU (reserved),
// and their peaks.

#include <cstdint>
#include <map>
#include <set>
#include <tuple>
#include <vector>

namespace tessera::estimator {

struct AllocatorRules {
  int64_t round_bytes = 512;
  int64_t small_limit = int64_t{1} << 20;    // small pool: requests <= this
  int64_t small_segment = int64_t{2} << 20;  // small pool's segment size
  int64_t mid_limit = int64_t{10} << 20;     // below: mid_segment segments
  int64_t mid_segment = int64_t{20} << 20;
  int64_t large_round = int64_t{2} << 20;  // larger: rounded to this
};

class CachingAllocator {
 public:
  explicit CachingAllocator(const AllocatorRules& rules) : rules_(rules) {}

  // Allocates `bytes` (> 0) and returns a handle for Free.
  int64_t Allocate(int64_t bytes);
  // Frees a handle Allocate returned (each once).
  void Free(int64_t handle);

  int64_t allocated() const { return allocated_; }
  int64_t reserved() const { return reserved_; }
  int64_t peak_allocated() const { return peak_allocated_; }
  int64_t peak_reserved() const { return peak_reserved_; }
  // Starts the peaks again from the current values (as
  // torch.cuda.reset_peak_memory_stats does).
  void ResetPeaks() {
    peak_allocated_ = allocated_;
    peak_reserved_ = reserved_;
  }
  int64_t RoundedSize(int64_t bytes) const;

 private:
  struct Block {
    int64_t segment = 0, offset = 0, size = 0;
    bool free = false;
    bool small = false;
  };
  // (size, segment, offset) of a free block, ordered for best fit.
  using Key = std::tuple<int64_t, int64_t, int64_t>;
  void InsertFree(int64_t id);
  void EraseFree(int64_t id);

  AllocatorRules rules_;
  std::map<int64_t, Block> blocks_;  // by id
  // Per segment: offset -> block id, to find neighbours.
  std::map<int64_t, std::map<int64_t, int64_t>> segments_;
  std::set<std::pair<Key, int64_t>> free_small_, free_large_;
  int64_t next_id_ = 1, next_segment_ = 1;
  int64_t allocated_ = 0, reserved_ = 0;
  int64_t peak_allocated_ = 0, peak_reserved_ = 0;
};

}  // namespace tessera::estimator

#endif  // TESSERA_ESTIMATOR_RUNTIME_CACHING_ALLOCATOR_H_
