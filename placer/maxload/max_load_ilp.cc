// SolveMaxLoadIlp: the max-load model over all placements, contiguous or
// not, as a MIP for CBC (placer/maxload/max_load.h; docs/placer_max_load.md,
// "The ILP"). Variables, over units u (placer/maxload/max_load_units.h) and
// devices d:
//   x[u][d] ∈ {0, 1}: u on d (absent where u cannot run on d's kind);
//   s[a][d], r[a][d] ∈ [0, 1] for each node a that may send (out-cost > 0,
//     a successor in another unit) and each charged device d: d sends a,
//     d receives a;
//   T: the largest load (the objective).
// Rows:
//   Σ_d x[u][d] = 1;
//   s[a][d] ≥ x[U(a)][d] − x[W][d] and r[a][d] ≥ x[W][d] − x[U(a)][d] for
//     each unit W ≠ U(a) holding a successor of a;
//   Σ_u time(u, d) x[u][d] + Σ_a cost(a) (s[a][d] + r[a][d]) ≤ T (s[a][d]
//     at no cost where d's kind is not charged for sends);
//   Σ_u size(u) x[u][d] ≤ memory(d);
//   symmetry: devices of one kind are interchangeable, so unit i may use
//     the j-th device of a kind only if j ≤ i (relabel each kind's devices
//     by their first unit);
//   T ≥ the least time of each unit, T ≥ the least total time / devices.
// At an optimum s and r are the indicators the model charges, so T is the
// max load; any feasible point has T at least the max load of its x.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "placer/maxload/max_load.h"
#include "placer/maxload/max_load_units.h"
#include "placer/solver/mip.h"

namespace tessera::placer {
namespace {

using Clock = std::chrono::steady_clock;
constexpr double kInf = std::numeric_limits<double>::infinity();
// Times are scaled so that the least total work is this many units:
// keeps CBC's absolute tolerances meaningful at any time scale.
constexpr double kTimeUnits = 1000.0;

// Relabel each kind's devices in the order of their lowest unit, the form
// the symmetry rows allow.
std::vector<int> Canonical(const MaxLoadProblem& p, const MaxLoadUnits& units,
                           const MaxLoadPlacement& x) {
  const int m = static_cast<int>(units.members.size());
  std::vector<int> device(m);
  for (int u = 0; u < m; ++u) device[u] = x.device[units.members[u][0]];
  std::vector<int> relabel(p.Devices(), -1);
  std::vector<int> next(p.kinds.size(), 0);
  for (int u = 0; u < m; ++u) {
    const int d = device[u];
    if (relabel[d] != -1) continue;
    const int k = p.KindOf(d);
    relabel[d] = p.FirstDevice(k) + next[k]++;
  }
  for (int u = 0; u < m; ++u) device[u] = relabel[device[u]];
  return device;
}

}  // namespace

Result<MaxLoadIlpResult> SolveMaxLoadIlp(const MaxLoadProblem& p,
                                         const MaxLoadIlpOptions& o) {
  const auto started = Clock::now();
  const int devices = p.Devices();
  if (devices <= 0) return BadInput(p.source + ": no device to place on");
  const auto infeasible = [&](std::string why) {
    MaxLoadIlpResult out;
    out.status = SolveStatus::kInfeasible;
    out.why = std::move(why);
    out.seconds = std::chrono::duration<double>(Clock::now() - started).count();
    return out;
  };
  const MaxLoadUnits units = BuildMaxLoadUnits(p, /*order=*/false);
  const int m = static_cast<int>(units.members.size());
  const int n = static_cast<int>(p.nodes.size());
  std::vector<int> kind_of(devices);
  for (int d = 0; d < devices; ++d) kind_of[d] = p.KindOf(d);

  // Per unit: time per kind (kInf where a member cannot run), size.
  const int kinds = static_cast<int>(p.kinds.size());
  std::vector<double> time(static_cast<size_t>(m) * kinds, 0);
  std::vector<int64_t> size(m, 0);
  for (int v = 0; v < n; ++v) {
    const int u = units.unit_of[v];
    size[u] += p.nodes[v].size;
    for (int k = 0; k < kinds; ++k) {
      const double t = p.nodes[v].time[k];
      time[u * kinds + k] = t < 0 ? kInf : time[u * kinds + k] + t;
    }
  }
  double least_total = 0, least_max = 0;
  for (int u = 0; u < m; ++u) {
    double least = kInf;
    for (int k = 0; k < kinds; ++k) {
      if (p.kinds[k].count > 0) least = std::min(least, time[u * kinds + k]);
    }
    if (least == kInf) {
      return infeasible(p.source + ": node " +
                        std::to_string(p.nodes[units.members[u][0]].id) +
                        " (with the nodes it must share a device with) "
                        "runs on no device kind present");
    }
    least_total += least;
    least_max = std::max(least_max, least);
  }
  // Scale: CBC sees time / unit.
  const double unit = least_total > 0 ? least_total / kTimeUnits : 1.0;

  std::lock_guard<std::mutex> lock(CbcMutex());
  Mip mip;
  const int t_col = mip.AddCol(
      std::max(least_max, least_total / devices) / unit, 1e30, 1.0, false);
  std::vector<int> x(static_cast<size_t>(m) * devices, -1);
  for (int u = 0; u < m; ++u) {
    // Symmetry: the j-th device of a kind only for units i >= j.
    for (int d = 0; d < devices; ++d) {
      const int k = kind_of[d];
      if (time[u * kinds + k] == kInf) continue;
      if (d - p.FirstDevice(k) > u) continue;
      x[u * devices + d] = mip.AddCol(0, 1, 0, true);
    }
  }
  int rows = 0;
  for (int u = 0; u < m; ++u) {
    std::vector<int> cols;
    for (int d = 0; d < devices; ++d) {
      if (x[u * devices + d] >= 0) cols.push_back(x[u * devices + d]);
    }
    if (cols.empty()) {
      return infeasible(p.source + ": node " +
                        std::to_string(p.nodes[units.members[u][0]].id) +
                        " has no device it can run on");
    }
    mip.AddRow(cols, std::vector<double>(cols.size(), 1.0), 'E', 1.0);
    ++rows;
  }

  // Communication columns and rows.
  const std::vector<double> out_cost = p.OutCosts();
  std::vector<std::vector<int>> succ_units(n);
  for (const MaxLoadEdge& e : p.edges) {
    if (units.unit_of[e.from] != units.unit_of[e.to]) {
      succ_units[e.from].push_back(units.unit_of[e.to]);
    }
  }
  // load[d]: the load row's columns and coefficients.
  std::vector<std::vector<int>> load_cols(devices);
  std::vector<std::vector<double>> load_coefs(devices);
  for (int u = 0; u < m; ++u) {
    for (int d = 0; d < devices; ++d) {
      const int c = x[u * devices + d];
      if (c < 0) continue;
      load_cols[d].push_back(c);
      load_coefs[d].push_back(time[u * kinds + kind_of[d]] / unit);
    }
  }
  // The communication columns: (node, device, s column, r column).
  struct Comm {
    int node, device, s, r;
  };
  std::vector<Comm> comm;
  // x[u][d], or -1 when u cannot be on d (then it counts as 0).
  const auto x_or_none = [&](int u, int d) { return x[u * devices + d]; };
  for (int a = 0; a < n; ++a) {
    std::vector<int>& to = succ_units[a];
    if (out_cost[a] <= 0 || to.empty()) continue;
    std::sort(to.begin(), to.end());
    to.erase(std::unique(to.begin(), to.end()), to.end());
    const int ua = units.unit_of[a];
    for (int d = 0; d < devices; ++d) {
      if (!p.kinds[kind_of[d]].charges_communication) continue;
      const int xa = x_or_none(ua, d);
      const int s = mip.AddCol(0, 1, 0, false);
      const int r = mip.AddCol(0, 1, 0, false);
      bool used = false;
      for (const int w : to) {
        const int xw = x_or_none(w, d);
        // s ≥ x[a] − x[w]: needed only when a can be on d.
        if (xa >= 0) {
          std::vector<int> cols = {s, xa};
          std::vector<double> coefs = {1.0, -1.0};
          if (xw >= 0) {
            cols.push_back(xw);
            coefs.push_back(1.0);
          }
          mip.AddRow(cols, coefs, 'G', 0.0);
          ++rows;
          used = true;
        }
        // r ≥ x[w] − x[a]: needed only when w can be on d.
        if (xw >= 0) {
          std::vector<int> cols = {r, xw};
          std::vector<double> coefs = {1.0, -1.0};
          if (xa >= 0) {
            cols.push_back(xa);
            coefs.push_back(1.0);
          }
          mip.AddRow(cols, coefs, 'G', 0.0);
          ++rows;
          used = true;
        }
      }
      if (!used) continue;
      comm.push_back({a, d, s, r});
      load_cols[d].push_back(s);
      load_coefs[d].push_back(
          p.kinds[kind_of[d]].charges_sends ? out_cost[a] / unit : 0.0);
      load_cols[d].push_back(r);
      load_coefs[d].push_back(out_cost[a] / unit);
    }
  }
  for (int d = 0; d < devices; ++d) {
    std::vector<int> cols = load_cols[d];
    std::vector<double> coefs = load_coefs[d];
    cols.push_back(t_col);
    coefs.push_back(-1.0);
    mip.AddRow(cols, coefs, 'L', 0.0);
    ++rows;
    const int64_t limit = p.kinds[kind_of[d]].memory;
    if (limit < 0) continue;
    cols.clear();
    coefs.clear();
    for (int u = 0; u < m; ++u) {
      if (x[u * devices + d] < 0 || size[u] == 0) continue;
      cols.push_back(x[u * devices + d]);
      coefs.push_back(static_cast<double>(size[u]));
    }
    if (cols.empty()) continue;
    mip.AddRow(cols, coefs, 'L', static_cast<double>(limit));
    ++rows;
  }

  Cbc_Model* model = mip.get();
  double warm_load = kInf;
  if (o.warm != nullptr) {
    const MaxLoadEvaluation e = EvaluateMaxLoad(p, *o.warm);
    if (e.violation.empty()) {
      warm_load = e.max_load;
      // Every column's value, the continuous ones too: CBC then takes
      // the start as it is instead of searching for a completion.
      const std::vector<int> device = Canonical(p, units, *o.warm);
      std::vector<int> cols = {t_col};
      std::vector<double> values = {warm_load / unit};
      for (int u = 0; u < m; ++u) {
        for (int d = 0; d < devices; ++d) {
          if (x[u * devices + d] < 0) continue;
          cols.push_back(x[u * devices + d]);
          values.push_back(device[u] == d ? 1.0 : 0.0);
        }
      }
      for (const Comm& c : comm) {
        const int home = device[units.unit_of[c.node]];
        bool away = false, here = false;
        for (const int w : succ_units[c.node]) {
          away = away || device[w] != home;
          here = here || (device[w] == c.device && home != c.device);
        }
        cols.push_back(c.s);
        values.push_back(home == c.device && away ? 1.0 : 0.0);
        cols.push_back(c.r);
        values.push_back(here ? 1.0 : 0.0);
      }
      Cbc_setMIPStartI(model, static_cast<int>(cols.size()), cols.data(),
                       values.data());
    }
  }
  const double spent =
      std::chrono::duration<double>(Clock::now() - started).count();
  Result<MipOutcome> solved = mip.Solve(o.time_limit_s - spent);
  MaxLoadIlpResult out;
  out.units = m;
  out.columns = mip.cols();
  out.rows = rows;
  if (!solved) {
    // CBC crashed or was killed: the warm start stands, with no bound.
    if (warm_load == kInf) return solved.error().WithContext(p.source);
    out.placement = *o.warm;
    out.max_load = warm_load;
    out.status = SolveStatus::kFeasible;
    out.solver_failure = solved.error().message;
    out.seconds = std::chrono::duration<double>(Clock::now() - started).count();
    return out;
  }
  const MipOutcome& mo = *solved;
  const std::vector<double>& sol = mo.solution;
  if (mo.status == SolveStatus::kInfeasible) {
    out.status = SolveStatus::kInfeasible;
    out.why = p.source +
              ": no placement fits (memory, color classes, or where nodes "
              "can run)";
    out.seconds = std::chrono::duration<double>(Clock::now() - started).count();
    return out;
  }
  if (mo.status == SolveStatus::kNoSolution && warm_load == kInf) {
    out.status = SolveStatus::kNoSolution;
    out.why = p.source + ": CBC found no placement within " +
              std::to_string(o.time_limit_s) + " s";
    out.seconds = std::chrono::duration<double>(Clock::now() - started).count();
    return out;
  }
  MaxLoadPlacement found;
  if (!sol.empty()) {
    found.device.assign(n, 0);
    for (int u = 0; u < m; ++u) {
      double best = -1;
      int at = 0;
      for (int d = 0; d < devices; ++d) {
        const int c = x[u * devices + d];
        if (c >= 0 && sol[c] > best) {
          best = sol[c];
          at = d;
        }
      }
      for (const int v : units.members[u]) found.device[v] = at;
    }
  }
  const MaxLoadEvaluation e =
      !sol.empty() ? EvaluateMaxLoad(p, found) : MaxLoadEvaluation{};
  if (!sol.empty() && e.violation.empty() && e.max_load < warm_load) {
    out.placement = found;
    out.max_load = e.max_load;
    out.improved_warm = o.warm != nullptr;
  } else {
    out.placement = *o.warm;
    out.max_load = warm_load;
  }
  const bool proven = mo.status == SolveStatus::kOptimal;
  const double bound = mo.best_possible * unit;
  out.lower_bound = proven ? out.max_load : std::min(out.max_load, bound);
  // CBC's tolerances: a bound within 1e-6 relative counts as met.
  const bool met = proven || out.max_load - out.lower_bound <=
                                 1e-6 * std::max(1.0, out.max_load);
  out.status = met ? SolveStatus::kOptimal : SolveStatus::kFeasible;
  if (proven) out.lower_bound = out.max_load;
  out.seconds = std::chrono::duration<double>(Clock::now() - started).count();
  return out;
}

}  // namespace tessera::placer
