#ifndef TESSERA_SCHEDULER_MODEL_JOBS_H_
#define TESSERA_SCHEDULER_MODEL_JOBS_H_

// Jobs that ask by model: the estimator sizes them, and when one fits no
// single GPU's free capacity the placer splits it over the free slivers of
// one node's GPUs, admitted as a gang.

#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "scheduler/job.h"
#include "scheduler/topology.h"

// Declared only: the queue's headers do not pull in the graph (and Boost);
// the files that look into a model include graph/graph.h.
namespace tessera::graph {
struct Model;
}  // namespace tessera::graph

namespace tessera::scheduler {

// A GPU with less free compute than this is no sliver worth a part of a
// split model (SplitAcrossSlivers leaves it out).
inline constexpr int kMinSliverMilli = 100;

// A loaded model job: the graph (kept for splitting) and what one GPU would
// have to hold.
struct SizedModel {
  std::shared_ptr<const graph::Model> model;
  int64_t peak_bytes = 0;  // the estimator's need on one GPU
  bool training = false;
};

// Loads and sizes `request` on the pool's GPU kind `kind`. kBadInput naming
// the field: "model.path: ..." when the model does not load, or its inputs
// are unbound.
Result<SizedModel> SizeModel(const ModelRequest& request,
                             const std::string& kind);

// The resources a model job reserves on one GPU: the need x (1 + headroom)
// in MiB, and the whole GPU's compute (1000 milli).
Resources ModelDemand(const SizedModel& sized, double headroom);

// A gang for `sized` on one node of `pool`: the placer's plan (auto) over
// the free memory and compute of the node's GPUs (those with at least
// kMinSliverMilli free), each GPU the plan uses reserving the plan's peak x
// (1 + headroom) and the free compute it assumed. The node whose plan has
// the shortest step wins. With `multi_node` (a launcher that starts one
// part per node) and no node able to hold it alone, the slivers of the
// kMaxGangNodes nodes with the most free memory together, linked by the
// network (an Allocation with spans_nodes). nullopt when nothing holds it.
struct Gang {
  Allocation allocation;
  nlohmann::json plan;  // plan.json
};
// A multi-node gang spans at most this many nodes: the placer's time grows
// with the GPUs it considers, and a split over more nodes than this is
// dominated by the network.
inline constexpr size_t kMaxGangNodes = 4;
std::optional<Gang> SplitAcrossSlivers(const ClusterState& state,
                                       std::string_view pool,
                                       const SizedModel& sized, double headroom,
                                       bool multi_node = false);

}  // namespace tessera::scheduler

#endif  // TESSERA_SCHEDULER_MODEL_JOBS_H_
