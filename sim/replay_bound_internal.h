#ifndef TESSERA_SIM_REPLAY_BOUND_INTERNAL_H_
#define TESSERA_SIM_REPLAY_BOUND_INTERNAL_H_

// An upper bound on the GPU capacity any placement could allocate to a set
// of pods: the linear relaxation of packing their GPU requests into the
// cluster's GPUs (a configuration LP, solved by column generation with
// GLPK). Fractions of one GPU pack into GPUs of 1000 milli by patterns;
// whole-GPU pods take whole GPUs. It ignores CPU, memory, GPU kinds and
// which GPUs share a node, so every placement policy is at or below it:
// the "physical limit" of the trace replay (docs/simulate.md).

#include <cstdint>
#include <vector>

#include "common/result.h"
#include "sim/trace.h"

namespace tessera::sim {

// The largest GPU milli that `pods` could hold on `gpus` GPUs (the GPUs'
// capacity where column generation does not converge: still a bound). It
// is solved in a forked child (common/isolated.h); kInternal when the
// child crashed or ran past its deadline. Thread-safe, but fork-safe only
// where no other thread of the process can hold a lock the child needs.
Result<double> GpuPackingBoundMilli(const std::vector<const TracePod*>& pods,
                                    int64_t gpus);

}  // namespace tessera::sim

#endif  // TESSERA_SIM_REPLAY_BOUND_INTERNAL_H_
