#ifndef TESSERA_ESTIMATOR_ESTIMATOR_H_
#define TESSERA_ESTIMATOR_ESTIMATOR_H_

// estimator/: what each operator costs: per-operator MACs, FLOPs, bytes,
// memory and time on a device. The public header of the component; it may
// include only its own headers and those of the layers below it (common <-
// graph <- estimator <- placer <- scheduler <- cli), which tests/layering
// checks.

#include "estimator/device_catalog.h"
#include "estimator/interference.h"
#include "estimator/memory_model.h"
#include "estimator/op_cost.h"
#include "estimator/profile.h"
#include "estimator/time_model.h"
#include "graph/graph.h"

#endif  // TESSERA_ESTIMATOR_ESTIMATOR_H_
