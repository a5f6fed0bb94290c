// ImproveMaxLoadLocally (placer/maxload/max_load.h): single-unit moves that
// lower (largest load, sum of squared loads) lexicographically. Each candidate
// is evaluated in full (EvaluateMaxLoad); a pass tries every unit on a
// most-loaded device against every other device, and every other unit
// against the most-loaded devices, and takes the best move; when none
// helps, the first exchange of two units that does.
#include <algorithm>
#include <chrono>
#include <random>
#include <vector>

#include "placer/maxload/max_load.h"
#include "placer/maxload/max_load_units.h"

namespace tessera::placer {
namespace {

using Clock = std::chrono::steady_clock;
// Random restarts after the descent from the given start.
constexpr int kRestarts = 10;

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

namespace {

// The first exchange of a unit on a hot device with a unit on another
// device that beats `current` (what single moves miss when the units are
// of one size); applied to `x`. False when none does.
bool Swap(const MaxLoadProblem& p, const MaxLoadUnits& units,
          const std::vector<char>& hot, const Score& current,
          MaxLoadPlacement& x, Clock::time_point deadline) {
  const int m = static_cast<int>(units.members.size());
  const auto put = [&](int u, int d) {
    for (const int v : units.members[u]) x.device[v] = d;
  };
  for (int u = 0; u < m && Clock::now() < deadline; ++u) {
    const int from = x.device[units.members[u][0]];
    if (!hot[from]) continue;
    for (int w = 0; w < m; ++w) {
      const int to = x.device[units.members[w][0]];
      if (to == from) continue;
      put(u, to);
      put(w, from);
      if (ScoreOf(p, x).Beats(current)) return true;
      put(u, from);
      put(w, to);
    }
  }
  return false;
}

// Best-improvement descent from `x` until a local optimum or `deadline`:
// single moves, then exchanges when no move helps.
int64_t Descend(const MaxLoadProblem& p, const MaxLoadUnits& units,
                MaxLoadPlacement& x, Clock::time_point deadline) {
  const int m = static_cast<int>(units.members.size());
  const int devices = p.Devices();
  Score current = ScoreOf(p, x);
  int64_t moves = 0;
  while (current.feasible && Clock::now() < deadline) {
    const MaxLoadEvaluation e = EvaluateMaxLoad(p, x);
    // What can lower the largest load: moving a unit off a most-loaded
    // device, or onto one (what it sends there or receives from there is
    // then no longer paid); other moves can only raise a load.
    std::vector<char> hot(devices, 0);
    for (int d = 0; d < devices; ++d) {
      hot[d] = e.loads[d] >= e.max_load * (1 - 1e-12);
    }
    Score best = current;
    int best_unit = -1, best_device = -1;
    MaxLoadPlacement trial = x;
    for (int u = 0; u < m && Clock::now() < deadline; ++u) {
      const int from = x.device[units.members[u][0]];
      for (int d = 0; d < devices; ++d) {
        if (d == from || (!hot[from] && !hot[d])) continue;
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
    if (best_unit < 0) {
      if (!Swap(p, units, hot, current, x, deadline)) break;
      current = ScoreOf(p, x);
      ++moves;
      continue;
    }
    for (const int v : units.members[best_unit]) x.device[v] = best_device;
    current = best;
    ++moves;
  }
  return moves;
}

}  // namespace

MaxLoadLocalResult ImproveMaxLoadLocally(const MaxLoadProblem& p,
                                         const MaxLoadPlacement& start,
                                         double time_limit_s) {
  const auto started = Clock::now();
  const auto deadline =
      started + std::chrono::duration_cast<Clock::duration>(
                    std::chrono::duration<double>(time_limit_s));
  const MaxLoadUnits units = BuildMaxLoadUnits(p, /*order=*/false);
  const int m = static_cast<int>(units.members.size());
  const int devices = p.Devices();
  MaxLoadLocalResult out;
  out.placement = start;
  out.moves = Descend(p, units, out.placement, deadline);
  Score best = ScoreOf(p, out.placement);
  // Restarts from random placements (a fixed seed: the same input gives
  // the same answer), each unit on a random device it can run on.
  std::mt19937_64 rng(20201206);
  for (int restart = 0; restart < kRestarts && Clock::now() < deadline;
       ++restart) {
    MaxLoadPlacement x;
    x.device.assign(p.nodes.size(), 0);
    for (int u = 0; u < m; ++u) {
      std::vector<int> can;
      for (int d = 0; d < devices; ++d) {
        const int k = p.KindOf(d);
        bool runs = true;
        for (const int v : units.members[u])
          runs = runs && p.nodes[v].RunsOn(k);
        if (runs) can.push_back(d);
      }
      if (can.empty()) break;
      const int d =
          can[std::uniform_int_distribution<size_t>(0, can.size() - 1)(rng)];
      for (const int v : units.members[u]) x.device[v] = d;
    }
    if (!ScoreOf(p, x).feasible) continue;  // memory: no random start
    const int64_t moves = Descend(p, units, x, deadline);
    const Score s = ScoreOf(p, x);
    if (s.Beats(best)) {
      best = s;
      out.placement = x;
      out.moves = moves;
      ++out.restarts_won;
    }
  }
  out.max_load = EvaluateMaxLoad(p, out.placement).max_load;
  out.status =
      best.feasible ? SolveStatus::kFeasible : SolveStatus::kNoSolution;
  out.seconds = std::chrono::duration<double>(Clock::now() - started).count();
  return out;
}

}  // namespace tessera::placer
