#include "placer/solver/solve_status.h"

#include <cassert>
#include <utility>

namespace tessera::placer {

std::string_view SolveStatusName(SolveStatus s) {
  switch (s) {
    case SolveStatus::kOptimal:
      return "optimal";
    case SolveStatus::kFeasible:
      return "feasible";
    case SolveStatus::kInfeasible:
      return "infeasible";
    case SolveStatus::kNoSolution:
      return "no solution";
  }
  return "?";
}

bool HasSolution(SolveStatus s) {
  return s == SolveStatus::kOptimal || s == SolveStatus::kFeasible;
}

Error NoSolutionError(SolveStatus s, std::string why) {
  assert(!HasSolution(s));
  if (s == SolveStatus::kInfeasible) return Infeasible(std::move(why));
  return Internal(std::move(why));
}

}  // namespace tessera::placer
