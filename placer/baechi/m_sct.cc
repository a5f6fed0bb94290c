// m-SCT: Baechi's memory-constrained small-communication-time placement.
// Hanen & Munier's relaxation picks favourite children: an LP over start
// times s_i, the makespan w and, per edge (i, j), x_ij in [0, 1] (1: i and
// j on different devices, paying the edge's transfer c_ij):
//   minimise w  subject to
//   s_j >= s_i + p_i + c_ij x_ij            for every edge
//   sum_j x_ij >= outdeg(i) - 1             (at most one favourite child)
//   sum_i x_ij >= indeg(j) - 1              (at most one favourite parent)
//   w >= s_i + p_i                           for every sink
// solved with GLPK's dual simplex on the graph co-placed (and coarsened to
// at most PlaceOptions::sct_max_groups groups and kMaxLpEdges edges); an
// edge with x < 0.5 is favourite, and so is every edge inside a group. The
// list scheduler then keeps favourite children with their parents (rules
// in list_scheduler.cc and docs/placer_baechi.md).

#include <algorithm>
#include <functional>
#include <future>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/isolated.h"
#include "common/strings.h"
#include "placer/baechi/list_scheduler_internal.h"
#include "placer/baechi/lp_graph_internal.h"
#include "placer/baechi/reductions_internal.h"
#include "placer/core/algorithms_internal.h"
#include "placer/solver/glpk.h"

namespace tessera::placer {

void ReleaseThreadSolverMemory() { glp_free_env(); }
namespace {

// The LP's times are in microseconds: seconds would put coefficients near
// GLPK's tolerances.
constexpr double kLpTimeScale = 1e6;
// x below this marks a favourite edge (Baechi's rounding threshold).
constexpr double kFavouriteThreshold = 0.5;
// The LP's graph is coarsened until it has at most this many edges: GLPK's
// simplex time grows about quadratically with the rows (one per edge, plus
// one per branching op): 500 rows take about 8 ms, 1,650 rows 57 ms,
// 4,800 rows 460 ms on a 2-core machine.
constexpr size_t kMaxLpEdges = 512;
// The LP's child: its largest LP (kMaxLpEdges rows) solves in well under a
// second; one still running after 60 s, or growing past 1 GiB, is stuck.
const IsolationLimits kLpLimits{60.0, int64_t{1} << 30};

struct LpResult {
  std::vector<OpId> child;  // per op of the LP's problem
  double makespan_s = 0.0;
  std::string where;  // RunSpawned's fallback note: empty unless it forked
};

// The LP's cost of each edge (indexed like lg.succ): the mean transfer time
// of the activation bytes it carries, in LP time units.
std::vector<double> EdgeCosts(const LpGraph& lg) {
  std::vector<double> edge_cost(lg.succ.size(), 0.0);
  for (size_t e = 0; e < lg.succ.size(); ++e) {
    edge_cost[e] = lg.mean.Transfer(lg.bytes[e]) * kLpTimeScale;
  }
  return edge_cost;
}

// The LP's rows, all of the form (terms) >= row_lo, as GLPK's 1-based
// triplets. Columns (1-based): x_e = 1 + e, s_i = 1 + ne + i, w = 1 + ne + k.
struct LpRows {
  std::vector<int> ia = {0}, ja = {0};
  std::vector<double> ar = {0.0};
  std::vector<double> row_lo;
  void Entry(int col, double v) {
    ia.push_back(static_cast<int>(row_lo.size()) + 1);
    ja.push_back(col);
    ar.push_back(v);
  }
};

// Per op: the precedence row of each out-edge, the favourite-child row of
// a branching op and the makespan row of a sink; then the favourite-parent
// row of each op with two or more predecessors.
LpRows BuildLpRows(const LpGraph& q, const std::vector<double>& edge_cost) {
  const uint32_t k = q.size();
  const auto ne = static_cast<uint32_t>(q.succ.size());
  const int s0 = 1 + static_cast<int>(ne), w = 1 + static_cast<int>(ne + k);
  LpRows rows;
  for (OpId u = 0; u < k; ++u) {
    const double pu = q.mean.seconds[u] * kLpTimeScale;
    for (uint32_t e = q.succ_begin[u]; e < q.succ_begin[u + 1]; ++e) {
      rows.Entry(s0 + static_cast<int>(q.succ[e]), 1.0);
      rows.Entry(s0 + static_cast<int>(u), -1.0);
      if (edge_cost[e] > 0.0)
        rows.Entry(1 + static_cast<int>(e), -edge_cost[e]);
      rows.row_lo.push_back(pu);
    }
    const uint32_t out = q.succ_begin[u + 1] - q.succ_begin[u];
    if (out >= 2) {
      for (uint32_t e = q.succ_begin[u]; e < q.succ_begin[u + 1]; ++e) {
        rows.Entry(1 + static_cast<int>(e), 1.0);
      }
      rows.row_lo.push_back(out - 1.0);
    }
    if (out == 0) {
      rows.Entry(w, 1.0);
      rows.Entry(s0 + static_cast<int>(u), -1.0);
      rows.row_lo.push_back(pu);
    }
  }
  // In-edges: edge ids of each op's predecessors.
  std::vector<std::vector<uint32_t>> in_edges(k);
  for (OpId u = 0; u < k; ++u) {
    for (uint32_t e = q.succ_begin[u]; e < q.succ_begin[u + 1]; ++e) {
      in_edges[q.succ[e]].push_back(e);
    }
  }
  for (OpId v = 0; v < k; ++v) {
    if (in_edges[v].size() < 2) continue;
    for (uint32_t e : in_edges[v]) rows.Entry(1 + static_cast<int>(e), 1.0);
    rows.row_lo.push_back(static_cast<double>(in_edges[v].size()) - 1.0);
  }
  return rows;
}

// Loads the LP (`ne` edges, `k` ops) into `lp`: the columns' bounds, the
// objective (minimise w) and the rows.
void LoadLp(glp_prob* lp, uint32_t ne, uint32_t k, const LpRows& rows) {
  const int s0 = 1 + static_cast<int>(ne), w = 1 + static_cast<int>(ne + k);
  glp_set_obj_dir(lp, GLP_MIN);
  glp_add_cols(lp, static_cast<int>(ne + k + 1));
  for (uint32_t e = 0; e < ne; ++e) {
    glp_set_col_bnds(lp, 1 + static_cast<int>(e), GLP_DB, 0.0, 1.0);
  }
  for (uint32_t i = 0; i < k; ++i) {
    glp_set_col_bnds(lp, s0 + static_cast<int>(i), GLP_LO, 0.0, 0.0);
  }
  glp_set_col_bnds(lp, w, GLP_LO, 0.0, 0.0);
  glp_set_obj_coef(lp, w, 1.0);
  if (!rows.row_lo.empty()) {
    glp_add_rows(lp, static_cast<int>(rows.row_lo.size()));
    for (size_t r = 0; r < rows.row_lo.size(); ++r) {
      glp_set_row_bnds(lp, static_cast<int>(r) + 1, GLP_LO, rows.row_lo[r],
                       0.0);
    }
    glp_load_matrix(lp, static_cast<int>(rows.ia.size()) - 1, rows.ia.data(),
                    rows.ja.data(), rows.ar.data());
  }
}

// What the simplex answered: its objective and each edge's x.
struct LpAnswer {
  double objective = 0.0;
  std::vector<double> x;
  std::string where;  // RunSpawned's fallback note
};

// The LP as the simplex's child receives it: the edges, the ops and the
// rows.
std::string EncodeLp(uint32_t ne, uint32_t k, const LpRows& rows) {
  ByteWriter out;
  out.Put(ne);
  out.Put(k);
  out.PutArray(rows.ia);
  out.PutArray(rows.ja);
  out.PutArray(rows.ar);
  out.PutArray(rows.row_lo);
  return out.Take();
}

// In the simplex's child: loads the LP EncodeLp wrote, solves it and
// answers the return code, the status, the objective and each edge's x.
std::string SolveEncodedLp(const std::string& bytes) {
  uint32_t ne = 0, k = 0;
  LpRows rows;
  ByteReader in(bytes);
  if (!in.Get(&ne) || !in.Get(&k) || !in.GetArray(&rows.ia) ||
      !in.GetArray(&rows.ja) || !in.GetArray(&rows.ar) ||
      !in.GetArray(&rows.row_lo) || !in.at_end() ||
      rows.ja.size() != rows.ia.size() || rows.ar.size() != rows.ia.size()) {
    throw std::invalid_argument("m-sct: the LP does not decode");
  }
  const GlpkProblem problem;
  glp_prob* lp = problem.get();
  LoadLp(lp, ne, k, rows);
  glp_smcp parm;
  glp_init_smcp(&parm);
  parm.msg_lev = GLP_MSG_OFF;
  // GLPK's dual simplex solves these LPs 2-3x faster than its primal one
  // (measured on layered DAGs of 200-800 ops).
  parm.meth = GLP_DUALP;
  const int rc = glp_simplex(lp, &parm);
  ByteWriter out;
  out.Put(rc);
  out.Put(glp_get_status(lp));
  out.Put(glp_get_obj_val(lp));
  std::vector<double> x(ne);
  for (uint32_t e = 0; e < ne; ++e) {
    x[e] = glp_get_col_prim(lp, 1 + static_cast<int>(e));
  }
  out.PutDoubles(x.data(), x.size());
  return out.Take();
}

// GLPK aborts the process on an internal error, so the simplex runs in a
// child (common/isolated.h). Beside the engine's thread (large graphs) a
// spawned one: a fork of a placer holding 10^6 ops would slow that thread
// by ~400 ms. Otherwise a fork: the placer is small and nothing runs
// beside it, and a fork starts in ~1 ms where a start of the program
// takes ~7 (docs/placer_baechi.md).
const SpawnEntry kSimplexEntry{"m-sct-simplex", &SolveEncodedLp};
TESSERA_SPAWN_ENTRY(kSimplexEntry)

// Solves the LP of `ne` edges and `k` ops in the simplex's child, spawned
// when `spawn`, else forked.
Result<LpAnswer> RunSimplex(uint32_t ne, uint32_t k, const LpRows& rows,
                            bool spawn) {
  LpAnswer a;
  const std::string lp = EncodeLp(ne, k, rows);
  const char* what = "GLPK's simplex (m-sct)";
  Result<std::string> answer =
      spawn
          ? RunSpawned(kSimplexEntry, lp, kLpLimits, what, &a.where)
          : RunIsolated([&lp] { return SolveEncodedLp(lp); }, kLpLimits, what);
  if (!answer) return answer.error();
  int rc = 0, status = 0;
  ByteReader reader(*answer);
  if (!reader.Get(&rc) || !reader.Get(&status) || !reader.Get(&a.objective) ||
      !reader.GetDoubles(ne, &a.x) || !reader.at_end()) {
    return Internal("m-sct: GLPK's answer does not decode (a tessera bug)");
  }
  // The LP has no time limit and always a solution: anything but the
  // optimum is GLPK failing.
  Result<SolveStatus> lp_status = GlpkSimplexStatus(rc, status);
  if (!lp_status) return lp_status.error();
  if (*lp_status != SolveStatus::kOptimal) {
    return Internal("GLPK's simplex returned " + std::to_string(rc) +
                    " with status " + std::to_string(status));
  }
  return a;
}

Result<LpResult> SolveFavouriteLp(const LpGraph& q, bool spawn) {
  const uint32_t k = q.size();
  const auto ne = static_cast<uint32_t>(q.succ.size());
  Result<LpAnswer> answer =
      RunSimplex(ne, k, BuildLpRows(q, EdgeCosts(q)), spawn);
  if (!answer) return answer.error();
  const std::vector<double>& x = answer->x;
  // Each op's first out-edge with x below the threshold whose head has no
  // favourite parent yet is its favourite child.
  LpResult r;
  r.makespan_s = answer->objective / kLpTimeScale;
  r.where = std::move(answer->where);
  r.child.assign(k, kNoOp);
  std::vector<uint8_t> has_parent(k, 0);
  for (OpId u = 0; u < k; ++u) {
    for (uint32_t e = q.succ_begin[u]; e < q.succ_begin[u + 1]; ++e) {
      const OpId v = q.succ[e];
      if (r.child[u] != kNoOp || has_parent[v]) continue;
      if (x[e] < kFavouriteThreshold) {
        r.child[u] = v;
        has_parent[v] = 1;
      }
    }
  }
  return r;
}

// Favourite relations between the ops of `x`: an edge inside a group of
// `g`, or one between groups whose group edge is favourite. Each op gets at
// most one favourite child and one favourite parent; among candidates, the
// edge carrying the most bytes.
ListScheduleOptions MapFavourites(const Problem& x, const Grouping& g,
                                  const std::vector<OpId>& group_child,
                                  const std::vector<int64_t>& succ_bytes) {
  ListScheduleOptions o;
  o.favourite_child.assign(x.num_ops(), kNoOp);
  o.favourite_parent.assign(x.num_ops(), kNoOp);
  for (OpId u : x.topo) {
    const uint32_t a = g.group_of[u];
    OpId best = kNoOp;
    int64_t best_bytes = -1;
    for (uint32_t e = x.succ_begin[u]; e < x.succ_begin[u + 1]; ++e) {
      const OpId v = x.succ_ops[e];
      if (o.favourite_parent[v] != kNoOp) continue;
      const uint32_t b = g.group_of[v];
      if (a != b && group_child[a] != b) continue;
      if (succ_bytes[e] > best_bytes) {
        best = v;
        best_bytes = succ_bytes[e];
      }
    }
    if (best != kNoOp) {
      o.favourite_child[u] = best;
      o.favourite_parent[best] = u;
    }
  }
  return o;
}

// What the engine's thread hands the favourites' thread: the word that
// its tables are built (the LP's child starts from then on: should it be
// forked, RunSpawned's fallback, a fork stalls a thread filling new
// memory, 80 ms at 10^6 ops x 8 devices), then the bytes on x's edges, which it
// finds where it would otherwise wait for the favourites (18 ms off their
// critical path at 10^6 x 8; the mapping, which needs them, comes last). Both
// on the engine's thread (ListScheduleOptions::tables_built). Last, the word
// that the engine's thread waits for the favourites and allocates no more
// (ListScheduleOptions::joining): under AddressSanitizer, whose allocator
// a fork beside an allocating thread can hang (common/isolated.h), the
// LP's child waits for it when the favourites run on their own thread, in
// case it is forked (RunSpawned's fallback).
class EngineHandoff {
 public:
  explicit EngineHandoff(const Problem& x) : x_(x) {}
  // On the engine's thread, once.
  void TablesBuilt() {
    built_.set_value();
    succ_bytes_ = SuccessorBytes(x_);
    bytes_found_.set_value();
  }
  void WaitForTables() const { tables_.wait(); }
  // On the engine's thread, once, when the favourites run on their own.
  void Joining() { joining_.set_value(); }
  void WaitForQuiet() const { quiet_.wait(); }
  // SuccessorBytes(x), once the engine's thread has found them.
  const std::vector<int64_t>& SuccBytes() const {
    bytes_.get();
    return succ_bytes_;
  }

 private:
  const Problem& x_;
  std::promise<void> built_, bytes_found_, joining_;
  const std::shared_future<void> tables_ = built_.get_future().share();
  const std::shared_future<void> bytes_ = bytes_found_.get_future().share();
  const std::shared_future<void> quiet_ = joining_.get_future().share();
  std::vector<int64_t> succ_bytes_;
};

// The favourites of x's ops and a note on how they were found: from the
// LP over x co-placed and coarsened to at most `max_groups` groups and
// kMaxLpEdges edges between them; none when the LP fails. `beside`: on a
// thread of their own, beside the engine's.
Result<std::string> FindFavourites(const Problem& x, const Cluster& c,
                                   uint32_t max_groups, bool beside,
                                   const EngineHandoff& engine,
                                   std::vector<OpId>& child,
                                   std::vector<OpId>& parent) {
  const Grouping coplaced = CoPlace(x, IdentityGrouping(x));
  uint32_t k = std::min(coplaced.num_groups, max_groups);
  Grouping g;
  LpGraph lg;
  for (;;) {
    g = k < coplaced.num_groups ? Coarsen(x, coplaced, k) : coplaced;
    lg = g.num_groups < x.num_ops() ? LpGraphOfGroups(x, g, c)
                                    : LpGraphOfOps(x, c, engine.SuccBytes());
    const size_t edges = lg.succ.size();
    if (edges <= kMaxLpEdges || g.num_groups <= 2) break;
    k = std::min<uint32_t>(
        g.num_groups - 1,
        std::max<uint32_t>(2, static_cast<uint32_t>(
                                  static_cast<double>(g.num_groups) *
                                  kMaxLpEdges / static_cast<double>(edges))));
  }
  engine.WaitForTables();
  if (kForkWaitsForQuietThreads && beside) engine.WaitForQuiet();
  Result<LpResult> lp = SolveFavouriteLp(lg, beside);
  if (!lp) {
    return "m-sct: the favourite-child LP failed (" + lp.error().message +
           "); scheduled without favourites";
  }
  ListScheduleOptions so = MapFavourites(x, g, lp->child, engine.SuccBytes());
  child = std::move(so.favourite_child);
  parent = std::move(so.favourite_parent);
  size_t favourites = 0;
  for (OpId v : child) favourites += v != kNoOp;
  return "m-sct: LP over " + std::to_string(g.num_groups) + " groups and " +
         std::to_string(lg.succ.size()) + " edges (relaxed makespan " +
         FormatMs(lp->makespan_s) + " ms), " + std::to_string(favourites) +
         " favourite children" + (lp->where.empty() ? "" : "; " + lp->where);
}

// The list schedule with favourites, found while the engine prepares.
Result<AlgoOutput> MSct(const Problem& x, const Cluster& c,
                        const Budget& budget, uint32_t max_groups) {
  Result<std::string> note = std::string();
  ListScheduleOptions so;
  const std::thread::id caller = std::this_thread::get_id();
  EngineHandoff engine(x);
  so.tables_built = [&engine] { engine.TablesBuilt(); };
  so.joining = [&engine] { engine.Joining(); };
  so.favourites = [&](std::vector<OpId>& child, std::vector<OpId>& parent) {
    const bool beside = std::this_thread::get_id() != caller;
    note = FindFavourites(x, c, max_groups, beside, engine, child, parent);
    // GLPK's environment is per thread (placer/solver/glpk.h): the one the
    // second thread made for the LP ends with it.
    if (beside) ReleaseThreadSolverMemory();
  };
  auto out = ListSchedule(x, c, budget, so);
  if (!note) return note.error();
  if (out) out->notes.push_back(*note);
  return out;
}

}  // namespace

Result<AlgoOutput> PlaceMSct(const Problem& p, const Cluster& c,
                             const Budget& budget, const PlaceOptions& o) {
  const auto max_groups = static_cast<uint32_t>(std::max(o.sct_max_groups, 1));
  return PlaceReduced(
      p, o, [&](const Problem& q) { return MSct(q, c, budget, max_groups); });
}

}  // namespace tessera::placer
