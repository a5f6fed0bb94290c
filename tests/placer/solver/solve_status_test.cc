// The one solve-status type of placer/'s solvers (solver/solve_status.h):
// its names, and how CBC's and GLPK's answers map onto it.
#include "placer/solver/solve_status.h"

#include <glpk.h>
#include <gtest/gtest.h>

#include "placer/solver/glpk.h"
#include "placer/solver/mip.h"

namespace tessera::placer {
namespace {

TEST(SolveStatus, NamesAndSolutions) {
  EXPECT_EQ(SolveStatusName(SolveStatus::kOptimal), "optimal");
  EXPECT_EQ(SolveStatusName(SolveStatus::kFeasible), "feasible");
  EXPECT_EQ(SolveStatusName(SolveStatus::kInfeasible), "infeasible");
  EXPECT_EQ(SolveStatusName(SolveStatus::kNoSolution), "no solution");
  EXPECT_TRUE(HasSolution(SolveStatus::kOptimal));
  EXPECT_TRUE(HasSolution(SolveStatus::kFeasible));
  EXPECT_FALSE(HasSolution(SolveStatus::kInfeasible));
  EXPECT_FALSE(HasSolution(SolveStatus::kNoSolution));
}

TEST(SolveStatus, NoSolutionErrorKeepsTheExitCodes) {
  const Error infeasible = NoSolutionError(SolveStatus::kInfeasible, "full");
  EXPECT_EQ(infeasible.code, ErrorCode::kInfeasible);
  EXPECT_EQ(infeasible.message, "full");
  const Error stopped = NoSolutionError(SolveStatus::kNoSolution, "slow");
  EXPECT_EQ(stopped.code, ErrorCode::kInternal);
  EXPECT_EQ(stopped.message, "slow");
}

TEST(SolveStatus, FromCbc) {
  // has_solution, proven_optimal, proven_infeasible.
  EXPECT_EQ(CbcStatus(true, true, false), SolveStatus::kOptimal);
  EXPECT_EQ(CbcStatus(true, false, false), SolveStatus::kFeasible);
  EXPECT_EQ(CbcStatus(false, false, true), SolveStatus::kInfeasible);
  EXPECT_EQ(CbcStatus(false, false, false), SolveStatus::kNoSolution);
  // Without a solution CBC's "optimal" proves nothing usable.
  EXPECT_EQ(CbcStatus(false, true, false), SolveStatus::kNoSolution);
}

TEST(SolveStatus, FromGlpkSimplex) {
  const auto status = [](int rc, int s) {
    Result<SolveStatus> r = GlpkSimplexStatus(rc, s);
    EXPECT_TRUE(r) << rc << " " << s;
    return r ? *r : SolveStatus::kNoSolution;
  };
  EXPECT_EQ(status(0, GLP_OPT), SolveStatus::kOptimal);
  EXPECT_EQ(status(0, GLP_FEAS), SolveStatus::kFeasible);
  EXPECT_EQ(status(0, GLP_UNBND), SolveStatus::kFeasible);
  EXPECT_EQ(status(0, GLP_NOFEAS), SolveStatus::kInfeasible);
  EXPECT_EQ(status(0, GLP_INFEAS), SolveStatus::kNoSolution);
  EXPECT_EQ(status(0, GLP_UNDEF), SolveStatus::kNoSolution);
  // Stopped by a limit: whatever the basis had reached.
  EXPECT_EQ(status(GLP_ETMLIM, GLP_FEAS), SolveStatus::kFeasible);
  EXPECT_EQ(status(GLP_EITLIM, GLP_INFEAS), SolveStatus::kNoSolution);
  EXPECT_EQ(status(GLP_ENOPFS, GLP_UNDEF), SolveStatus::kInfeasible);
  // A failed call is an error, not a status.
  Result<SolveStatus> failed = GlpkSimplexStatus(GLP_ESING, GLP_UNDEF);
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().code, ErrorCode::kInternal);
  EXPECT_EQ(failed.error().message,
            "GLPK's simplex returned " + std::to_string(GLP_ESING) +
                " with status " + std::to_string(GLP_UNDEF));
}

}  // namespace
}  // namespace tessera::placer
