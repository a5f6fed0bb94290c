#include "placer/solver/glpk.h"

#include <string>

namespace tessera::placer {

Result<SolveStatus> GlpkSimplexStatus(int rc, int status) {
  if (rc == GLP_ENOPFS) return SolveStatus::kInfeasible;
  const bool ran = rc == 0 || rc == GLP_EITLIM || rc == GLP_ETMLIM ||
                   rc == GLP_EOBJLL || rc == GLP_EOBJUL;
  if (!ran) {
    return Internal("GLPK's simplex returned " + std::to_string(rc) +
                    " with status " + std::to_string(status));
  }
  switch (status) {
    case GLP_OPT:
      return SolveStatus::kOptimal;
    case GLP_FEAS:
    case GLP_UNBND:
      return SolveStatus::kFeasible;
    case GLP_NOFEAS:
      return SolveStatus::kInfeasible;
    default:
      return SolveStatus::kNoSolution;
  }
}

}  // namespace tessera::placer
