#ifndef TESSERA_SCHEDULER_TOPOLOGY_H_
#define TESSERA_SCHEDULER_TOPOLOGY_H_

// The cluster the queue owns and what is reserved on it at this moment.

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "common/result.h"
#include "scheduler/job.h"

namespace tessera::scheduler {

struct GpuInfo {
  std::string id;    // "node0/gpu1"
  int node = -1;     // index into Topology::nodes
  int index = 0;     // its index on the node (CUDA_VISIBLE_DEVICES)
  std::string kind;  // catalog name, e.g. "a100-80gb"
  int64_t memory_mib = 0;
};

struct NodeInfo {
  std::string name;
  std::string pool;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  std::vector<int> gpus;  // indices into Topology::gpus
  bool drained = false;   // admits nothing new
};

struct Topology {
  std::vector<NodeInfo> nodes;
  std::vector<GpuInfo> gpus;
  std::vector<std::string> pools;             // pools[0] is the default pool
  int FindNode(std::string_view name) const;  // -1 if none
  int FindGpu(std::string_view id) const;     // -1 if none
  bool HasPool(std::string_view pool) const;
};

// Reservations on a Topology. Invariants (CheckInvariants): on every GPU
// reserved memory <= capacity and reserved milli <= 1000, an exclusive
// job's GPUs hold nobody else; on every node reserved CPU and memory <=
// capacity.
class ClusterState {
 public:
  explicit ClusterState(Topology topology);

  const Topology& topology() const { return topology_; }
  int64_t reserved_memory_mib(int gpu) const { return gpus_[gpu].memory_mib; }
  int reserved_milli(int gpu) const { return gpus_[gpu].milli; }
  int64_t free_memory_mib(int gpu) const;
  int free_milli(int gpu) const;
  bool exclusive(int gpu) const { return gpus_[gpu].exclusive; }
  const std::set<JobId>& jobs_on(int gpu) const { return gpus_[gpu].jobs; }
  int64_t free_cpu_milli(int node) const;
  int64_t free_memory_mib_on_node(int node) const;

  // Whether `a` fits what is free now.
  bool Fits(const Allocation& a) const;
  // Reserves `a` for `job`; kInternal (and nothing changes) if it does not
  // fit: callers check Fits first.
  Status Reserve(JobId job, const Allocation& a);
  // Releases what `job` holds; a no-op for a job holding nothing.
  void Release(JobId job);
  const Allocation* AllocationOf(JobId job) const;
  // Every job holding a reservation.
  std::vector<JobId> Holders() const;

  void SetDrained(int node, bool drained);

  // Empty when the invariants hold, else what is violated.
  std::string CheckInvariants() const;

 private:
  struct GpuUse {
    int milli = 0;
    int64_t memory_mib = 0;
    bool exclusive = false;
    std::set<JobId> jobs;
  };
  struct NodeUse {
    int64_t cpu_milli = 0;
    int64_t memory_mib = 0;
  };
  Topology topology_;
  std::vector<GpuUse> gpus_;
  std::vector<NodeUse> nodes_;
  std::vector<std::pair<JobId, Allocation>> holders_;  // sorted by id
};

}  // namespace tessera::scheduler

#endif  // TESSERA_SCHEDULER_TOPOLOGY_H_
