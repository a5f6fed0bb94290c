// ProblemBuilder: collects ops and tensors, then lays out the adjacency as
// CSR arrays and finds a topological order (FillTopologicalOrder).

#include <algorithm>
#include <queue>
#include <string>
#include <utility>

#include "placer/core/problem.h"

namespace tessera::placer {
namespace {

// Offsets + flattened values of a list of lists.
void Flatten(const std::vector<std::vector<uint32_t>>& lists,
             std::vector<uint32_t>& begin, std::vector<uint32_t>& values) {
  begin.assign(lists.size() + 1, 0);
  size_t total = 0;
  for (const auto& l : lists) total += l.size();
  values.clear();
  values.reserve(total);
  for (size_t i = 0; i < lists.size(); ++i) {
    begin[i] = static_cast<uint32_t>(values.size());
    values.insert(values.end(), lists[i].begin(), lists[i].end());
  }
  begin[lists.size()] = static_cast<uint32_t>(values.size());
}

}  // namespace

ProblemBuilder::ProblemBuilder(int num_profiles,
                               std::vector<int> device_profile, bool training) {
  p_.num_profiles = num_profiles;
  p_.device_profile = std::move(device_profile);
  p_.training = training;
}

uint32_t ProblemBuilder::AddTensor(std::string name, int64_t bytes,
                                   TensorRole role, bool output) {
  ProblemTensor t;
  t.name = std::move(name);
  t.bytes = std::max<int64_t>(bytes, 0);
  t.role = role;
  t.output = output;
  p_.tensors.push_back(std::move(t));
  return static_cast<uint32_t>(p_.tensors.size() - 1);
}

OpId ProblemBuilder::AddOp(std::string name, std::string op_type,
                           std::span<const double> forward_s,
                           std::span<const double> backward_s,
                           std::span<const uint32_t> inputs,
                           std::span<const uint32_t> outputs,
                           int64_t workspace_bytes, int64_t extra_bytes) {
  const OpId id = static_cast<OpId>(p_.names.size());
  p_.names.push_back(std::move(name));
  p_.op_types.push_back(std::move(op_type));
  for (int i = 0; i < p_.num_profiles; ++i) {
    p_.forward_s.push_back(i < static_cast<int>(forward_s.size()) ? forward_s[i]
                                                                  : 0.0);
  }
  if (p_.training) {
    for (int i = 0; i < p_.num_profiles; ++i) {
      p_.backward_s.push_back(
          i < static_cast<int>(backward_s.size()) ? backward_s[i] : 0.0);
    }
  }
  p_.workspace_bytes.push_back(std::max<int64_t>(workspace_bytes, 0));
  p_.extra_bytes.push_back(std::max<int64_t>(extra_bytes, 0));
  ins_.emplace_back(inputs.begin(), inputs.end());
  outs_.emplace_back(outputs.begin(), outputs.end());
  return id;
}

Result<Problem> ProblemBuilder::Build() && {
  Problem& p = p_;
  const size_t n = p.names.size();
  const size_t nt = p.tensors.size();
  for (size_t op = 0; op < n; ++op) {
    for (uint32_t t : outs_[op]) {
      if (t >= nt) {
        return BadInput("op '" + p.names[op] + "' produces tensor #" +
                        std::to_string(t) + ", which does not exist");
      }
      if (p.tensors[t].producer != kNoOp) {
        return BadInput(
            "tensor '" + p.tensors[t].name + "' is produced twice (by '" +
            p.names[p.tensors[t].producer] + "' and '" + p.names[op] + "')");
      }
      p.tensors[t].producer = static_cast<OpId>(op);
    }
  }
  // Inputs: drop duplicates within an op, keep first-seen order.
  std::vector<std::vector<uint32_t>> uses(nt);
  for (size_t op = 0; op < n; ++op) {
    auto& in = ins_[op];
    std::vector<uint32_t> unique;
    unique.reserve(in.size());
    for (uint32_t t : in) {
      if (t >= nt) {
        return BadInput("op '" + p.names[op] + "' reads tensor #" +
                        std::to_string(t) + ", which does not exist");
      }
      if (std::find(unique.begin(), unique.end(), t) == unique.end()) {
        unique.push_back(t);
      }
    }
    in = std::move(unique);
    for (uint32_t t : in) uses[t].push_back(static_cast<uint32_t>(op));
  }
  // Distinct successors and predecessors through activation tensors and
  // Constant-produced weights alike (a consumer runs after its producer).
  std::vector<std::vector<uint32_t>> succ(n), pred(n);
  for (size_t op = 0; op < n; ++op) {
    for (uint32_t t : ins_[op]) {
      const OpId prod = p.tensors[t].producer;
      if (prod == kNoOp || prod == op) continue;
      pred[op].push_back(prod);
    }
    std::sort(pred[op].begin(), pred[op].end());
    pred[op].erase(std::unique(pred[op].begin(), pred[op].end()),
                   pred[op].end());
    for (uint32_t q : pred[op]) succ[q].push_back(static_cast<uint32_t>(op));
  }
  for (size_t op = 0; op < n; ++op) {
    for (uint32_t t : ins_[op]) {
      if (p.tensors[t].producer == op) {
        return BadInput("op '" + p.names[op] + "' reads its own output '" +
                        p.tensors[t].name + "'");
      }
    }
  }
  Flatten(ins_, p.in_begin, p.in_tensors);
  Flatten(outs_, p.out_begin, p.out_tensors);
  Flatten(uses, p.use_begin, p.use_ops);
  Flatten(succ, p.succ_begin, p.succ_ops);
  Flatten(pred, p.pred_begin, p.pred_ops);
  ins_.clear();
  outs_.clear();

  if (!FillTopologicalOrder(p)) {
    std::vector<bool> ordered(n, false);
    for (OpId op : p.topo) ordered[op] = true;
    for (size_t op = 0; op < n; ++op) {
      if (!ordered[op]) {
        return BadInput("the graph has a cycle through op '" + p.names[op] +
                        "'");
      }
    }
  }
  return std::move(p_);
}

bool FillTopologicalOrder(Problem& p) {
  const size_t n = p.num_ops();
  std::vector<uint32_t> indegree(n);
  std::priority_queue<uint32_t, std::vector<uint32_t>, std::greater<>> ready;
  for (size_t op = 0; op < n; ++op) {
    indegree[op] = p.pred_begin[op + 1] - p.pred_begin[op];
    if (indegree[op] == 0) ready.push(static_cast<uint32_t>(op));
  }
  p.topo.clear();
  p.topo.reserve(n);
  while (!ready.empty()) {
    const uint32_t op = ready.top();
    ready.pop();
    p.topo.push_back(op);
    for (uint32_t s : p.successors(op)) {
      if (--indegree[s] == 0) ready.push(s);
    }
  }
  return p.topo.size() == n;
}

}  // namespace tessera::placer
