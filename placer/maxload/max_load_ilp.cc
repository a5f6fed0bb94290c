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
// Before CBC, the branch and bound (max_load_bnb.cc) runs for a share of
// the limit: its proof ends the solve, else CBC starts from its split and
// the bound is the higher of the two.
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

double SecondsSince(Clock::time_point started) {
  return std::chrono::duration<double>(Clock::now() - started).count();
}

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

// What every step of the model reads: the problem, its units, and each
// unit's time per kind (kInf where a member cannot run) and size.
struct IlpInputs {
  const MaxLoadProblem& p;
  const MaxLoadUnits& units;
  int devices = 0, m = 0, n = 0, kinds = 0;
  std::vector<int> kind_of;  // per device
  std::vector<double> time;  // per unit and kind: [u * kinds + k]
  std::vector<int64_t> size;
  double unit = 1.0;  // CBC sees time / unit

  IlpInputs(const MaxLoadProblem& problem, const MaxLoadUnits& u)
      : p(problem),
        units(u),
        devices(problem.Devices()),
        m(static_cast<int>(u.members.size())),
        n(static_cast<int>(problem.nodes.size())),
        kinds(static_cast<int>(problem.kinds.size())) {
    kind_of.resize(devices);
    for (int d = 0; d < devices; ++d) kind_of[d] = p.KindOf(d);
    time = UnitTimes(p, units);
    size.assign(m, 0);
    for (int v = 0; v < n; ++v) size[units.unit_of[v]] += p.nodes[v].size;
  }
  double Time(int u, int d) const { return time[u * kinds + kind_of[d]]; }
  // The id of unit u's first node, for messages.
  std::string FirstId(int u) const {
    return std::to_string(p.nodes[units.members[u][0]].id);
  }
};

// The least time of each unit over the kinds present: their sum and their
// largest. T is at least the largest and the sum / devices; the sum sets
// the time scale. `nowhere` is a unit that runs on no kind present (the
// sums then stop there).
struct LeastTimes {
  double total = 0, max = 0;
  int nowhere = -1;
};

LeastTimes ComputeLeastTimes(const IlpInputs& in) {
  LeastTimes out;
  for (int u = 0; u < in.m; ++u) {
    double least = kInf;
    for (int k = 0; k < in.kinds; ++k) {
      if (in.p.kinds[k].count > 0) {
        least = std::min(least, in.time[u * in.kinds + k]);
      }
    }
    if (least == kInf) {
      out.nowhere = u;
      return out;
    }
    out.total += least;
    out.max = std::max(out.max, least);
  }
  return out;
}

// The communication columns: (node, device, s column, r column).
struct Comm {
  int node, device, s, r;
};

// The columns of the model as built, which the warm start and the answer
// are read through, and the load rows' terms until they are added.
struct IlpModel {
  int t_col = -1;
  std::vector<int> x;  // [u * devices + d]: x[u][d], or -1 when u cannot be
                       // on d (then it counts as 0)
  std::vector<Comm> comm;
  // Per node, the other units holding its successors (sorted and
  // deduplicated for the nodes that may send).
  std::vector<std::vector<int>> succ_units;
  // load[d]: the load row's columns and coefficients.
  std::vector<std::vector<int>> load_cols;
  std::vector<std::vector<double>> load_coefs;
  int rows = 0;
};

// The x columns and the rows that put each unit on one device. Symmetry:
// the j-th device of a kind only for units i >= j. Returns a unit with no
// device it can run on, or -1.
int AddPlacementColumns(const IlpInputs& in, Mip& mip, IlpModel& model) {
  model.x.assign(static_cast<size_t>(in.m) * in.devices, -1);
  for (int u = 0; u < in.m; ++u) {
    for (int d = 0; d < in.devices; ++d) {
      const int k = in.kind_of[d];
      if (in.time[u * in.kinds + k] == kInf) continue;
      if (d - in.p.FirstDevice(k) > u) continue;
      model.x[u * in.devices + d] = mip.AddCol(0, 1, 0, true);
    }
  }
  for (int u = 0; u < in.m; ++u) {
    std::vector<int> cols;
    for (int d = 0; d < in.devices; ++d) {
      if (model.x[u * in.devices + d] >= 0) {
        cols.push_back(model.x[u * in.devices + d]);
      }
    }
    if (cols.empty()) return u;
    mip.AddRow(cols, std::vector<double>(cols.size(), 1.0), 'E', 1.0);
    ++model.rows;
  }
  return -1;
}

// v ≥ x_plus − x_minus (a placement column that does not exist is 0): a
// row only when x_plus exists, since v ≥ 0 − x_minus always holds. True if
// it added one.
bool AddAtLeastDifference(int v, int x_plus, int x_minus, Mip& mip,
                          IlpModel& model) {
  if (x_plus < 0) return false;
  std::vector<int> cols = {v, x_plus};
  std::vector<double> coefs = {1.0, -1.0};
  if (x_minus >= 0) {
    cols.push_back(x_minus);
    coefs.push_back(1.0);
  }
  mip.AddRow(cols, coefs, 'G', 0.0);
  ++model.rows;
  return true;
}

// The s and r columns of node a on device d, with the rows that bound them
// from below by each successor unit's placement; false when no row was
// needed (neither a nor any successor can be on d).
bool AddCommRows(const IlpInputs& in, int a, int d, int s, int r, Mip& mip,
                 IlpModel& model) {
  const int xa = model.x[in.units.unit_of[a] * in.devices + d];
  bool used = false;
  for (const int w : model.succ_units[a]) {
    const int xw = model.x[w * in.devices + d];
    used |= AddAtLeastDifference(s, xa, xw, mip, model);  // s ≥ x[a] − x[w]
    used |= AddAtLeastDifference(r, xw, xa, mip, model);  // r ≥ x[w] − x[a]
  }
  return used;
}

// The load rows' terms: each unit's time where it runs, then the sends and
// receives of every node that may send, on each charged device.
void AddCommunication(const IlpInputs& in, Mip& mip, IlpModel& model) {
  const MaxLoadProblem& p = in.p;
  const std::vector<double> out_cost = p.OutCosts();
  model.succ_units.assign(in.n, {});
  for (const MaxLoadEdge& e : p.edges) {
    if (in.units.unit_of[e.from] != in.units.unit_of[e.to]) {
      model.succ_units[e.from].push_back(in.units.unit_of[e.to]);
    }
  }
  model.load_cols.assign(in.devices, {});
  model.load_coefs.assign(in.devices, {});
  for (int u = 0; u < in.m; ++u) {
    for (int d = 0; d < in.devices; ++d) {
      const int c = model.x[u * in.devices + d];
      if (c < 0) continue;
      model.load_cols[d].push_back(c);
      model.load_coefs[d].push_back(in.Time(u, d) / in.unit);
    }
  }
  for (int a = 0; a < in.n; ++a) {
    std::vector<int>& to = model.succ_units[a];
    if (out_cost[a] <= 0 || to.empty()) continue;
    std::sort(to.begin(), to.end());
    to.erase(std::unique(to.begin(), to.end()), to.end());
    for (int d = 0; d < in.devices; ++d) {
      const MaxLoadKind& kind = p.kinds[in.kind_of[d]];
      if (!kind.charges_communication) continue;
      const int s = mip.AddCol(0, 1, 0, false);
      const int r = mip.AddCol(0, 1, 0, false);
      if (!AddCommRows(in, a, d, s, r, mip, model)) continue;
      model.comm.push_back({a, d, s, r});
      model.load_cols[d].push_back(s);
      model.load_coefs[d].push_back(kind.charges_sends ? out_cost[a] / in.unit
                                                       : 0.0);
      model.load_cols[d].push_back(r);
      model.load_coefs[d].push_back(out_cost[a] / in.unit);
    }
  }
}

// Per device: its load at most T, and its units' sizes within its memory.
void AddLoadAndMemoryRows(const IlpInputs& in, Mip& mip, IlpModel& model) {
  for (int d = 0; d < in.devices; ++d) {
    std::vector<int> cols = model.load_cols[d];
    std::vector<double> coefs = model.load_coefs[d];
    cols.push_back(model.t_col);
    coefs.push_back(-1.0);
    mip.AddRow(cols, coefs, 'L', 0.0);
    ++model.rows;
    const int64_t limit = in.p.kinds[in.kind_of[d]].memory;
    if (limit < 0) continue;
    cols.clear();
    coefs.clear();
    for (int u = 0; u < in.m; ++u) {
      if (model.x[u * in.devices + d] < 0 || in.size[u] == 0) continue;
      cols.push_back(model.x[u * in.devices + d]);
      coefs.push_back(static_cast<double>(in.size[u]));
    }
    if (cols.empty()) continue;
    mip.AddRow(cols, coefs, 'L', static_cast<double>(limit));
    ++model.rows;
  }
}

// Gives CBC the warm placement (max load `warm_load`) as its start: every
// column's value, the continuous ones too, so that CBC takes the start as
// it is instead of searching for a completion.
void SetWarmStart(const IlpInputs& in, const IlpModel& model,
                  const MaxLoadPlacement& warm, double warm_load, Mip& mip) {
  const std::vector<int> device = Canonical(in.p, in.units, warm);
  std::vector<int> cols = {model.t_col};
  std::vector<double> values = {warm_load / in.unit};
  for (int u = 0; u < in.m; ++u) {
    for (int d = 0; d < in.devices; ++d) {
      if (model.x[u * in.devices + d] < 0) continue;
      cols.push_back(model.x[u * in.devices + d]);
      values.push_back(device[u] == d ? 1.0 : 0.0);
    }
  }
  for (const Comm& c : model.comm) {
    const int home = device[in.units.unit_of[c.node]];
    bool away = false, here = false;
    for (const int w : model.succ_units[c.node]) {
      away = away || device[w] != home;
      here = here || (device[w] == c.device && home != c.device);
    }
    cols.push_back(c.s);
    values.push_back(home == c.device && away ? 1.0 : 0.0);
    cols.push_back(c.r);
    values.push_back(here ? 1.0 : 0.0);
  }
  Cbc_setMIPStartI(mip.get(), static_cast<int>(cols.size()), cols.data(),
                   values.data());
}

// The placement CBC's solution `sol` gives: each unit on the device of its
// largest x.
MaxLoadPlacement ReadPlacement(const IlpInputs& in, const IlpModel& model,
                               const std::vector<double>& sol) {
  MaxLoadPlacement found;
  found.device.assign(in.n, 0);
  for (int u = 0; u < in.m; ++u) {
    double best = -1;
    int at = 0;
    for (int d = 0; d < in.devices; ++d) {
      const int c = model.x[u * in.devices + d];
      if (c >= 0 && sol[c] > best) {
        best = sol[c];
        at = d;
      }
    }
    for (const int v : in.units.members[u]) found.device[v] = at;
  }
  return found;
}

// Keeps the better of CBC's solution and the warm start (max load
// `warm_load`), with CBC's bound on it; kOptimal when CBC proved it or the
// bound meets it.
void KeepBest(const IlpInputs& in, const IlpModel& model,
              const MaxLoadPlacement* warm, double warm_load,
              const MipOutcome& mo, MaxLoadIlpResult& out) {
  const std::vector<double>& sol = mo.solution;
  const MaxLoadPlacement found =
      !sol.empty() ? ReadPlacement(in, model, sol) : MaxLoadPlacement{};
  const MaxLoadEvaluation e =
      !sol.empty() ? EvaluateMaxLoad(in.p, found) : MaxLoadEvaluation{};
  if (!sol.empty() && e.violation.empty() && e.max_load < warm_load) {
    out.placement = found;
    out.max_load = e.max_load;
  } else {
    out.placement = *warm;
    out.max_load = warm_load;
  }
  const bool proven = mo.status == SolveStatus::kOptimal;
  // CBC's bound or the branch and bound's, whichever is higher.
  const double bound =
      std::max(mo.best_possible * in.unit, out.bnb_lower_bound);
  out.lower_bound = proven ? out.max_load : std::min(out.max_load, bound);
  // CBC's tolerances: a bound within 1e-6 relative counts as met.
  const bool met = proven || out.max_load - out.lower_bound <=
                                 1e-6 * std::max(1.0, out.max_load);
  out.status = met ? SolveStatus::kOptimal : SolveStatus::kFeasible;
  if (proven) out.lower_bound = out.max_load;
}

// Runs the branch and bound for `o.bnb_share` of the limit from `o.warm`
// into `bnb` (its bound and time into `out`); returns the placement CBC
// starts from: the branch and bound's when it has one, else `o.warm`.
Result<const MaxLoadPlacement*> BnbFirst(const MaxLoadProblem& p,
                                         const MaxLoadIlpOptions& o,
                                         MaxLoadBnbResult& bnb,
                                         MaxLoadIlpResult& out) {
  if (o.bnb_share <= 0) return o.warm;
  MaxLoadBnbOptions bo;
  bo.time_limit_s = o.bnb_share * o.time_limit_s;
  bo.start = o.warm;
  Result<MaxLoadBnbResult> solved = SolveMaxLoadBnb(p, bo);
  if (!solved) return solved.error();
  bnb = std::move(*solved);
  out.bnb_lower_bound = bnb.lower_bound;
  out.bnb_seconds = bnb.seconds;
  return HasSolution(bnb.status) ? &bnb.placement : o.warm;
}

// Whether a split of max load `load` beats the caller's warm start.
bool ImprovesWarm(const MaxLoadProblem& p, const MaxLoadIlpOptions& o,
                  double load) {
  return o.warm != nullptr && load < EvaluateMaxLoad(p, *o.warm).max_load;
}

// The answer when the branch and bound proved its placement optimal.
MaxLoadIlpResult FromBnb(const MaxLoadProblem& p, const MaxLoadIlpOptions& o,
                         const MaxLoadBnbResult& bnb, MaxLoadIlpResult out,
                         double seconds) {
  out.placement = bnb.placement;
  out.max_load = bnb.max_load;
  out.lower_bound = bnb.lower_bound;
  out.status = SolveStatus::kOptimal;
  out.improved_warm = ImprovesWarm(p, o, bnb.max_load);
  out.seconds = seconds;
  return out;
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
    out.seconds = SecondsSince(started);
    return out;
  };
  const MaxLoadUnits units = BuildMaxLoadUnits(p, /*order=*/false);
  IlpInputs in(p, units);
  const LeastTimes least = ComputeLeastTimes(in);
  if (least.nowhere >= 0) {
    return infeasible(p.source + ": node " + in.FirstId(least.nowhere) +
                      " (with the nodes it must share a device with) "
                      "runs on no device kind present");
  }
  in.unit = least.total > 0 ? least.total / kTimeUnits : 1.0;
  const double unit = in.unit;

  MaxLoadIlpResult out;
  out.units = in.m;
  // The branch and bound first: it proves the inputs that packing decides
  // and gives CBC a better start on the others.
  MaxLoadBnbResult bnb;
  Result<const MaxLoadPlacement*> warm = BnbFirst(p, o, bnb, out);
  if (!warm) return warm.error();
  if (bnb.status == SolveStatus::kOptimal) {
    return FromBnb(p, o, bnb, out, SecondsSince(started));
  }

  std::lock_guard<std::mutex> lock(CbcMutex());
  Mip mip;
  IlpModel model;
  model.t_col = mip.AddCol(std::max(least.max, least.total / devices) / unit,
                           1e30, 1.0, false);
  const int no_device = AddPlacementColumns(in, mip, model);
  if (no_device >= 0) {
    return infeasible(p.source + ": node " + in.FirstId(no_device) +
                      " has no device it can run on");
  }
  AddCommunication(in, mip, model);
  AddLoadAndMemoryRows(in, mip, model);

  double warm_load = kInf;
  if (*warm != nullptr) {
    const MaxLoadEvaluation e = EvaluateMaxLoad(p, **warm);
    if (e.violation.empty()) {
      warm_load = e.max_load;
      SetWarmStart(in, model, **warm, warm_load, mip);
    }
  }
  Result<MipOutcome> solved = mip.Solve(o.time_limit_s - SecondsSince(started));
  out.columns = mip.cols();
  out.rows = model.rows;
  if (!solved) {
    // CBC crashed or was killed: the warm start stands, with only the
    // branch and bound's bound.
    if (warm_load == kInf) return solved.error().WithContext(p.source);
    out.placement = **warm;
    out.max_load = warm_load;
    out.lower_bound = std::min(warm_load, out.bnb_lower_bound);
    out.improved_warm = ImprovesWarm(p, o, warm_load);
    out.status = SolveStatus::kFeasible;
    out.solver_failure = solved.error().message;
    out.seconds = SecondsSince(started);
    return out;
  }
  const MipOutcome& mo = *solved;
  if (mo.status == SolveStatus::kInfeasible) {
    out.status = SolveStatus::kInfeasible;
    out.why = p.source +
              ": no placement fits (memory, color classes, or where nodes "
              "can run)";
    out.seconds = SecondsSince(started);
    return out;
  }
  if (mo.status == SolveStatus::kNoSolution && warm_load == kInf) {
    out.status = SolveStatus::kNoSolution;
    out.why = p.source + ": CBC found no placement within " +
              std::to_string(o.time_limit_s) + " s";
    out.seconds = SecondsSince(started);
    return out;
  }
  KeepBest(in, model, *warm, warm_load, mo, out);
  out.improved_warm = ImprovesWarm(p, o, out.max_load);
  out.seconds = SecondsSince(started);
  return out;
}

}  // namespace tessera::placer
