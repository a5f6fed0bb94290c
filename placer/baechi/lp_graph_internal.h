#ifndef TESSERA_PLACER_BAECHI_LP_GRAPH_INTERNAL_H_
#define TESSERA_PLACER_BAECHI_LP_GRAPH_INTERNAL_H_

// Internal: the graph m-SCT's favourite-child LP is written over (m_sct.cc),
// of a problem's ops or of the groups of a Grouping, and the bytes on each
// edge of a problem.

#include <cstdint>
#include <vector>

#include "placer/baechi/list_scheduler_internal.h"
#include "placer/baechi/reductions_internal.h"
#include "placer/core/cluster.h"
#include "placer/core/problem.h"

namespace tessera::placer {

// The mean costs (ComputeMeanCosts) of its nodes (ops, or groups of ops),
// their distinct successors in ascending order as CSR, and per edge the
// bytes of activation tensors it carries.
struct LpGraph {
  MeanCosts mean;
  std::vector<uint32_t> succ_begin, succ;
  std::vector<int64_t> bytes;
  uint32_t size() const { return static_cast<uint32_t>(mean.seconds.size()); }
};

// Per edge of x (indexed like x.succ_ops): the bytes of activation tensors
// it carries.
std::vector<int64_t> SuccessorBytes(const Problem& x);

// The graph of x's own ops, given SuccessorBytes(x).
LpGraph LpGraphOfOps(const Problem& x, const Cluster& c,
                     std::vector<int64_t> succ_bytes);

// The graph of the groups of g, equal (to the bit) to
// LpGraphOfOps(Contract(x, g), ...) without building the contracted
// problem: group A precedes B when a tensor made in A is read in B, the
// edge carries the activation tensors among those, and a group's times are
// its ops' summed in op order.
LpGraph LpGraphOfGroups(const Problem& x, const Grouping& g, const Cluster& c);

}  // namespace tessera::placer

#endif  // TESSERA_PLACER_BAECHI_LP_GRAPH_INTERNAL_H_
