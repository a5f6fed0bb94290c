// UniqueNodeNames: the names by which plans and splits refer to nodes.
#include <string>
#include <unordered_set>

#include "graph/graph.h"

namespace tessera::graph {

std::vector<std::string> UniqueNodeNames(const OpGraph& g) {
  std::vector<std::string> names(g.num_nodes());
  std::unordered_set<std::string> taken;
  for (NodeId n = 0; n < g.num_nodes(); ++n) {
    if (!g.node(n).name.empty()) taken.insert(std::string(g.node(n).name));
  }
  std::unordered_set<std::string> used;
  for (NodeId n = 0; n < g.num_nodes(); ++n) {
    const NodeView v = g.node(n);
    std::string base = v.name.empty()
                           ? std::string(v.op_type) + "_" + std::to_string(n)
                           : std::string(v.name);
    std::string name = base;
    // An unnamed node's generated name must not clash with a real one.
    const bool generated = v.name.empty();
    for (int k = 1; used.contains(name) || (generated && taken.contains(name));
         ++k) {
      name = base + "_" + std::to_string(k);
    }
    used.insert(name);
    names[n] = std::move(name);
  }
  return names;
}

}  // namespace tessera::graph
