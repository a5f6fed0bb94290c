// Read-only summaries of an OpGraph for people and scripts.
#include <algorithm>
#include <map>

#include "graph/graph.h"

namespace tessera::graph {

std::vector<std::pair<std::string, int64_t>> OpHistogram(const OpGraph& g) {
  std::map<std::string, int64_t> counts;
  for (NodeId n = 0; n < g.num_nodes(); ++n) {
    const NodeView v = g.node(n);
    std::string key(v.op_type);
    if (!v.domain.empty() && v.domain != "ai.onnx") {
      key = std::string(v.domain) + ":" + key;
    }
    ++counts[key];
  }
  std::vector<std::pair<std::string, int64_t>> out(counts.begin(),
                                                   counts.end());
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.second > b.second;
  });
  return out;
}

std::string DescribeNode(const OpGraph& g, NodeId n) {
  const NodeView v = g.node(n);
  const std::string op = " (" + std::string(v.op_type) + ")";
  if (v.name.empty()) return "#" + std::to_string(n) + op;
  return "'" + std::string(v.name) + "'" + op;
}

std::string FormatShape(const OpGraph& g, TensorId t) {
  const TensorView v = g.tensor(t);
  if (!v.dims) return "?";
  if (v.dims->empty()) return "scalar";
  std::string out;
  for (const int64_t d : *v.dims) {
    if (!out.empty()) out += "x";
    if (IsKnownDim(d)) {
      out += std::to_string(d);
    } else {
      const std::string_view s = g.symbol(d);
      out += s.empty() ? "?" : std::string(s);
    }
  }
  return out;
}

}  // namespace tessera::graph
