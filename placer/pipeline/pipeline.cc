// PlacePipeline: contiguous stages, the better simulated of two splits
// (docs/placer_pipeline_ilp.md "pipeline"): the block DP's below (its best
// by the GPipe estimate) and, with several microbatches, the exact split
// over chains of ideals (pipeline_exact.cc).
//
// The block DP: stages along one topological order, balanced by dynamic
// programming.
// The order is cut into at most kMaxBlocks blocks (balanced by time and
// memory, plus the cut points of a greedy memory fill, so the DP is feasible
// whenever some contiguous split is). For every block range [i, j) the
// ledger's bytes and the bytes/count of tensors received from earlier
// blocks are tabulated once (2-D difference arrays), then
// dp[k][j] = the best split of blocks [0, j) over the first k devices of an
// order (a device may be skipped). Each device hosts at most one stage.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "common/strings.h"
#include "placer/core/algorithms_internal.h"
#include "placer/core/ledger_internal.h"
#include "placer/pipeline/pipeline_internal.h"

namespace tessera::placer {
namespace {

// At most this many blocks: the DP is O(devices x blocks^2) per run and
// runs up to 9 times per device order; 512 blocks keep a 10^5-op model at
// a few milliseconds per run with 1/512 balance resolution.
constexpr size_t kMaxBlocks = 512;
// Fewer blocks when there are many devices: devices x blocks^2 <= this.
constexpr double kMaxDpCells = 4e6;
// Stage-time caps tried above the best bottleneck when minimizing the sum
// of stage times under a cap (the GPipe estimate mixes both).
constexpr double kCapFactors[] = {1.0 + 1e-9, 1.05, 1.15, 1.3, 1.6, 2.0, 3.0};
constexpr double kInf = std::numeric_limits<double>::infinity();
// The exact split is not tried on larger graphs: the max-load DP's first
// bound alone (the best split of one topological order of its units) is
// quadratic in them, 0.3 s at 5,000 ops and 6 s at 20,000 (2-core machine).
constexpr size_t kExactMaxOps = 5000;
// Enumerating an ideal scans every unit, so the exact split's ideals are
// capped at this / ops as well (about 0.7 s of enumeration).
constexpr double kExactEnumerationWork = 2e8;

int64_t WeightBytes(const Problem& p, const ProblemTensor& t) {
  return p.training ? static_cast<int64_t>(static_cast<double>(t.bytes) *
                                           p.weight_state_factor)
                    : t.bytes;
}

// Block b holds topological positions [begin[b], begin[b + 1]).
struct Blocks {
  std::vector<uint32_t> begin;
  std::vector<uint32_t> of_op;  // per op: its block
  size_t size() const { return begin.size() - 1; }
};

// Per-block-range tables, (B + 1) x (B + 1), row i = first block, column
// j = one past the last block.
class RangeTables {
 public:
  RangeTables(const Problem& p, const Blocks& blocks);
  // MemoryLedger's count for a device holding exactly blocks [i, j).
  int64_t bytes(size_t i, size_t j) const { return mem_[At(i, j)]; }
  // Activations produced before block i and consumed in [i, j): each is
  // received once.
  int64_t in_bytes(size_t i, size_t j) const { return in_bytes_[At(i, j)]; }
  int64_t in_count(size_t i, size_t j) const { return in_count_[At(i, j)]; }

 private:
  size_t At(size_t i, size_t j) const { return i * (b_ + 2) + j; }
  // Adds v for every i in [i0, i1], j in [j0, b_] (difference array).
  void AddRect(std::vector<int64_t>& a, size_t i0, size_t i1, size_t j0,
               int64_t v) const {
    a[At(i0, j0)] += v;
    a[At(i1 + 1, j0)] -= v;
  }
  void Integrate(std::vector<int64_t>& a) const;

  size_t b_;
  std::vector<int64_t> mem_, in_bytes_, in_count_;
};

RangeTables::RangeTables(const Problem& p, const Blocks& blocks)
    : b_(blocks.size()) {
  const size_t cells = (b_ + 2) * (b_ + 2);
  mem_.assign(cells, 0);
  in_bytes_.assign(cells, 0);
  in_count_.assign(cells, 0);
  // Per-tensor rectangles: the ranges whose first consumer block is c and
  // that hold the tensor (weights, graph inputs) or receive it (remote
  // activations: the range starts after the producer's block).
  std::vector<uint32_t> cons;
  for (uint32_t t = 0; t < p.num_tensors(); ++t) {
    const ProblemTensor& tensor = p.tensors[t];
    const bool activation = tensor.role == TensorRole::kActivation;
    if (activation && tensor.producer == kNoOp) continue;
    cons.clear();
    for (uint32_t u : p.consumers(t)) cons.push_back(blocks.of_op[u]);
    if (cons.empty()) continue;
    std::sort(cons.begin(), cons.end());
    cons.erase(std::unique(cons.begin(), cons.end()), cons.end());
    const int64_t bytes = tensor.role == TensorRole::kWeight
                              ? WeightBytes(p, tensor)
                              : tensor.bytes;
    int64_t prev =
        activation ? static_cast<int64_t>(blocks.of_op[tensor.producer]) : -1;
    for (uint32_t c : cons) {
      if (static_cast<int64_t>(c) > prev) {
        const auto i0 = static_cast<size_t>(prev + 1);
        AddRect(mem_, i0, c, c + 1, bytes);
        if (activation) {
          AddRect(in_bytes_, i0, c, c + 1, bytes);
          AddRect(in_count_, i0, c, c + 1, 1);
        }
      }
      prev = std::max<int64_t>(prev, c);
    }
  }
  Integrate(mem_);
  Integrate(in_bytes_);
  Integrate(in_count_);
  // Per block: activation outputs + extra, the largest workspace, the
  // largest activation produced or read (training holds twice it).
  std::vector<int64_t> base(b_, 0);
  std::vector<int64_t> work(b_, 0);
  std::vector<int64_t> largest(b_, 0);
  for (size_t b = 0; b < b_; ++b) {
    for (uint32_t pos = blocks.begin[b]; pos < blocks.begin[b + 1]; ++pos) {
      const OpId op = p.topo[pos];
      base[b] += p.extra_bytes[op];
      work[b] = std::max(work[b], p.workspace_bytes[op]);
      for (uint32_t t : p.outputs(op)) {
        if (p.tensors[t].role != TensorRole::kActivation) continue;
        base[b] += p.tensors[t].bytes;
        largest[b] = std::max(largest[b], p.tensors[t].bytes);
      }
      for (uint32_t t : p.inputs(op)) {
        const ProblemTensor& tensor = p.tensors[t];
        if (tensor.role == TensorRole::kActivation &&
            tensor.producer != kNoOp) {
          largest[b] = std::max(largest[b], tensor.bytes);
        }
      }
    }
  }
  for (size_t i = 0; i < b_; ++i) {
    int64_t sum = 0;
    int64_t w = 0;
    int64_t l = 0;
    for (size_t j = i + 1; j <= b_; ++j) {
      sum += base[j - 1];
      w = std::max(w, work[j - 1]);
      l = std::max(l, largest[j - 1]);
      mem_[At(i, j)] += sum + w + (p.training ? 2 * l : 0);
    }
  }
}

void RangeTables::Integrate(std::vector<int64_t>& a) const {
  // Rectangles extend to the last column: a prefix sum over i, then over j.
  for (size_t i = 1; i <= b_; ++i) {
    for (size_t j = 0; j <= b_; ++j) a[At(i, j)] += a[At(i - 1, j)];
  }
  for (size_t i = 0; i <= b_; ++i) {
    for (size_t j = 1; j <= b_; ++j) a[At(i, j)] += a[At(i, j - 1)];
  }
}

// The positions (in problem.topo) where a greedy fill in `order` starts a
// new device: each device takes ops until the next one does not fit. Such
// a fill finds a contiguous split whenever one exists in that order (a
// range's ledger bytes never shrink when the range grows). Empty when it
// fails.
std::optional<std::vector<uint32_t>> GreedyCuts(const Problem& p,
                                                const Budget& budget,
                                                const std::vector<int>& order,
                                                size_t num_devices) {
  MemoryLedger ledger(p, static_cast<int>(num_devices));
  std::vector<uint32_t> cuts;
  size_t k = 0;
  bool fresh = true;
  for (uint32_t pos = 0; pos < p.topo.size(); ++pos) {
    const OpId op = p.topo[pos];
    while (k < order.size() && !ledger.Fits(op, order[k], budget[order[k]])) {
      ++k;
      fresh = true;
    }
    if (k == order.size()) return std::nullopt;
    if (fresh && pos > 0) cuts.push_back(pos);
    fresh = false;
    ledger.Place(op, order[k]);
  }
  return cuts;
}

// Blocks balanced by time and memory (each counts half), with `extra`
// positions as additional cuts.
Blocks MakeBlocks(const Problem& p, size_t max_blocks,
                  const std::vector<uint32_t>& extra) {
  const size_t n = p.num_ops();
  std::vector<double> weight(n, 0.0);
  double total_time = 0.0;
  double total_mem = 0.0;
  std::vector<double> time(n);
  std::vector<double> mem(n);
  for (size_t pos = 0; pos < n; ++pos) {
    const OpId op = p.topo[pos];
    double t = 0.0;
    for (int q = 0; q < p.num_profiles; ++q) {
      const size_t at = static_cast<size_t>(op) * p.num_profiles + q;
      t += p.forward_s[at] + (p.backward_s.empty() ? 0.0 : p.backward_s[at]);
    }
    time[pos] = t;
    mem[pos] = static_cast<double>(StandaloneBytes(p, op));
    total_time += t;
    total_mem += mem[pos];
  }
  for (size_t pos = 0; pos < n; ++pos) {
    weight[pos] = (total_time > 0 ? time[pos] / total_time : 0.0) +
                  (total_mem > 0 ? mem[pos] / total_mem : 0.0);
    if (total_time <= 0 && total_mem <= 0) weight[pos] = 1.0;
  }
  const double total = std::accumulate(weight.begin(), weight.end(), 0.0);
  std::vector<uint32_t> cuts = {0};
  if (n <= max_blocks) {
    for (uint32_t pos = 1; pos < n; ++pos) cuts.push_back(pos);
  } else {
    double acc = 0.0;
    size_t next = 1;
    for (uint32_t pos = 0; pos + 1 < n; ++pos) {
      acc += weight[pos];
      if (acc >=
          total * static_cast<double>(next) / static_cast<double>(max_blocks)) {
        cuts.push_back(pos + 1);
        while (next < max_blocks &&
               acc >= total * static_cast<double>(next) /
                          static_cast<double>(max_blocks)) {
          ++next;
        }
      }
    }
  }
  cuts.insert(cuts.end(), extra.begin(), extra.end());
  cuts.push_back(static_cast<uint32_t>(n));
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  Blocks blocks;
  blocks.begin = cuts;
  blocks.of_op.assign(n, 0);
  for (size_t b = 0; b + 1 < cuts.size(); ++b) {
    for (uint32_t pos = cuts[b]; pos < cuts[b + 1]; ++pos) {
      blocks.of_op[p.topo[pos]] = static_cast<uint32_t>(b);
    }
  }
  return blocks;
}

// A split: per device in the order, its block range (empty when begin ==
// end), with the DP's view of its cost.
struct Split {
  std::vector<size_t> begin, end;  // per position in the order
  double max_stage = kInf, sum_stages = kInf;
  double Estimate(int microbatches) const {
    return sum_stages + (microbatches - 1) * max_stage;
  }
};

class PipelineDp {
 public:
  PipelineDp(const Problem& p, const Cluster& c, const Budget& budget,
             const Blocks& blocks, const RangeTables& tables)
      : p_(p), c_(c), budget_(budget), tables_(tables), b_(blocks.size()) {
    // Prefix sums of op time per profile, over blocks.
    prefix_.assign(static_cast<size_t>(p.num_profiles) * (b_ + 1), 0.0);
    for (int q = 0; q < p.num_profiles; ++q) {
      double* pre = &prefix_[static_cast<size_t>(q) * (b_ + 1)];
      for (size_t b = 0; b < b_; ++b) {
        double t = 0.0;
        for (uint32_t pos = blocks.begin[b]; pos < blocks.begin[b + 1]; ++pos) {
          const size_t at =
              static_cast<size_t>(p.topo[pos]) * p.num_profiles + q;
          t +=
              p.forward_s[at] + (p.backward_s.empty() ? 0.0 : p.backward_s[at]);
        }
        pre[b + 1] = pre[b] + t;
      }
    }
  }

  // Minimizes (max stage, sum) lexicographically when cap is infinite and
  // `min_max`; otherwise minimizes (sum, max) with every stage <= cap.
  Split Run(const std::vector<int>& order, bool min_max, double cap) const;

 private:
  double Compute(int d, size_t i, size_t j) const {
    const double* pre =
        &prefix_[static_cast<size_t>(p_.device_profile[d]) * (b_ + 1)];
    return (pre[j] - pre[i]) / c_.devices[d].compute_share;
  }
  // Receiving the stage's inputs over the link from `from` (twice in
  // training: the gradients go back the same way).
  double Comm(int from, int d, size_t i, size_t j) const {
    if (from < 0) return 0.0;
    const int64_t count = tables_.in_count(i, j);
    if (count == 0) return 0.0;
    const Link& link = c_.link(from, d);
    const double t =
        static_cast<double>(count) * link.latency +
        static_cast<double>(tables_.in_bytes(i, j)) / link.bandwidth;
    return p_.training ? 2 * t : t;
  }

  const Problem& p_;
  const Cluster& c_;
  const Budget& budget_;
  const RangeTables& tables_;
  size_t b_;
  std::vector<double> prefix_;
};

Split PipelineDp::Run(const std::vector<int>& order, bool min_max,
                      double cap) const {
  const size_t nd = order.size();
  const size_t w = b_ + 1;
  // State (k, j): blocks [0, j) covered by the first k devices of `order`.
  std::vector<double> mx((nd + 1) * w, kInf);
  std::vector<double> sm((nd + 1) * w, kInf);
  std::vector<int> last((nd + 1) * w, -1);      // last device used
  std::vector<int64_t> from((nd + 1) * w, -1);  // stage start, -1: skipped
  mx[0] = 0.0;
  sm[0] = 0.0;
  auto better = [&](double m1, double s1, double m2, double s2) {
    return min_max ? (m1 < m2 || (m1 == m2 && s1 < s2))
                   : (s1 < s2 || (s1 == s2 && m1 < m2));
  };
  for (size_t k = 0; k < nd; ++k) {
    const int d = order[k];
    double* nmx = &mx[(k + 1) * w];
    double* nsm = &sm[(k + 1) * w];
    for (size_t j = 0; j <= b_; ++j) {
      nmx[j] = mx[k * w + j];
      nsm[j] = sm[k * w + j];
      last[(k + 1) * w + j] = last[k * w + j];
    }
    for (size_t i = 0; i < b_; ++i) {
      const double m0 = mx[k * w + i];
      const double s0 = sm[k * w + i];
      if (m0 == kInf) continue;
      const int prev = last[k * w + i];
      for (size_t j = i + 1; j <= b_; ++j) {
        if (tables_.bytes(i, j) > budget_[d]) break;  // grows with j
        const double compute = Compute(d, i, j);
        if (compute > cap) break;  // grows with j
        const double stage = compute + Comm(prev, d, i, j);
        if (stage > cap) continue;
        const double m1 = std::max(m0, stage);
        const double s1 = s0 + stage;
        if (better(m1, s1, nmx[j], nsm[j])) {
          nmx[j] = m1;
          nsm[j] = s1;
          last[(k + 1) * w + j] = d;
          from[(k + 1) * w + j] = static_cast<int64_t>(i);
        }
      }
    }
  }
  Split split;
  if (mx[nd * w + b_] == kInf) return split;
  split.max_stage = mx[nd * w + b_];
  split.sum_stages = sm[nd * w + b_];
  split.begin.assign(nd, 0);
  split.end.assign(nd, 0);
  size_t j = b_;
  for (size_t k = nd; k > 0; --k) {
    const int64_t i = from[k * w + j];
    if (i < 0) continue;  // device order[k - 1] skipped
    split.begin[k - 1] = static_cast<size_t>(i);
    split.end[k - 1] = j;
    j = static_cast<size_t>(i);
  }
  return split;
}

// The cluster order and the order by effective speed (total op time on the
// device, shortest first), without duplicates.
std::vector<std::vector<int>> DeviceOrders(const Problem& p, const Cluster& c) {
  const int nd = static_cast<int>(c.size());
  std::vector<int> cluster_order(nd);
  std::iota(cluster_order.begin(), cluster_order.end(), 0);
  std::vector<double> total(nd, 0.0);
  for (int d = 0; d < nd; ++d) {
    for (OpId op = 0; op < p.num_ops(); ++op) {
      total[d] += p.Forward(op, d, c.devices[d].compute_share) +
                  p.Backward(op, d, c.devices[d].compute_share);
    }
  }
  std::vector<int> by_speed = cluster_order;
  std::stable_sort(by_speed.begin(), by_speed.end(),
                   [&](int a, int b) { return total[a] < total[b]; });
  std::vector<std::vector<int>> orders = {cluster_order};
  if (by_speed != cluster_order) orders.push_back(by_speed);
  return orders;
}

// "pipeline: 3 stages (node0/gpu0 12 ops, ...), 8 microbatches, DP estimate
// 1.234 ms" + how: the estimate per microbatch.
std::string StagesNote(const Problem& p, const Cluster& c,
                       const PipelineSplit& split, int microbatches,
                       const std::string& how) {
  std::vector<int> ops(c.size(), 0);
  for (OpId op = 0; op < p.num_ops(); ++op) ++ops[split.placement.device[op]];
  std::string layout;
  for (int d : split.stages) {
    layout += (layout.empty() ? "" : ", ") + c.devices[d].id + " " +
              std::to_string(ops[d]) + " ops";
  }
  const size_t n = split.stages.size();
  return "pipeline: " + std::to_string(n) + " stage" + (n == 1 ? "" : "s") +
         " (" + layout + "), " + std::to_string(microbatches) + " microbatch" +
         (microbatches == 1 ? "" : "es") + ", DP estimate " +
         FormatMs(split.times.Estimate(microbatches) / microbatches) + " ms" +
         how;
}

// The exact split beside the block DP's, when both were found: simulated
// steps (what decides), then estimates and bottlenecks.
struct Versus {
  const PipelineSplit* block = nullptr;
  double exact_step = 0.0, block_step = 0.0;
};

// Whether the exact split won (beside the block DP's, when it has one), its
// max load and whether it is optimal.
std::string ExactNote(const ExactPipeline& e, bool won, int microbatches,
                      const Versus& v) {
  if (!e.split) {
    return "pipeline: no exact contiguous split (" + e.why_not + ")";
  }
  const StageTimes& t = e.split->times;
  std::string s = "pipeline: the exact contiguous split ";
  if (v.block == nullptr) {
    s += "(no split of the topological order fits)";
  } else {
    const StageTimes& b = v.block->times;
    s += std::string(won ? "won" : "lost") + " (simulated " +
         FormatMs(v.exact_step) + " ms vs the block DP's " +
         FormatMs(v.block_step) + " ms; estimate " +
         FormatMs(t.Estimate(microbatches) / microbatches) + " vs " +
         FormatMs(b.Estimate(microbatches) / microbatches) +
         " ms; bottleneck " + FormatMs(t.max_stage) + " vs " +
         FormatMs(b.max_stage) + " ms)";
  }
  s += ": max load " + FormatMs(e.max_load) + " ms, " +
       (e.status == SolveStatus::kOptimal ? "proven optimal"
                                          : "best found, not proven optimal") +
       (e.dearest_links ? " with every crossing at the dearest link's cost"
                        : "") +
       " (" + std::to_string(e.ideals) + " ideals, " + std::to_string(e.runs) +
       " DP run" + (e.runs == 1 ? "" : "s") + ", " + FormatMs(e.seconds) +
       " ms)";
  if (e.status != SolveStatus::kOptimal && !e.stopped.empty()) {
    s += "; " + e.stopped;
  }
  return s;
}

}  // namespace

Result<PipelineSplit> BlockPipelineSplit(const Problem& p, const Cluster& c,
                                         const Budget& budget, int microbatches,
                                         size_t* num_blocks) {
  const size_t nd = c.size();
  const std::vector<std::vector<int>> orders = DeviceOrders(p, c);
  std::vector<uint32_t> greedy;
  bool any_greedy = false;
  for (const auto& order : orders) {
    const auto cuts = GreedyCuts(p, budget, order, nd);
    if (!cuts) continue;
    any_greedy = true;
    greedy.insert(greedy.end(), cuts->begin(), cuts->end());
  }
  const std::string none = "no split of the topological order into " +
                           std::to_string(nd) +
                           " contiguous stages fits the devices' memory";
  if (!any_greedy) return Infeasible(none);

  const size_t max_blocks = std::clamp<size_t>(
      static_cast<size_t>(std::sqrt(kMaxDpCells / static_cast<double>(nd))), 16,
      kMaxBlocks);
  const Blocks blocks = MakeBlocks(p, max_blocks, greedy);
  const RangeTables tables(p, blocks);
  const PipelineDp dp(p, c, budget, blocks, tables);
  *num_blocks = blocks.size();

  Split best;
  const std::vector<int>* best_order = nullptr;
  for (const auto& order : orders) {
    // One microbatch: the estimate is the sum, minimized without a cap.
    std::vector<Split> candidates;
    candidates.push_back(dp.Run(order, /*min_max=*/false, kInf));
    if (candidates[0].max_stage == kInf) continue;
    if (microbatches > 1) {
      candidates.push_back(dp.Run(order, /*min_max=*/true, kInf));
      const double bottleneck = candidates.back().max_stage;
      for (double f : kCapFactors) {
        candidates.push_back(dp.Run(order, false, bottleneck * f));
      }
    }
    for (Split& s : candidates) {
      if (s.max_stage == kInf) continue;
      if (best_order == nullptr ||
          s.Estimate(microbatches) < best.Estimate(microbatches)) {
        best = std::move(s);
        best_order = &order;
      }
    }
  }
  if (best_order == nullptr) return Infeasible(none);

  PipelineSplit split;
  split.placement.device.assign(p.num_ops(), 0);
  for (size_t k = 0; k < nd; ++k) {
    if (best.begin[k] == best.end[k]) continue;
    const int d = (*best_order)[k];
    split.stages.push_back(d);
    for (uint32_t pos = blocks.begin[best.begin[k]];
         pos < blocks.begin[best.end[k]]; ++pos) {
      split.placement.device[p.topo[pos]] = static_cast<uint16_t>(d);
    }
  }
  split.times = PipelineStageTimes(p, c, split.placement);
  return split;
}

Result<AlgoOutput> PlacePipeline(const Problem& p, const Cluster& c,
                                 const Budget& budget, const PlaceOptions& o) {
  const size_t n = p.num_ops();
  const int microbatches = std::max(1, o.microbatches);
  AlgoOutput out;
  out.microbatches = microbatches;
  out.placement.device.assign(n, 0);
  out.placement.priority.assign(n, 0);
  for (size_t pos = 0; pos < n; ++pos) {
    out.placement.priority[p.topo[pos]] = static_cast<uint32_t>(pos);
  }
  if (n == 0) return out;
  if (c.size() == 0) return Infeasible("pipeline: the cluster has no devices");

  size_t blocks = 0;
  auto block = BlockPipelineSplit(p, c, budget, microbatches, &blocks);
  if (!block && block.error().code != ErrorCode::kInfeasible) {
    return block.error();
  }
  // With one microbatch the estimate is the sum of the stages, which the
  // block DP minimizes and the exact DP (the bottleneck) does not: the
  // exact DP runs then only when the block DP finds nothing.
  std::optional<ExactPipeline> exact;
  if (o.pipeline_exact_time_limit_s > 0 && (microbatches > 1 || !block) &&
      n <= kExactMaxOps) {
    ExactPipelineOptions eo;
    eo.time_limit_s = o.pipeline_exact_time_limit_s;
    eo.max_ideals = std::min(
        o.pipeline_exact_max_ideals,
        static_cast<int64_t>(kExactEnumerationWork / static_cast<double>(n)));
    eo.max_blocks = o.pipeline_exact_max_blocks;
    eo.microbatches = microbatches;
    exact = ExactPipelineSplit(p, c, budget, eo);
  }
  // Both found: the simulator picks (the estimate misranks them where
  // links differ: docs/placer_pipeline_ilp.md "The choice").
  bool exact_wins = exact && exact->split && !block;
  Versus versus;
  if (exact && exact->split && block) {
    const SimOptions so{.microbatches = microbatches};
    Placement x = out.placement;
    x.device = block->placement.device;
    const SimResult b = Simulate(p, c, x, so);
    x.device = exact->split->placement.device;
    const SimResult e = Simulate(p, c, x, so);
    exact_wins = e.fits && (!b.fits || e.step_s < b.step_s);
    versus = {&*block, e.step_s, b.step_s};
  }
  if (!block && !exact_wins) {
    std::string msg = "pipeline: " + block.error().message;
    if (exact) msg += "; nor does an exact contiguous split: " + exact->why_not;
    return Infeasible(msg);
  }
  const PipelineSplit& best = exact_wins ? *exact->split : *block;
  out.placement.device = best.placement.device;
  out.notes.push_back(
      StagesNote(p, c, best, microbatches,
                 exact_wins ? std::string(", the exact contiguous split")
                            : " over " + std::to_string(blocks) + " blocks"));
  if (n > kExactMaxOps && microbatches > 1) {
    out.notes.push_back(
        "pipeline: the exact contiguous split is not tried on "
        "more than " +
        std::to_string(kExactMaxOps) + " ops");
  }
  if (exact) {
    out.notes.push_back(ExactNote(*exact, exact_wins, microbatches, versus));
  }
  return out;
}

}  // namespace tessera::placer
