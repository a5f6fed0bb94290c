// ImproveMaxLoadLocally (placer/max_load.h): single-unit moves that lower
// (largest load, sum of squared loads) lexicographically. Each candidate
// is evaluated in full (EvaluateMaxLoad); a pass tries every unit on a
// most-loaded device against every other device and takes the best move.
#include <algorithm>
#include <chrono>
#include <vector>

#include "placer/max_load.h"
#include "placer/max_load_units.h"

namespace tessera::placer {
namespace {

using Clock = std::chrono::steady_clock;

struct Score {
  double max = 0, squares = 0;
  bool feasible = false;
  // Better by more than rounding: the max first, then the squares.
  bool Beats(const Score& o) const {
    if (!feasible) return false;
    if (!o.feasible) return true;
    const double eps = 1e-9 * std::max(1.0, o.max);
    if (max < o.max - eps) return true;
    if (max > o.max + eps) return false;
    return squares < o.squares - 1e-9 * std::max(1.0, o.squares);
  }
};

Score ScoreOf(const MaxLoadProblem& p, const MaxLoadPlacement& x) {
  const MaxLoadEvaluation e = EvaluateMaxLoad(p, x);
  Score s;
  s.feasible = e.violation.empty();
  s.max = e.max_load;
  for (const double l : e.loads) s.squares += l * l;
  return s;
}

}  // namespace

MaxLoadLocalResult ImproveMaxLoadLocally(const MaxLoadProblem& p,
                                         const MaxLoadPlacement& start,
                                         double time_limit_s) {
  const auto started = Clock::now();
  const MaxLoadUnits units = BuildMaxLoadUnits(p, /*order=*/false);
  const int m = static_cast<int>(units.members.size());
  const int devices = p.Devices();
  MaxLoadLocalResult out;
  out.placement = start;
  Score current = ScoreOf(p, start);
  const auto elapsed = [&] {
    return std::chrono::duration<double>(Clock::now() - started).count();
  };
  while (current.feasible && elapsed() < time_limit_s) {
    const MaxLoadEvaluation e = EvaluateMaxLoad(p, out.placement);
    // Units on a most-loaded device: moving one of them off is what can
    // lower the largest load (moving others can only raise a load).
    std::vector<char> hot(devices, 0);
    for (int d = 0; d < devices; ++d) {
      hot[d] = e.loads[d] >= e.max_load * (1 - 1e-12);
    }
    Score best = current;
    int best_unit = -1, best_device = -1;
    MaxLoadPlacement trial = out.placement;
    for (int u = 0; u < m && elapsed() < time_limit_s; ++u) {
      const int from = out.placement.device[units.members[u][0]];
      if (!hot[from]) continue;
      for (int d = 0; d < devices; ++d) {
        if (d == from) continue;
        for (const int v : units.members[u]) trial.device[v] = d;
        const Score s = ScoreOf(p, trial);
        if (s.Beats(best)) {
          best = s;
          best_unit = u;
          best_device = d;
        }
      }
      for (const int v : units.members[u]) trial.device[v] = from;
    }
    if (best_unit < 0) break;
    for (const int v : units.members[best_unit]) {
      out.placement.device[v] = best_device;
    }
    current = best;
    ++out.moves;
  }
  out.max_load = EvaluateMaxLoad(p, out.placement).max_load;
  out.seconds = elapsed();
  return out;
}

}  // namespace tessera::placer
