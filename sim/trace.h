#ifndef TESSERA_SIM_TRACE_H_
#define TESSERA_SIM_TRACE_H_

// Cluster traces in the openb format (Alibaba's GPU-sharing trace,
// data/openb): a node list and a pod list as CSV files, read by
// the column names in their header. For the trace replay and the benches.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "scheduler/admission.h"
#include "scheduler/fragmentation.h"
#include "scheduler/job.h"
#include "scheduler/topology.h"

namespace tessera::sim {

// What a trace's nodes and pods become (scheduler/).
using scheduler::PlacementRequest;
using scheduler::Resources;
using scheduler::Topology;
using scheduler::Workload;

// openb_node_list_*.csv: sn,cpu_milli,memory_mib,gpu,model.
struct TraceNode {
  std::string name;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int gpus = 0;
  std::string model;  // GPU type; "" for a node without GPUs
};

// openb_pod_list_*.csv: name,cpu_milli,memory_mib,num_gpu,gpu_milli and
// optionally gpu_spec,qos,pod_phase,creation_time,deletion_time,
// scheduled_time (times in seconds; -1 when absent or empty).
struct TracePod {
  std::string name;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int num_gpu = 0;
  int gpu_milli = 0;                  // per GPU
  std::vector<std::string> gpu_spec;  // GPU models allowed ("" = any)
  std::string qos;
  double creation_time = -1, deletion_time = -1, scheduled_time = -1;
  bool wants_gpu() const { return num_gpu > 0; }
};

struct TraceOptions {
  // Refuse the whole file on a bad row instead of skipping it.
  bool strict = false;
};

template <typename Row>
struct TraceFile {
  std::vector<Row> rows;
  // One per skipped row: "FILE:LINE: column 'x': what is wrong".
  std::vector<std::string> skipped;
};

// kBadInput naming the file for a missing file or a missing column, and
// (strict) the line and column of the first bad row.
Result<TraceFile<TraceNode>> LoadTraceNodes(const std::string& path,
                                            const TraceOptions& options = {});
// The same for a file's text; `source` names it in messages.
Result<TraceFile<TraceNode>> ParseTraceNodes(std::string_view text,
                                             const std::string& source,
                                             const TraceOptions& options = {});
Result<TraceFile<TracePod>> ParseTracePods(std::string_view text,
                                           const std::string& source,
                                           const TraceOptions& options = {});
Result<TraceFile<TracePod>> LoadTracePods(const std::string& path,
                                          const TraceOptions& options = {});

// The nodes as a Topology with one pool, `pool`; every GPU has
// `gpu_memory_mib` (the trace gives no GPU memory; its pods ask none) and
// the node's model as its kind. Nodes without GPUs are left out unless
// `cpu_nodes`.
Topology TraceTopology(const std::vector<TraceNode>& nodes,
                       const std::string& pool, int64_t gpu_memory_mib,
                       bool cpu_nodes = false);

// A pod's request: `num_gpu` whole GPUs when num_gpu > 1 or gpu_milli is
// 1000, else gpu_milli of one GPU, or no GPU; CPU and memory as given.
Resources PodDemand(const TracePod& pod);
// PodDemand with the pod's gpu_spec as the GPU kinds it may use.
PlacementRequest PodRequest(const TracePod& pod);

// The typical tasks of a pod list (TypicalWorkload over every pod, CPU-only
// ones included, shaped by CPU, GPU count, milli per GPU and gpu_spec),
// with the CPU and memory its GPU pods ask per GPU milli.
Workload PodWorkload(const std::vector<TracePod>& pods, double coverage = 0.95);

}  // namespace tessera::sim

#endif  // TESSERA_SIM_TRACE_H_
