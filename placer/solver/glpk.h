#ifndef TESSERA_PLACER_SOLVER_GLPK_H_
#define TESSERA_PLACER_SOLVER_GLPK_H_

// GLPK, the LP solver of m-SCT (placer/) and of the trace replay's physical
// limit (sim/), under one rule: Debian's GLPK keeps its environment per
// thread (thread-local storage), so a problem belongs to the thread that
// made it, problems on different threads are solved at the same time
// without a lock, and a thread other than the main one that used GLPK calls
// ReleaseThreadSolverMemory (place.h) before it ends (ParallelFor does).

#include <glpk.h>

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

}  // namespace tessera::placer

#endif  // TESSERA_PLACER_SOLVER_GLPK_H_
