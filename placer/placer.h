#ifndef TESSERA_PLACER_PLACER_H_
#define TESSERA_PLACER_PLACER_H_

// placer/: where each operator runs: memory-constrained placement over
// residual GPU capacity and the step-time simulator. The public header of
// the component; it may include only its own headers and those of the
// layers below it (common <- graph <- estimator <- placer <- scheduler <-
// cli), which tests/layering checks.

#include "estimator/estimator.h"
#include "placer/core/cluster.h"
#include "placer/core/place.h"
#include "placer/core/problem.h"
#include "placer/core/simulator.h"
#include "placer/report/plan_io.h"
#include "placer/report/plan_report.h"

#endif  // TESSERA_PLACER_PLACER_H_
