#ifndef TESSERA_PLACER_CORE_CLUSTER_H_
#define TESSERA_PLACER_CORE_CLUSTER_H_

// The capacity a placement may use: GPUs (a catalog kind, the memory and the
// compute share left on each) and the links between them. Read from a
// cluster spec (YAML, documented in docs/cluster.md and
// models/clusters/example.yaml) or built in: one node with four A100-80GB
// over NVLink. The queue passes the same structure later as "what is free
// now".

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"
#include "estimator/device_catalog.h"
#include "estimator/memory_model.h"

namespace tessera::placer {

enum class LinkKind : uint8_t { kLocal, kNvlink, kPcie, kNetwork, kCustom };
// "local", "nvlink", "pcie", "network", "custom".
std::string_view LinkKindName(LinkKind kind);

// One direction of a link between two devices. Transfers over it cost
// latency + bytes / bandwidth.
struct Link {
  double bandwidth = 0.0;  // bytes/s, one direction; +inf for kLocal
  double latency = 0.0;    // seconds; 0 for kLocal
  LinkKind kind = LinkKind::kLocal;
};

struct ClusterDevice {
  std::string id;    // "node0/gpu1": node name, "/gpu", index within the node
  std::string node;  // "node0"
  estimator::DeviceSpec spec;  // the catalog entry (copied)
  int64_t memory_total = 0;    // the GPU's memory (spec.memory_bytes)
  // What placement may use. With `memory_free` in the spec, that amount as
  // given (whoever computed the residual already kept headroom back);
  // otherwise memory_total minus WholeGpuHeadroom.
  int64_t memory_usable = 0;
  bool memory_given = false;   // memory_free appeared in the spec
  double compute_share = 1.0;  // in (0, 1]
};

struct Cluster {
  std::vector<ClusterDevice> devices;
  // devices.size()^2 entries, row-major: links[from * n + to]. The diagonal
  // is kLocal.
  std::vector<Link> links;
  std::string source;  // the spec's path, or "built-in default"

  size_t size() const { return devices.size(); }
  const Link& link(size_t from, size_t to) const {
    return links[from * devices.size() + to];
  }
};

// The (latency, bandwidth) pairs of the links between two different
// devices, sorted, without duplicates.
std::vector<std::pair<double, double>> DistinctLinks(const Cluster& c);

// The headroom a whole GPU keeps back: the CUDA context plus
// `fragmentation` x its memory (estimator::kCudaContextBytes,
// estimator::kDefaultFragmentation).
int64_t WholeGpuHeadroom(int64_t memory_total, double fragmentation);

// Defaults for links the spec leaves out.
inline constexpr double kNvlinkLatencySeconds = 2e-6;
inline constexpr double kPcieLatencySeconds = 10e-6;
// 100 Gb/s Ethernet/InfiniBand, the usual floor of a GPU cluster.
inline constexpr double kDefaultNetworkBandwidth = 12.5e9;
inline constexpr double kDefaultNetworkLatencySeconds = 10e-6;

struct ClusterOptions {
  double fragmentation = estimator::kDefaultFragmentation;
};

// Parses a cluster spec. `source` names it in error messages (a path).
// Errors are kBadInput and name the source, the line and the field: an
// unknown GPU kind (listing the known ones), compute_share outside (0, 1],
// memory_free larger than the GPU has, an unknown link endpoint, an unknown
// key, a malformed size/bandwidth/latency.
Result<Cluster> ParseCluster(std::string_view yaml_text,
                             std::string_view source,
                             const estimator::DeviceCatalog& catalog,
                             const ClusterOptions& options);
// Reads and parses the spec at `path`.
Result<Cluster> LoadCluster(const std::string& path,
                            const estimator::DeviceCatalog& catalog,
                            const ClusterOptions& options);
// One node, four a100-80gb, NVLink between them.
Cluster DefaultCluster(const estimator::DeviceCatalog& catalog,
                       const ClusterOptions& options);

}  // namespace tessera::placer

#endif  // TESSERA_PLACER_CORE_CLUSTER_H_
