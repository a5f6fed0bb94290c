// PlaceIlp: an exact MIP over a coarsened graph, solved with CBC through
// its C interface (formulation in docs/placer_pipeline_ilp.md "ilp").
//
// Time model: RelaxedStepTime (simulator.h). At the optimum the MIP's
// objective equals RelaxedStepTime of the problem it places (the original
// or its contraction) under the group placement, which is never more than
// that problem's simulated step for the same placement.
//
// Memory: MemoryLedger's count for the placed problem, exactly in
// inference; in training the "twice the largest tensor" term uses every
// activation a group produces or reads, internal ones included.

#include <coin/Cbc_C_Interface.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <mutex>
#include <numeric>
#include <string>
#include <vector>

#include "placer/baechi/reductions_internal.h"
#include "placer/core/algorithms_internal.h"
#include "placer/ilp/ilp_internal.h"
#include "placer/solver/mip.h"
#include "placer/solver/solve_status.h"

namespace tessera::placer {
namespace {

// Times are scaled so that the sum over groups of their fastest time is
// this many units: keeps CBC's absolute tolerances meaningful for
// microsecond-scale graphs.
constexpr double kTimeUnits = 1000.0;
// An unbounded column (CBC treats values >= 1e30 as infinite).
constexpr double kColMax = 1e30;

using Clock = std::chrono::steady_clock;

// The formulation's columns and scales.
struct Columns {
  int makespan = 0;
  std::vector<int> x;      // [g * devices + d], binary
  std::vector<int> start;  // per group
  double time_unit = 1.0;  // seconds per objective unit
  double mem_unit = 1.0;   // bytes per memory-row unit
};

// Assignment (x, one device per group; a device that cannot hold a group
// by itself is fixed to 0), makespan >= device loads, and the relaxed
// paths: s[h] >= s[g] + P[g] + cost * sum_d u[gh][d] with u[gh][d] >=
// x[g][d] - x[h][d] in [0, 1] (the rows' total variation distance: 1 when
// g and h are on different devices, 0 on the same; tighter in the LP than
// one y >= cost (x[g][d] - x[h][d]) per d), makespan >= s[g] + P[g] at
// sinks. kInfeasible when a group fits nowhere.
Result<Columns> AddTimeModel(Mip& mip, const IlpData& data, const Problem& q,
                             const Budget& budget) {
  const size_t ng = data.groups;
  const size_t nd = data.devices;
  Columns cols;
  double fastest_total = 0.0;
  for (size_t g = 0; g < ng; ++g) {
    double best = std::numeric_limits<double>::infinity();
    for (size_t d = 0; d < nd; ++d) {
      best = std::min(best, data.time[g * nd + d]);
    }
    fastest_total += best;
  }
  cols.time_unit = fastest_total > 0 ? fastest_total / kTimeUnits : 1.0;
  const double unit = cols.time_unit;
  cols.makespan = mip.AddCol(0.0, kColMax, 1.0, false);
  cols.x.resize(ng * nd);
  for (size_t g = 0; g < ng; ++g) {
    bool any = false;
    std::vector<int> alone(ng, -1);
    for (size_t d = 0; d < nd; ++d) {
      alone[g] = static_cast<int>(d);
      const bool fits = IlpBytes(data, alone, static_cast<int>(d)) <= budget[d];
      any = any || fits;
      cols.x[g * nd + d] = mip.AddCol(0.0, fits ? 1.0 : 0.0, 0.0, true);
    }
    if (!any) {
      return Infeasible("ilp: group '" + q.names[g] +
                        "' does not fit any device's memory by itself");
    }
    const std::vector<int> row(cols.x.data() + g * nd,
                               cols.x.data() + (g + 1) * nd);
    mip.AddRow(row, std::vector<double>(nd, 1.0), 'E', 1.0);
  }
  for (size_t d = 0; d < nd; ++d) {
    std::vector<int> c = {cols.makespan};
    std::vector<double> a = {-1.0};
    for (size_t g = 0; g < ng; ++g) {
      c.push_back(cols.x[g * nd + d]);
      a.push_back(data.time[g * nd + d] / unit);
    }
    mip.AddRow(c, a, 'L', 0.0);
  }
  cols.start.resize(ng);
  for (size_t g = 0; g < ng; ++g) {
    cols.start[g] = mip.AddCol(0.0, kColMax, 0.0, false);
  }
  // to - s[from] - P[from] - cost * sum(moved) >= 0.
  auto add_path = [&](int to, size_t from, const std::vector<int>& moved,
                      double cost) {
    std::vector<int> c = {to, cols.start[from]};
    std::vector<double> a = {1.0, -1.0};
    for (size_t d = 0; d < nd; ++d) {
      c.push_back(cols.x[from * nd + d]);
      a.push_back(-data.time[from * nd + d] / unit);
    }
    for (int u : moved) {
      c.push_back(u);
      a.push_back(-cost);
    }
    mip.AddRow(c, a, 'G', 0.0);
  };
  for (const IlpEdge& e : data.edges) {
    std::vector<int> moved;
    if (e.cost_s > 0 && nd > 1) {
      for (size_t d = 0; d < nd; ++d) {
        const int u = mip.AddCol(0.0, 1.0, 0.0, false);
        mip.AddRow({u, cols.x[e.from * nd + d], cols.x[e.to * nd + d]},
                   {1.0, -1.0, 1.0}, 'G', 0.0);
        moved.push_back(u);
      }
    }
    add_path(cols.start[e.to], e.from, moved, e.cost_s / unit);
  }
  for (size_t g = 0; g < ng; ++g) {
    if (data.sink[g]) add_path(cols.makespan, g, {}, 0.0);
  }
  return cols;
}

// Per device: sum of the groups' own bytes + shared and received tensors
// (held[t][d] >= x[h][d] (- x[producer][d])) + the largest workspace (+
// twice the largest tensor in training) as max variables <= budget.
void AddMemory(Mip& mip, const IlpData& data, const Budget& budget,
               Columns& cols) {
  const size_t ng = data.groups;
  const size_t nd = data.devices;
  int64_t max_budget = 1;
  for (int64_t b : budget) max_budget = std::max(max_budget, b);
  cols.mem_unit = static_cast<double>(max_budget);
  const double unit = cols.mem_unit;
  bool any_workspace = false;
  bool any_largest = false;
  for (size_t g = 0; g < ng; ++g) {
    any_workspace = any_workspace || data.workspace[g] > 0;
    any_largest = any_largest || (data.training && data.largest[g] > 0);
  }
  std::vector<std::vector<int>> row_cols(nd);
  std::vector<std::vector<double>> row_coefs(nd);
  for (size_t d = 0; d < nd; ++d) {
    for (size_t g = 0; g < ng; ++g) {
      if (data.base[g] == 0) continue;
      row_cols[d].push_back(cols.x[g * nd + d]);
      row_coefs[d].push_back(static_cast<double>(data.base[g]) / unit);
    }
    auto add_max = [&](const std::vector<int64_t>& size, double factor) {
      const int v = mip.AddCol(0.0, kColMax, 0.0, false);
      for (size_t g = 0; g < ng; ++g) {
        if (size[g] <= 0) continue;
        mip.AddRow({v, cols.x[g * nd + d]},
                   {1.0, -static_cast<double>(size[g]) / unit}, 'G', 0.0);
      }
      row_cols[d].push_back(v);
      row_coefs[d].push_back(factor);
    };
    if (any_workspace) add_max(data.workspace, 1.0);
    if (any_largest) add_max(data.largest, 2.0);
  }
  for (const IlpData::Shared& s : data.shared) {
    if (s.bytes <= 0) continue;
    for (size_t d = 0; d < nd; ++d) {
      const int held = mip.AddCol(0.0, 1.0, 0.0, false);
      for (uint32_t h : s.consumers) {
        std::vector<int> c = {held, cols.x[h * nd + d]};
        std::vector<double> a = {1.0, -1.0};
        if (s.producer >= 0) {
          c.push_back(cols.x[static_cast<size_t>(s.producer) * nd + d]);
          a.push_back(1.0);
        }
        mip.AddRow(c, a, 'G', 0.0);
      }
      row_cols[d].push_back(held);
      row_coefs[d].push_back(static_cast<double>(s.bytes) / unit);
    }
  }
  for (size_t d = 0; d < nd; ++d) {
    if (row_cols[d].empty()) continue;
    mip.AddRow(row_cols[d], row_coefs[d], 'L',
               static_cast<double>(budget[d]) * (1.0 - kIlpMemorySlack) / unit);
  }
}

// Devices the formulation cannot tell apart: same profile, share and
// budget (links never enter it: crossings cost the cheapest link).
bool Identical(const Problem& q, const Cluster& c, const Budget& budget,
               size_t a, size_t b) {
  return q.device_profile[a] == q.device_profile[b] &&
         c.devices[a].compute_share == c.devices[b].compute_share &&
         budget[a] == budget[b];
}

// For each device b, the nearest identical device a < b (or -1).
std::vector<int> IdenticalPredecessor(const Problem& q, const Cluster& c,
                                      const Budget& budget) {
  std::vector<int> pred(c.size(), -1);
  for (size_t b = 1; b < c.size(); ++b) {
    for (size_t a = b; a-- > 0;) {
      if (Identical(q, c, budget, a, b)) {
        pred[b] = static_cast<int>(a);
        break;
      }
    }
  }
  return pred;
}

// Symmetry: of identical devices a < b, b's first group comes after a's:
// x[g][b] <= sum_{g' < g} x[g'][a] (any solution can be relabelled so).
void AddSymmetry(Mip& mip, const IlpData& data, const std::vector<int>& pred,
                 const Columns& cols) {
  const size_t ng = data.groups;
  const size_t nd = data.devices;
  for (size_t b = 0; b < nd; ++b) {
    if (pred[b] < 0) continue;
    const auto a = static_cast<size_t>(pred[b]);
    for (size_t g = 0; g < ng; ++g) {
      std::vector<int> c = {cols.x[g * nd + b]};
      std::vector<double> coefs = {1.0};
      for (size_t h = 0; h < g; ++h) {
        c.push_back(cols.x[h * nd + a]);
        coefs.push_back(-1.0);
      }
      mip.AddRow(c, coefs, 'L', 0.0);
    }
  }
}

// Relabels identical devices in `assign` so that it obeys the symmetry
// rows: within each chain of identical devices, first groups increase.
void CanonicalLabels(const std::vector<int>& pred, std::vector<int>& assign) {
  const size_t nd = pred.size();
  std::vector<size_t> first(nd, assign.size());
  for (size_t g = assign.size(); g-- > 0;) first[assign[g]] = g;
  std::vector<int> relabel(nd);
  std::iota(relabel.begin(), relabel.end(), 0);
  std::vector<bool> done(nd, false);
  for (size_t top = nd; top-- > 0;) {
    if (done[top]) continue;
    std::vector<int> chain;  // ascending device indices
    for (int d = static_cast<int>(top); d >= 0; d = pred[d]) {
      chain.insert(chain.begin(), d);
      done[d] = true;
    }
    std::vector<int> by_first = chain;
    std::stable_sort(by_first.begin(), by_first.end(),
                     [&](int u, int v) { return first[u] < first[v]; });
    for (size_t i = 0; i < chain.size(); ++i) relabel[by_first[i]] = chain[i];
  }
  for (int& d : assign) d = relabel[d];
}

struct Solution {
  std::vector<int> assign;
  double objective_s = 0.0, bound_s = 0.0;
  SolveStatus status = SolveStatus::kFeasible;  // kOptimal or kFeasible
};

std::string Format(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

Result<Solution> SolveMip(const IlpData& data, const Problem& q,
                          const Cluster& c, const Budget& budget,
                          double time_limit_s, Clock::time_point started) {
  const size_t ng = data.groups;
  const size_t nd = data.devices;
  std::vector<int> warm = IlpWarmStart(data, q, c, budget);
  const std::vector<int> pred = IdenticalPredecessor(q, c, budget);

  std::lock_guard<std::mutex> lock(CbcMutex());
  Mip mip;
  Result<Columns> built = AddTimeModel(mip, data, q, budget);
  if (!built) return built.error();
  Columns& cols = built.value();
  AddMemory(mip, data, budget, cols);
  AddSymmetry(mip, data, pred, cols);

  Cbc_Model* m = mip.get();
  if (!warm.empty()) {
    CanonicalLabels(pred, warm);
    std::vector<int> x;
    for (size_t g = 0; g < ng; ++g) x.push_back(cols.x[g * nd + warm[g]]);
    const std::vector<double> ones(ng, 1.0);
    Cbc_setMIPStartI(m, static_cast<int>(ng), x.data(), ones.data());
  }
  const double spent =
      std::chrono::duration<double>(Clock::now() - started).count();
  Result<MipOutcome> solved = mip.Solve(time_limit_s - spent);
  if (!solved) return solved.error().WithContext("ilp");
  const MipOutcome& mo = *solved;
  const std::vector<double>& sol = mo.solution;
  if (!HasSolution(mo.status)) {
    if (mo.status == SolveStatus::kInfeasible) {
      return Infeasible("ilp: no placement of the " + std::to_string(ng) +
                        " groups fits the devices' memory");
    }
    return Internal("ilp: CBC found no placement within the time limit (" +
                    Format("%g", time_limit_s) +
                    " s); raise the limit or use another algorithm");
  }
  Solution out;
  out.assign.assign(ng, 0);
  for (size_t g = 0; g < ng; ++g) {
    double best = -1.0;
    for (size_t d = 0; d < nd; ++d) {
      if (sol[cols.x[g * nd + d]] > best) {
        best = sol[cols.x[g * nd + d]];
        out.assign[g] = static_cast<int>(d);
      }
    }
  }
  out.objective_s = mo.objective * cols.time_unit;
  out.status = mo.status;
  out.bound_s =
      out.status == SolveStatus::kOptimal
          ? out.objective_s
          : std::min(out.objective_s, mo.best_possible * cols.time_unit);
  return out;
}

// The group placement of `assign`: priority by relaxed start time, then
// topological position.
Placement GroupPlacement(const IlpData& data, const Problem& q,
                         const std::vector<int>& assign) {
  std::vector<double> start;
  IlpRelaxedTimes(data, q, assign, &start);
  std::vector<uint32_t> topo_pos(q.num_ops());
  for (size_t i = 0; i < q.topo.size(); ++i) {
    topo_pos[q.topo[i]] = static_cast<uint32_t>(i);
  }
  std::vector<uint32_t> order(q.num_ops());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return start[a] != start[b] ? start[a] < start[b]
                                : topo_pos[a] < topo_pos[b];
  });
  Placement pl;
  pl.device.resize(q.num_ops());
  pl.priority.resize(q.num_ops());
  for (size_t i = 0; i < order.size(); ++i) {
    pl.priority[order[i]] = static_cast<uint32_t>(i);
  }
  for (size_t h = 0; h < q.num_ops(); ++h) {
    pl.device[h] = static_cast<uint16_t>(assign[h]);
  }
  return pl;
}

}  // namespace

Result<AlgoOutput> PlaceIlp(const Problem& p, const Cluster& c,
                            const Budget& budget, const PlaceOptions& o) {
  AlgoOutput out;
  const size_t n = p.num_ops();
  if (n == 0) {
    out.ilp_objective_s = 0.0;
    out.ilp_gap = 0.0;
    out.ilp_status = SolveStatus::kOptimal;
    return out;
  }
  if (c.size() == 0) return Infeasible("ilp: the cluster has no devices");
  const Clock::time_point t0 = Clock::now();

  // Reduce, only when the graph has more ops than ilp_max_groups:
  // co-placement, then coarsening to at most ilp_max_groups.
  const uint32_t max_groups =
      static_cast<uint32_t>(std::max(1, o.ilp_max_groups));
  Grouping g = IdentityGrouping(p);
  if (g.num_groups > max_groups) g = CoPlace(p, g);
  if (g.num_groups > max_groups) g = Coarsen(p, g, max_groups);
  bool identity = g.num_groups == n;
  for (size_t op = 0; identity && op < n; ++op) {
    identity = g.group_of[op] == op;
  }
  Problem contracted;
  if (!identity) {
    Result<Problem> r = Contract(p, g);
    if (!r) return r.error().WithContext("ilp");
    contracted = std::move(r).value();
    out.notes.push_back("ilp: reduced " + std::to_string(n) + " ops to " +
                        std::to_string(g.num_groups) + " groups");
  }
  const Problem& q = identity ? p : contracted;

  const IlpData data = MakeIlpData(q, c, p, identity ? nullptr : &g);
  Result<Solution> solved =
      SolveMip(data, q, c, budget, o.ilp_time_limit_s, t0);
  if (!solved) return solved.error();
  const Solution& s = solved.value();
  Placement groups = GroupPlacement(data, q, s.assign);
  out.placement = identity ? std::move(groups) : Expand(p, g, groups);

  const double elapsed =
      std::chrono::duration<double>(Clock::now() - t0).count();
  out.ilp_objective_s = s.objective_s;
  out.ilp_gap = s.objective_s > 0
                    ? std::max(0.0, (s.objective_s - s.bound_s) / s.objective_s)
                    : 0.0;
  out.ilp_status = s.status;
  out.notes.push_back(s.status == SolveStatus::kOptimal
                          ? "ilp: optimal in " + Format("%.3g", elapsed) + " s"
                          : "ilp: gap " + Format("%.1f", *out.ilp_gap * 100) +
                                "% after " + Format("%.3g", elapsed) + " s");
  return out;
}

std::mutex& CbcMutex() {
  static std::mutex mu;
  return mu;
}

}  // namespace tessera::placer
