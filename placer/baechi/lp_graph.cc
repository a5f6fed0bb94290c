// The LP graph of m-SCT's favourites (lp_graph_internal.h).

#include "placer/baechi/lp_graph_internal.h"

#include <algorithm>
#include <numeric>
#include <utility>

namespace tessera::placer {

std::vector<int64_t> SuccessorBytes(const Problem& x) {
  std::vector<int64_t> bytes(x.succ_ops.size(), 0);
  std::vector<int64_t> bytes_to(x.num_ops(), -1);
  std::vector<OpId> touched;
  for (OpId u = 0; u < x.num_ops(); ++u) {
    for (uint32_t t : x.outputs(u)) {
      const ProblemTensor& tensor = x.tensors[t];
      if (tensor.role != TensorRole::kActivation) continue;
      for (uint32_t v : x.consumers(t)) {
        if (bytes_to[v] < 0) {
          bytes_to[v] = 0;
          touched.push_back(v);
        }
        bytes_to[v] += tensor.bytes;
      }
    }
    for (uint32_t e = x.succ_begin[u]; e < x.succ_begin[u + 1]; ++e) {
      bytes[e] = std::max<int64_t>(bytes_to[x.succ_ops[e]], 0);
    }
    for (OpId v : touched) bytes_to[v] = -1;
    touched.clear();
  }
  return bytes;
}

LpGraph LpGraphOfOps(const Problem& x, const Cluster& c,
                     std::vector<int64_t> succ_bytes) {
  LpGraph lg;
  lg.mean = ComputeMeanCosts(x, c);
  lg.succ_begin = x.succ_begin;
  lg.succ = x.succ_ops;
  lg.bytes = std::move(succ_bytes);
  return lg;
}

LpGraph LpGraphOfGroups(const Problem& x, const Grouping& g, const Cluster& c) {
  const uint32_t k = g.num_groups;
  // The groups' times as Contract sums them, in a problem of k nodes, so
  // that ComputeMeanCosts does the same arithmetic as on the contracted
  // problem.
  Problem sums;
  sums.training = x.training;
  sums.device_profile = x.device_profile;
  sums.names.resize(k);
  SumGroupTimes(x, g, sums);
  LpGraph lg;
  lg.mean = ComputeMeanCosts(sums, c);
  // (from, to, bytes) per tensor and consumer group outside its producer's.
  struct Use {
    uint32_t from, to;
    int64_t bytes;
  };
  std::vector<Use> uses;
  std::vector<uint32_t> stamp(k, UINT32_MAX);
  for (uint32_t t = 0; t < x.num_tensors(); ++t) {
    const ProblemTensor& tensor = x.tensors[t];
    if (tensor.producer == kNoOp) continue;
    const uint32_t from = g.group_of[tensor.producer];
    const int64_t bytes =
        tensor.role == TensorRole::kActivation ? tensor.bytes : 0;
    for (uint32_t v : x.consumers(t)) {
      const uint32_t to = g.group_of[v];
      if (to == from || stamp[to] == t) continue;
      stamp[to] = t;
      uses.push_back({from, to, bytes});
    }
  }
  std::sort(uses.begin(), uses.end(), [](const Use& a, const Use& b) {
    return a.from != b.from ? a.from < b.from : a.to < b.to;
  });
  lg.succ_begin.assign(k + 1, 0);
  for (size_t i = 0; i < uses.size(); ++i) {
    if (i > 0 && uses[i].from == uses[i - 1].from &&
        uses[i].to == uses[i - 1].to) {
      lg.bytes.back() += uses[i].bytes;
      continue;
    }
    lg.succ.push_back(uses[i].to);
    lg.bytes.push_back(uses[i].bytes);
    ++lg.succ_begin[uses[i].from + 1];
  }
  std::partial_sum(lg.succ_begin.begin(), lg.succ_begin.end(),
                   lg.succ_begin.begin());
  return lg;
}

}  // namespace tessera::placer
