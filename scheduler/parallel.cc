// ParallelFor: a shared counter hands out the indices.
#include "scheduler/parallel.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "placer/core/place.h"

namespace tessera::scheduler {

void ParallelFor(int n, int threads, const std::function<void(int)>& body) {
  if (n <= 0) return;
  if (threads <= 0) {
    threads = static_cast<int>(std::thread::hardware_concurrency());
  }
  threads = std::clamp(threads, 1, n);
  std::atomic<int> next{0};
  auto work = [&] {
    for (int i = next++; i < n; i = next++) body(i);
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) {
    pool.emplace_back([&] {
      work();
      placer::ReleaseThreadSolverMemory();
    });
  }
  work();
  for (std::thread& t : pool) t.join();
}

}  // namespace tessera::scheduler
