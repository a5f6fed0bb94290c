// GpuPackingBoundMilli: column generation over GPU patterns.
//
// Rows: one per fraction size s (at most n_s pods of that size), one for
// the GPUs. Columns: whole-GPU pods of k GPUs (at most n_k, value 1000 k,
// k GPUs each) and patterns (a multiset of fraction sizes summing to at
// most 1000, value their sum, one GPU each). A pattern improves the LP
// when its value at the row duals, sum (s - pi_s), exceeds the GPU dual;
// the best one is a bounded knapsack over 1000 milli.
#include "sim/replay_bound_internal.h"

#include <algorithm>
#include <map>

#include "common/isolated.h"
#include "placer/solver/glpk.h"

namespace tessera::sim {

// What this file uses of scheduler/, beyond what its headers name.
using scheduler::kFullGpuMilli;

namespace {

// Column generation stops after this many patterns; the LP value is a
// valid bound only at convergence, so RunBound then returns the GPUs'
// capacity (openb converges in well under a hundred).
constexpr int kMaxPatterns = 2000;
constexpr double kEps = 1e-7;

struct Sizes {
  std::vector<int> milli;    // fraction sizes
  std::vector<double> pods;  // how many of each
};

// The pattern of highest value at prices `pi` (value of size i: milli -
// pi[i]), and that value.
double BestPattern(const Sizes& sizes, const std::vector<double>& pi,
                   std::vector<int>& pattern) {
  constexpr int kCap = kFullGpuMilli;
  std::vector<double> best(kCap + 1, 0.0);
  std::vector<std::vector<int>> take(kCap + 1,
                                     std::vector<int>(sizes.milli.size(), 0));
  for (size_t i = 0; i < sizes.milli.size(); ++i) {
    const int s = sizes.milli[i];
    const double v = s - pi[i];
    if (v <= kEps) continue;
    const int copies = std::min(static_cast<int>(sizes.pods[i]), kCap / s);
    for (int c = 0; c < copies; ++c) {  // 0/1 knapsack per copy
      for (int cap = kCap; cap >= s; --cap) {
        if (best[cap - s] + v > best[cap] + kEps) {
          best[cap] = best[cap - s] + v;
          take[cap] = take[cap - s];
          ++take[cap][i];
        }
      }
    }
  }
  const auto at = std::max_element(best.begin(), best.end()) - best.begin();
  pattern = take[at];
  return best[at];
}

// The bound computed in this process (GpuPackingBoundMilli runs it in a
// child).
double PackingBound(const std::vector<const TracePod*>& pods, int64_t gpus) {
  std::map<int, double> fractions, whole;  // milli -> pods, GPUs -> pods
  for (const TracePod* p : pods) {
    if (!p->wants_gpu()) continue;
    const Resources d = PodDemand(*p);
    if (d.gpus > 0) {
      whole[d.gpus] += 1;
    } else {
      fractions[d.gpu_milli] += 1;
    }
  }
  Sizes sizes;
  for (const auto& [milli, n] : fractions) {
    sizes.milli.push_back(milli);
    sizes.pods.push_back(n);
  }
  const int rows = static_cast<int>(sizes.milli.size());
  const placer::GlpkProblem problem;  // placer/glpk.h: no lock needed
  glp_prob* lp = problem.get();
  glp_set_obj_dir(lp, GLP_MAX);
  glp_add_rows(lp, rows + 1);
  for (int i = 0; i < rows; ++i) {
    glp_set_row_bnds(lp, i + 1, GLP_UP, 0, sizes.pods[i]);
  }
  const int gpu_row = rows + 1;
  glp_set_row_bnds(lp, gpu_row, GLP_UP, 0, static_cast<double>(gpus));
  for (const auto& [k, n] : whole) {
    const int j = glp_add_cols(lp, 1);
    glp_set_col_bnds(lp, j, GLP_DB, 0, n);
    glp_set_obj_coef(lp, j, double(kFullGpuMilli) * k);
    int ind[2] = {0, gpu_row};
    double val[2] = {0, static_cast<double>(k)};
    glp_set_mat_col(lp, j, 1, ind, val);
  }
  auto add_pattern = [&](const std::vector<int>& pattern) {
    const int j = glp_add_cols(lp, 1);
    glp_set_col_bnds(lp, j, GLP_LO, 0, 0);
    std::vector<int> ind = {0};
    std::vector<double> val = {0};
    double value = 0;
    for (int i = 0; i < rows; ++i) {
      if (pattern[i] == 0) continue;
      ind.push_back(i + 1);
      val.push_back(pattern[i]);
      value += pattern[i] * sizes.milli[i];
    }
    ind.push_back(gpu_row);
    val.push_back(1);
    glp_set_obj_coef(lp, j, value);
    glp_set_mat_col(lp, j, static_cast<int>(ind.size()) - 1, ind.data(),
                    val.data());
  };
  for (int i = 0; i < rows; ++i) {
    std::vector<int> single(rows, 0);
    single[i] = 1;
    add_pattern(single);
  }
  glp_smcp parm;
  glp_init_smcp(&parm);
  parm.msg_lev = GLP_MSG_OFF;
  bool converged = rows == 0;
  std::vector<double> pi(rows);
  std::vector<int> pattern;
  for (int added = 0; !converged && added < kMaxPatterns; ++added) {
    if (glp_simplex(lp, &parm) != 0 || glp_get_status(lp) != GLP_OPT) break;
    for (int i = 0; i < rows; ++i) pi[i] = glp_get_row_dual(lp, i + 1);
    const double mu = glp_get_row_dual(lp, gpu_row);
    if (BestPattern(sizes, pi, pattern) - mu <= 1e-6) {
      converged = true;
      break;
    }
    add_pattern(pattern);
  }
  if (rows == 0 && glp_simplex(lp, &parm) != 0) converged = false;
  const double capacity = static_cast<double>(gpus) * kFullGpuMilli;
  const double value = converged ? glp_get_obj_val(lp) : capacity;
  return std::min(value, capacity);
}

}  // namespace

Result<double> GpuPackingBoundMilli(const std::vector<const TracePod*>& pods,
                                    int64_t gpus) {
  // GLPK aborts the process on an internal error: the column generation
  // runs in a child (common/isolated.h); openb's largest snapshot
  // converges in well under a second.
  const IsolationLimits limits{120.0, int64_t{1} << 30};
  Result<std::string> answer = RunIsolated(
      [&] {
        ByteWriter w;
        w.Put(PackingBound(pods, gpus));
        return w.Take();
      },
      limits, "GLPK's packing bound");
  if (!answer) return answer.error();
  double value = 0.0;
  ByteReader r(*answer);
  if (!r.Get(&value) || !r.at_end()) {
    return Internal("GLPK's packing bound: the child's answer is malformed");
  }
  return value;
}

}  // namespace tessera::sim
