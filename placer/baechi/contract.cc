// Contract (reductions_internal.h): the problem whose ops are the groups
// of a Grouping; and PlaceReduced (list_scheduler_internal.h), which
// places that problem and expands the placement back.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "placer/baechi/list_scheduler_internal.h"
#include "placer/baechi/reductions_internal.h"

namespace tessera::placer {
namespace {

constexpr uint32_t kNone = UINT32_MAX;

// Contract's steps, each filling some of the contracted problem `q`'s
// arrays from those the previous ones filled.

// In training the ledger also counts twice the largest tensor a device
// produces or receives; the largest tensor made inside each group stays
// a (consumer-less) tensor of the group so that count stays what it is
// for the ops. Per group, that tensor (kNone outside training).
std::vector<uint32_t> LargestInside(const Problem& p, const Grouping& g) {
  std::vector<uint32_t> largest_inside(g.num_groups, kNone);
  if (p.training) {
    for (uint32_t t = 0; t < p.num_tensors(); ++t) {
      const ProblemTensor& tensor = p.tensors[t];
      if (tensor.role != TensorRole::kActivation || tensor.producer == kNoOp) {
        continue;
      }
      uint32_t& best = largest_inside[g.group_of[tensor.producer]];
      if (best == kNone || p.tensors[best].bytes < tensor.bytes) best = t;
    }
  }
  return largest_inside;
}

// Tensors: which survive, their producer group and consumer groups
// (q.tensors, q.use_begin, q.use_ops); the bytes of the others go to
// q.extra_bytes.
void ContractTensors(const Problem& p, const Grouping& g, Problem& q) {
  const uint32_t n = g.num_groups;
  const std::vector<uint32_t> largest_inside = LargestInside(p, g);
  q.extra_bytes.assign(n, 0);
  auto state_bytes = [&](int64_t bytes) {
    return p.training ? static_cast<int64_t>(std::ceil(
                            static_cast<double>(bytes) * p.weight_state_factor))
                      : bytes;
  };
  std::vector<uint32_t> stamp(n, kNone);
  q.tensors.reserve(p.num_tensors());
  q.use_begin.reserve(p.num_tensors() + 1);
  for (uint32_t t = 0; t < p.num_tensors(); ++t) {
    const ProblemTensor& tensor = p.tensors[t];
    const uint32_t prod =
        tensor.producer == kNoOp ? kNone : g.group_of[tensor.producer];
    bool inside_use = false, outside_use = false;
    for (uint32_t op : p.consumers(t)) {
      (g.group_of[op] == prod ? inside_use : outside_use) = true;
    }
    if (tensor.role == TensorRole::kActivation && prod != kNone &&
        !outside_use && inside_use && !tensor.output &&
        largest_inside[prod] != t) {
      q.extra_bytes[prod] += tensor.bytes;  // lives and dies in its group
      continue;
    }
    // A weight whose producer (a Constant) shares a group with a consumer:
    // a group cannot read its own output. Read only there, the weight
    // becomes one without a producer; read elsewhere too, the producing
    // group keeps it as an output and counts its copy as extra (the ledger
    // counts weights only where they are read).
    uint32_t producer_group = prod;
    if (tensor.role == TensorRole::kWeight && prod != kNone && inside_use) {
      if (outside_use) {
        q.extra_bytes[prod] += state_bytes(tensor.bytes);
      } else {
        producer_group = kNone;
      }
    }
    const auto id = static_cast<uint32_t>(q.tensors.size());
    ProblemTensor kept = tensor;
    kept.producer = producer_group == kNone ? kNoOp : producer_group;
    q.tensors.push_back(std::move(kept));
    q.use_begin.push_back(static_cast<uint32_t>(q.use_ops.size()));
    for (uint32_t op : p.consumers(t)) {
      const uint32_t grp = g.group_of[op];
      if (grp == producer_group || stamp[grp] == id) continue;
      stamp[grp] = id;
      q.use_ops.push_back(grp);
    }
  }
  q.use_begin.push_back(static_cast<uint32_t>(q.use_ops.size()));
}

// Inputs and outputs of each of the `n` groups: transposes of the tensors'
// consumers and producers.
void TransposeTensorUses(Problem& q, uint32_t n) {
  const auto nt = static_cast<uint32_t>(q.tensors.size());
  q.in_begin.assign(n + 1, 0);
  q.out_begin.assign(n + 1, 0);
  for (uint32_t grp : q.use_ops) ++q.in_begin[grp + 1];
  for (const ProblemTensor& t : q.tensors) {
    if (t.producer != kNoOp) ++q.out_begin[t.producer + 1];
  }
  std::partial_sum(q.in_begin.begin(), q.in_begin.end(), q.in_begin.begin());
  std::partial_sum(q.out_begin.begin(), q.out_begin.end(), q.out_begin.begin());
  q.in_tensors.resize(q.in_begin[n]);
  q.out_tensors.resize(q.out_begin[n]);
  std::vector<uint32_t> fill_in(q.in_begin.begin(), q.in_begin.end() - 1);
  std::vector<uint32_t> fill_out(q.out_begin.begin(), q.out_begin.end() - 1);
  for (uint32_t t = 0; t < nt; ++t) {
    for (uint32_t i = q.use_begin[t]; i < q.use_begin[t + 1]; ++i) {
      q.in_tensors[fill_in[q.use_ops[i]]++] = t;
    }
    if (q.tensors[t].producer != kNoOp) {
      q.out_tensors[fill_out[q.tensors[t].producer]++] = t;
    }
  }
}

// Distinct predecessors (sorted) and successors of each of the `n` groups.
void FillGroupEdges(Problem& q, uint32_t n) {
  std::vector<uint32_t> stamp(n, kNone);
  q.pred_begin.assign(n + 1, 0);
  for (uint32_t grp = 0; grp < n; ++grp) {
    q.pred_begin[grp] = static_cast<uint32_t>(q.pred_ops.size());
    for (uint32_t t : q.inputs(grp)) {
      const OpId prod = q.tensors[t].producer;
      if (prod == kNoOp || stamp[prod] == grp) continue;
      stamp[prod] = grp;
      q.pred_ops.push_back(prod);
    }
    std::sort(q.pred_ops.begin() + q.pred_begin[grp], q.pred_ops.end());
  }
  q.pred_begin[n] = static_cast<uint32_t>(q.pred_ops.size());
  q.succ_begin.assign(n + 1, 0);
  for (uint32_t v : q.pred_ops) ++q.succ_begin[v + 1];
  std::partial_sum(q.succ_begin.begin(), q.succ_begin.end(),
                   q.succ_begin.begin());
  q.succ_ops.resize(q.pred_ops.size());
  std::vector<uint32_t> fill(q.succ_begin.begin(), q.succ_begin.end() - 1);
  for (uint32_t grp = 0; grp < n; ++grp) {
    for (uint32_t v : q.predecessors(grp)) q.succ_ops[fill[v]++] = grp;
  }
}

// Per group: times summed, the largest workspace, extra bytes added, name
// and type (the op's own when the group has one op).
void SumGroupCosts(const Problem& p, const Grouping& g, Problem& q) {
  const uint32_t n = g.num_groups;
  SumGroupTimes(p, g, q);
  q.workspace_bytes.assign(n, 0);
  std::vector<uint32_t> size(n, 0), member(n, kNone);
  for (OpId op = 0; op < p.num_ops(); ++op) {
    const uint32_t grp = g.group_of[op];
    q.workspace_bytes[grp] =
        std::max(q.workspace_bytes[grp], p.workspace_bytes[op]);
    q.extra_bytes[grp] += p.extra_bytes[op];
    ++size[grp];
    member[grp] = op;
  }
  q.names.resize(n);
  q.op_types.resize(n);
  for (uint32_t grp = 0; grp < n; ++grp) {
    q.names[grp] = "group" + std::to_string(grp);
    q.op_types[grp] = size[grp] == 1 ? p.op_types[member[grp]] : "Group";
  }
}

}  // namespace

void SumGroupTimes(const Problem& p, const Grouping& g, Problem& q) {
  const int np = p.num_profiles;
  const size_t cells = static_cast<size_t>(g.num_groups) * np;
  q.num_profiles = np;
  q.forward_s.assign(cells, 0.0);
  q.backward_s.assign(p.training ? cells : 0, 0.0);
  for (OpId op = 0; op < p.num_ops(); ++op) {
    const size_t from = static_cast<size_t>(op) * np;
    const size_t to = static_cast<size_t>(g.group_of[op]) * np;
    for (int k = 0; k < np; ++k) {
      q.forward_s[to + k] += p.forward_s[from + k];
      if (p.training) q.backward_s[to + k] += p.backward_s[from + k];
    }
  }
}

// Builds the contracted Problem's arrays directly (ProblemBuilder's
// per-op vectors cost seconds on 10^6-op graphs).
Result<Problem> Contract(const Problem& p, const Grouping& g) {
  const uint32_t n = g.num_groups;
  if (g.group_of.size() != p.num_ops()) {
    return Internal("a grouping of " + std::to_string(g.group_of.size()) +
                    " ops for a problem of " + std::to_string(p.num_ops()));
  }
  Problem q;
  q.training = p.training;
  q.num_profiles = p.num_profiles;
  q.device_profile = p.device_profile;
  q.weight_state_factor = p.weight_state_factor;
  ContractTensors(p, g, q);
  TransposeTensorUses(q, n);
  FillGroupEdges(q, n);
  SumGroupCosts(p, g, q);

  // Groups are numbered along the model's order, so the smallest-first
  // order follows it too.
  if (!FillTopologicalOrder(q)) {
    return Internal("contracting " + std::to_string(p.num_ops()) +
                    " ops into " + std::to_string(n) + " groups made a cycle");
  }
  return q;
}

Result<AlgoOutput> PlaceReduced(
    const Problem& p, const PlaceOptions& o,
    const std::function<Result<AlgoOutput>(const Problem&)>& algorithm) {
  if (!o.coplace && !o.fuse) return algorithm(p);
  Grouping g = IdentityGrouping(p);
  if (o.coplace) g = CoPlace(p, g);
  if (o.fuse) g = FuseSharedWeights(p, g);
  if (g.num_groups == p.num_ops()) return algorithm(p);
  auto reduced = Contract(p, g);
  if (!reduced) return reduced.error();
  auto out = algorithm(*reduced);
  if (!out) {
    if (out.error().code != ErrorCode::kInfeasible) return out.error();
    auto plain = algorithm(p);
    if (plain) {
      plain->notes.emplace_back(
          "the co-placed groups fit no budget; planned op by op");
    }
    return plain;
  }
  Placement& pl = out->placement;
  if (pl.priority.empty()) {  // the reduced problem's topological order
    pl.priority.resize(reduced->num_ops());
    for (size_t i = 0; i < reduced->topo.size(); ++i) {
      pl.priority[reduced->topo[i]] = static_cast<uint32_t>(i);
    }
  }
  pl = Expand(p, g, pl);
  out->notes.insert(out->notes.begin(),
                    "reduced " + std::to_string(p.num_ops()) + " ops to " +
                        std::to_string(g.num_groups) + " groups");
  return out;
}

}  // namespace tessera::placer
