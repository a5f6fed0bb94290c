#ifndef TESSERA_PLACER_SOLVER_SOLVE_STATUS_H_
#define TESSERA_PLACER_SOLVER_SOLVE_STATUS_H_

// What a solver found, kept apart from whether the call worked, as HiGHS
// keeps the model's status (HighsModelStatus) apart from the call's
// (HighsStatus). A call that failed (bad input, a solver that crashed or
// was killed with nothing to fall back on) returns an Error; a call that
// ran returns its result with a SolveStatus, whatever it found. Every
// solver in placer/ reports one: CBC's MIPs (Mip::Solve, the `ilp`
// algorithm, the max-load ILP), m-SCT's LP (GLPK), the exact DPs (the
// max-load DP, the pipeline's exact split) and local search.

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace tessera::placer {

enum class SolveStatus : uint8_t {  // append only
  // A solution, proven optimal (within the solver's tolerances).
  kOptimal,
  // A solution, not proven optimal: a limit (time, states, blocks) or the
  // solver's failure after a first solution stopped the search, or the
  // method proves nothing (local search).
  kFeasible,
  // Proven: no solution exists.
  kInfeasible,
  // A limit stopped the search before it found any solution.
  kNoSolution,
};

// "optimal", "feasible", "infeasible", "no solution".
std::string_view SolveStatusName(SolveStatus s);

// Whether `s` comes with a solution: kOptimal or kFeasible.
bool HasSolution(SolveStatus s);

// The error a caller that needs a solution returns for a result without
// one, with `why` as its message: kInfeasible (exit 3) for kInfeasible,
// kInternal for kNoSolution (the limit was too short: raise it, or use
// another algorithm). REQUIRES: !HasSolution(s).
Error NoSolutionError(SolveStatus s, std::string why);

}  // namespace tessera::placer

#endif  // TESSERA_PLACER_SOLVER_SOLVE_STATUS_H_
