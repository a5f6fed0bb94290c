#ifndef TESSERA_ESTIMATOR_ESTIMATOR_H_
#define TESSERA_ESTIMATOR_ESTIMATOR_H_

// estimator/: what each operator costs: per-operator FLOPs, bytes, memory and
// time on a device (issue: Estimator). The public header of the component; it
// may include only its own headers and those of the layers below it (common <-
// graph <- estimator <- placer
// <- scheduler <- cli), which tests/layering checks.

#include "graph/graph.h"

#endif  // TESSERA_ESTIMATOR_ESTIMATOR_H_
