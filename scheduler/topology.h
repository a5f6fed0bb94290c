#ifndef TESSERA_SCHEDULER_TOPOLOGY_H_
#define TESSERA_SCHEDULER_TOPOLOGY_H_

// The cluster the queue owns and what is reserved on it at this moment.

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
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

// What keeps the fractions of a node's GPUs apart (`isolation:` in the
// serve config; docs/operations.md, "Isolation"): nothing, or an MPS
// control daemon (the local launcher's own, Slurm's gres/mps, the device
// plugin's MPS mode), under which a job's memory cap and thread share hold.
enum class Isolation : uint8_t { kNone, kMps };
std::string_view IsolationName(Isolation i);  // "none", "mps"
std::optional<Isolation> ParseIsolation(std::string_view text);

struct NodeInfo {
  std::string name;
  std::string pool;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  std::vector<int> gpus;  // indices into Topology::gpus
  bool drained = false;   // admits nothing new
  Isolation isolation = Isolation::kNone;
};

struct Topology {
  std::vector<NodeInfo> nodes;
  std::vector<GpuInfo> gpus;
  std::vector<std::string> pools;  // pools[0] is the default pool
  // Whether jobs may share a GPU nothing isolates (Isolation::kNone). The
  // service's config says false unless `share_unisolated: true`; the
  // simulators replay traces of shared GPUs and keep true.
  bool share_unisolated = true;
  // Whether two jobs may hold shares of `gpu` at once.
  bool Shareable(int gpu) const;
  int FindNode(std::string_view name) const;  // -1 if none
  int FindGpu(std::string_view id) const;     // -1 if none
  bool HasPool(std::string_view pool) const;
};

// What kind of GPU holder an allocation is, for scorers that group alike
// jobs (gpu-clustering): a fraction of one GPU, k whole GPUs (k = 1..8), or
// anything else (split gangs, more than 8 GPUs). CPU-only holders have none.
inline constexpr int kShareTag = 0;
inline constexpr int kOtherTag = 9;
inline constexpr int kTags = 10;
// The tag of `a`, or -1 when it holds no GPU.
int HolderTag(const Allocation& a);

// Reservations on a Topology. Invariants (CheckInvariants): on every GPU
// reserved memory <= capacity and reserved milli <= 1000, an exclusive
// job's GPUs hold nobody else; on every node reserved CPU and memory <=
// capacity.
//
// Copies are cheap (the topology is shared until a drain changes it), so
// the queue policies plan on copies. Not thread-safe; copies are
// independent.
class ClusterState {
 public:
  explicit ClusterState(Topology topology);

  const Topology& topology() const { return *topology_; }
  int64_t reserved_memory_mib(int gpu) const { return gpus_[gpu].memory_mib; }
  int reserved_milli(int gpu) const { return gpus_[gpu].milli; }
  int64_t free_memory_mib(int gpu) const;
  int free_milli(int gpu) const;
  bool exclusive(int gpu) const { return gpus_[gpu].exclusive; }
  // How many jobs hold a share of `gpu`.
  int holders_on(int gpu) const { return gpus_[gpu].holders; }
  int64_t free_cpu_milli(int node) const;
  int64_t free_memory_mib_on_node(int node) const;
  // Jobs holding `tag` (HolderTag) on `node`.
  int tag_count(int node, int tag) const { return nodes_[node].tags[tag]; }
  // Changes whenever anything on `node` changes (a reservation, a release,
  // a drain), and no two node states anywhere, in any copy, share a stamp:
  // a score computed for a node stays valid while its stamp is the same.
  uint64_t node_stamp(int node) const { return nodes_[node].stamp; }
  // The same for the whole cluster: changes whenever any node's stamp does.
  uint64_t stamp() const { return stamp_; }

  // The jobs holding a share of `gpu`, by id (O(holders)).
  std::vector<JobId> JobsOn(int gpu) const;
  // JobsOn for every GPU at once (O(holders + GPUs)).
  std::vector<std::vector<JobId>> JobsByGpu() const;

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
    int holders = 0;
    int64_t memory_mib = 0;
    bool exclusive = false;
    bool operator==(const GpuUse&) const = default;
  };
  struct NodeUse {
    int64_t cpu_milli = 0;
    int64_t memory_mib = 0;
    std::array<int, kTags> tags{};
    uint64_t stamp = 0;
  };
  void Touch(int node);
  void TouchAll(const Allocation& a);  // every node `a` holds something on
  std::vector<std::pair<JobId, Allocation>>::const_iterator Find(
      JobId job) const;

  std::shared_ptr<Topology> topology_;  // copied on write (SetDrained)
  std::vector<GpuUse> gpus_;
  std::vector<NodeUse> nodes_;
  std::vector<std::pair<JobId, Allocation>> holders_;  // sorted by id
  uint64_t stamp_ = 0;
};

}  // namespace tessera::scheduler

#endif  // TESSERA_SCHEDULER_TOPOLOGY_H_
