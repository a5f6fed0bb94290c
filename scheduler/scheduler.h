#ifndef TESSERA_SCHEDULER_SCHEDULER_H_
#define TESSERA_SCHEDULER_SCHEDULER_H_

// scheduler/: who runs when: the fractional-GPU job queue, its durable store
// and the trace replay (issue: Queue service). The public header of the
// component; it may include only its own headers and those of the layers below
// it (common <- graph <- estimator <- placer
// <- scheduler <- cli), which tests/layering checks.

#include "placer/placer.h"
#include "scheduler/service.h"

#endif  // TESSERA_SCHEDULER_SCHEDULER_H_
