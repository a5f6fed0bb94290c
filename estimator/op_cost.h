#ifndef TESSERA_ESTIMATOR_OP_COST_H_
#define TESSERA_ESTIMATOR_OP_COST_H_

// Per-operator cost: MACs, FLOPs, bytes read and written, weight, output and
// workspace bytes, keyed by (domain, op type). Being written for the
// estimator issue.

#include "graph/graph.h"

#endif  // TESSERA_ESTIMATOR_OP_COST_H_
