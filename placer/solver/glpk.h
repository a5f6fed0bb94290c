#ifndef TESSERA_PLACER_SOLVER_GLPK_H_
#define TESSERA_PLACER_SOLVER_GLPK_H_

// GLPK, the LP solver of m-SCT (placer/) and of the trace replay's physical
// limit (sim/), under one rule: Debian's GLPK keeps its environment per
// thread (thread-local storage), so a problem belongs to the thread that
// made it, problems on different threads are solved at the same time
// without a lock, and a thread other than the main one that used GLPK calls
// ReleaseThreadSolverMemory (place.h) before it ends (ParallelFor does).

#include <glpk.h>

#include "common/result.h"
#include "placer/solver/solve_status.h"

namespace tessera::placer {

// One GLPK problem, deleted with its owner.
class GlpkProblem {
 public:
  GlpkProblem() : lp_(glp_create_prob()) {}
  ~GlpkProblem() { glp_delete_prob(lp_); }
  GlpkProblem(const GlpkProblem&) = delete;
  GlpkProblem& operator=(const GlpkProblem&) = delete;

  glp_prob* get() const { return lp_; }

 private:
  glp_prob* lp_;
};

// What glp_simplex found, from its return code `rc` and glp_get_status's
// `status`: after a return of 0 or a limit (iterations, time, objective),
// GLP_OPT is kOptimal, GLP_FEAS (and GLP_UNBND: feasible, no optimum) is
// kFeasible, GLP_NOFEAS kInfeasible, anything else kNoSolution;
// GLP_ENOPFS (the presolver's "no primal feasible solution") is
// kInfeasible. Any other return code is a failed call: kInternal, "GLPK's
// simplex returned <rc> with status <status>".
Result<SolveStatus> GlpkSimplexStatus(int rc, int status);

}  // namespace tessera::placer

#endif  // TESSERA_PLACER_SOLVER_GLPK_H_
