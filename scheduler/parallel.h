#ifndef TESSERA_SCHEDULER_PARALLEL_H_
#define TESSERA_SCHEDULER_PARALLEL_H_

// Independent runs of the trace replay and the model simulation spread over
// the machine's cores.

#include <functional>

namespace tessera::scheduler {

// Calls body(i) for every i in [0, n), on `threads` threads (0: one per
// core; never more than n), the calling thread among them; returns when all
// are done. `body` must be safe to call concurrently for different i. Each
// worker thread frees the LP solver's per-thread memory before it ends.
void ParallelFor(int n, int threads, const std::function<void(int)>& body);

}  // namespace tessera::scheduler

#endif  // TESSERA_SCHEDULER_PARALLEL_H_
