// Mip::Solve: CBC in a child process, its answer read back column by
// column. Why the child and which CBC settings avoid its known crash:
// docs/placer_pipeline_ilp.md, "CBC in a child process".
#include "placer/solver/mip.h"

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdlib>

#include "common/isolated.h"

namespace tessera::placer {
namespace {

// When the child is killed: CBC checks its clock between nodes and cut
// passes, not inside an LP or a heuristic, and overran its limit by up to
// 1.35x on the published max-load inputs (inceptionv3_training, 652
// nodes: 9.1 s for a 6.8 s limit) on a 2-core machine; a solve still
// running at twice its limit plus 5 s is stuck.
double Deadline(double time_limit_s) { return 2.0 * time_limit_s + 5.0; }

std::atomic<int> child_fault{0};

}  // namespace

void SetMipChildFaultForTesting(int signal) { child_fault = signal; }

SolveStatus CbcStatus(bool has_solution, bool proven_optimal,
                      bool proven_infeasible) {
  if (has_solution) {
    return proven_optimal ? SolveStatus::kOptimal : SolveStatus::kFeasible;
  }
  return proven_infeasible ? SolveStatus::kInfeasible
                           : SolveStatus::kNoSolution;
}

Mip::Mip() : m_(Cbc_newModel()) {
  Cbc_setLogLevel(m_, 0);
  Cbc_setParameter(m_, "log", std::getenv("TESSERA_CBC_LOG") ? "3" : "0");
  Cbc_setParameter(m_, "slog", "0");
  Cbc_setParameter(m_, "timeMode", "elapsed");
  // CBC 2.10's preprocessing (CglPreProcess) segfaults in its
  // postProcess when the time limit falls inside it or the root LP after
  // it ("The LP relaxation is infeasible or too expensive"): resnet50 on
  // models/clusters/crumbs.yaml at 0.0001-0.01 s, vgg16 at 0.0001 s.
  // Without it no limit crashes (tests/placer/ilp/ilp_time_limit_test.cc) and
  // the zoo and the published max-load inputs solve as well and as fast
  // (docs/placer_pipeline_ilp.md, "CBC in a child process").
  Cbc_setParameter(m_, "preprocess", "off");
}

Result<MipOutcome> Mip::Solve(double time_limit_s) {
  const double limit = std::max(0.01, time_limit_s);
  Cbc_setMaximumSeconds(m_, limit);
  const int n = cols_;
  Cbc_Model* m = m_;
  const int fault = child_fault;
  auto solve = [m, n, fault]() {
    if (fault != 0) std::raise(fault);
    Cbc_solve(m);
    ByteWriter w;
    const double* sol = Cbc_bestSolution(m);
    w.Put(static_cast<uint8_t>(sol != nullptr));
    w.Put(static_cast<uint8_t>(Cbc_isProvenInfeasible(m) != 0));
    w.Put(static_cast<uint8_t>(Cbc_isProvenOptimal(m) != 0));
    w.Put(sol != nullptr ? Cbc_getObjValue(m) : 0.0);
    w.Put(Cbc_getBestPossibleObjValue(m));
    if (sol != nullptr) w.PutDoubles(sol, static_cast<size_t>(n));
    return w.Take();
  };
  IsolationLimits limits;
  limits.deadline_s = Deadline(limit);
  limits.memory_bytes = kMipMemoryBytes;
  Result<std::string> answer = RunIsolated(solve, limits, "CBC's MIP solve");
  if (!answer) return answer.error();
  ByteReader r(*answer);
  MipOutcome out;
  uint8_t has = 0, infeasible = 0, optimal = 0;
  bool ok = r.Get(&has) && r.Get(&infeasible) && r.Get(&optimal) &&
            r.Get(&out.objective) && r.Get(&out.best_possible);
  if (ok && has) ok = r.GetDoubles(static_cast<size_t>(n), &out.solution);
  if (!ok || !r.at_end()) {
    return Internal("CBC's MIP solve answered " +
                    std::to_string(answer->size()) +
                    " bytes that do not decode (a tessera bug)");
  }
  out.status = CbcStatus(has != 0, optimal != 0, infeasible != 0);
  return out;
}

}  // namespace tessera::placer
