#ifndef TESSERA_PLACER_PLACER_H_
#define TESSERA_PLACER_PLACER_H_

// placer/: where each operator runs: memory-constrained placement over
// residual GPU capacity and the step-time simulator. The public header of
// the component; it may include only its own headers and those of the
// layers below it (common <- graph <- estimator <- placer <- scheduler <-
// cli), which tests/layering checks.

#include "estimator/estimator.h"
#include "placer/cluster.h"
#include "placer/place.h"
#include "placer/plan_io.h"
#include "placer/plan_report.h"
#include "placer/problem.h"
#include "placer/simulator.h"

#endif  // TESSERA_PLACER_PLACER_H_
