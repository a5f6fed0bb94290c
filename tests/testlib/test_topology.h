#ifndef TESSERA_TESTS_TESTLIB_TEST_TOPOLOGY_H_
#define TESSERA_TESTS_TESTLIB_TEST_TOPOLOGY_H_

// Small clusters for the scheduler's tests.

#include <string>
#include <vector>

#include "scheduler/topology.h"

namespace tessera::scheduler::testing {

inline constexpr int64_t kGiB = 1024;  // in MiB

// One node per entry, each with GPUs of the given memory (GiB) of kind
// "test"; node n goes to `node_pools[n]` (default "default"); the cluster's
// pools are `pools`. 16 CPUs and 64 GiB per node.
inline Topology MakeTopology(const std::vector<std::vector<int>>& nodes,
                             const std::vector<std::string>& node_pools = {},
                             std::vector<std::string> pools = {"default"}) {
  Topology t;
  t.pools = std::move(pools);
  for (size_t n = 0; n < nodes.size(); ++n) {
    NodeInfo node;
    node.name = "node" + std::to_string(n);
    node.pool = n < node_pools.size() ? node_pools[n] : "default";
    node.cpu_milli = 16000;
    node.memory_mib = 64 * kGiB;
    for (size_t i = 0; i < nodes[n].size(); ++i) {
      node.gpus.push_back(static_cast<int>(t.gpus.size()));
      t.gpus.push_back({node.name + "/gpu" + std::to_string(i),
                        static_cast<int>(n), static_cast<int>(i), "test",
                        nodes[n][i] * kGiB});
    }
    t.nodes.push_back(node);
  }
  return t;
}

}  // namespace tessera::scheduler::testing

#endif  // TESSERA_TESTS_TESTLIB_TEST_TOPOLOGY_H_
