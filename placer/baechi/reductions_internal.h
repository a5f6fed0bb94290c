#ifndef TESSERA_PLACER_BAECHI_REDUCTIONS_INTERNAL_H_
#define TESSERA_PLACER_BAECHI_REDUCTIONS_INTERNAL_H_

// Internal: graph reductions. A Grouping maps each op to a group; the
// groups of every Grouping these functions return form a DAG (contracting
// them creates no cycle), which tests/placer checks on random graphs.

#include <cstdint>
#include <vector>

#include "common/result.h"
#include "placer/core/problem.h"
#include "placer/core/simulator.h"

namespace tessera::placer {

struct Grouping {
  std::vector<uint32_t> group_of;  // per op
  uint32_t num_groups = 0;
};

// Every op its own group.
Grouping IdentityGrouping(const Problem& p);
// Baechi's co-placement: an op whose only successor is v joins v's group
// (repeatedly, so chains collapse).
Grouping CoPlace(const Problem& p, const Grouping& start);
// Baechi's fusion of co-location groups: ops that read the same weight
// tensor (tied embeddings, a Constant and its consumers) join one group
// when that creates no cycle.
Grouping FuseSharedWeights(const Problem& p, const Grouping& start);
// Merges groups until at most `max_groups` remain, never creating a cycle
// (contiguous runs of a topological order of the groups, balanced by
// work).
Grouping Coarsen(const Problem& p, const Grouping& start, uint32_t max_groups);

// The problem whose ops are the groups: times summed per profile, tensors
// between groups kept (consumers deduplicated), tensors inside a group
// counted in the group's extra_bytes, workspace the largest member's, weight
// tensors kept with their consuming groups. Op names are "group<k>".
Result<Problem> Contract(const Problem& p, const Grouping& g);
// The times of the groups as Contract sums them (each group's ops' times
// per profile, in op order): q.forward_s and, in training, q.backward_s,
// with q.num_profiles = p.num_profiles.
void SumGroupTimes(const Problem& p, const Grouping& g, Problem& q);
// The op-level placement of a group-level one: every op on its group's
// device; priority by (group priority, topological position).
Placement Expand(const Problem& p, const Grouping& g,
                 const Placement& group_placement);

}  // namespace tessera::placer

#endif  // TESSERA_PLACER_BAECHI_REDUCTIONS_INTERNAL_H_
