#ifndef TESSERA_PLACER_SOLVER_MIP_H_
#define TESSERA_PLACER_SOLVER_MIP_H_

// A mixed-integer program for CBC through its C interface: columns and
// rows added one by one, then solved in a child process (Solve), so that
// CBC can crash, abort, overrun its time limit or exhaust memory without
// taking tessera down. CBC's C interface runs the standalone solver
// (CbcMain1), which keeps global state: hold CbcMutex() while a model is
// built and solved (one model at a time per process).

#include <coin/Cbc_C_Interface.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "common/result.h"
#include "placer/solver/solve_status.h"

namespace tessera::placer {

std::mutex& CbcMutex();

// Address space a MIP solve may add to tessera's: the zoo's ILPs (up to
// 54 groups) grow it by about 5 MiB, the max-load ILP on the published
// inputs by up to 121 MiB (inceptionv3_training, 652 nodes); 4 GiB is
// ample and still stops a runaway solve long before a 24 GiB host swaps.
inline constexpr int64_t kMipMemoryBytes = int64_t{4} << 30;

// What CBC found within its time limit. Keeps "the solve failed" (an Error
// from Solve) apart from "what the solver found" (this).
struct MipOutcome {
  SolveStatus status = SolveStatus::kNoSolution;
  std::vector<double> solution;  // one value per column; empty: none found
  double objective = 0.0;        // of `solution`
  double best_possible = 0.0;    // CBC's lower bound (minimising)
};

// The status of CBC's answer: kOptimal or kFeasible with a solution (as
// proven or not), kInfeasible when proven so, kNoSolution otherwise.
SolveStatus CbcStatus(bool has_solution, bool proven_optimal,
                      bool proven_infeasible);

// Tests only: while `signal` is not 0, every solve's child raises it before
// CBC runs (a crash of the solver, on demand). Process-wide.
void SetMipChildFaultForTesting(int signal);

class Mip {
 public:
  // Quiet (TESSERA_CBC_LOG in the environment: CBC's log on stdout), time
  // limits in elapsed seconds.
  Mip();
  ~Mip() { Cbc_deleteModel(m_); }
  Mip(const Mip&) = delete;
  Mip& operator=(const Mip&) = delete;

  // Columns are named c0, c1, ...: CBC matches a MIP start to columns by
  // name, so unnamed columns make every start unusable.
  int AddCol(double lb, double ub, double obj, bool integer) {
    const std::string name = "c" + std::to_string(cols_);
    Cbc_addCol(m_, name.c_str(), lb, ub, obj, integer ? 1 : 0, 0, nullptr,
               nullptr);
    return cols_++;
  }
  // sense: 'L' (<=), 'G' (>=), 'E' (=).
  void AddRow(const std::vector<int>& cols, const std::vector<double>& coefs,
              char sense, double rhs) {
    Cbc_addRow(m_, "", static_cast<int>(cols.size()), cols.data(), coefs.data(),
               sense, rhs);
  }
  int cols() const { return cols_; }
  Cbc_Model* get() { return m_; }

  // Solves with CBC's time limit `time_limit_s` (elapsed time, at least
  // 0.01 s) in a child process (common/isolated.h) that is killed at a
  // deadline past that limit (CBC does not look at its clock everywhere)
  // and may grow by kMipMemoryBytes. A crash, abort, kill or memory cap in
  // the child is an Error (kInternal) naming what happened.
  Result<MipOutcome> Solve(double time_limit_s);

 private:
  Cbc_Model* m_;
  int cols_ = 0;
};

}  // namespace tessera::placer

#endif  // TESSERA_PLACER_SOLVER_MIP_H_
