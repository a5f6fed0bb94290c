// Operators of a known domain that ONNX has no schema for (a typo, a newer
// operator, a corrupted file). ONNX 1.12's shape inference with data
// propagation crashes on them, so they are hidden in a private domain while
// it runs; costing later treats them as unknown operators.
#include <map>

#include <onnx/defs/schema.h>

#include "graph/onnx_internal.h"

namespace tessera::graph::internal {
namespace {

// A domain no schema registry knows: inference skips its nodes.
constexpr const char* kHiddenDomain = "tessera.unknown_operator";

using Versions = std::map<std::string, int>;

Versions OpsetVersions(const onnx::ModelProto& model) {
  Versions v;
  for (const auto& op : model.opset_import()) {
    v[op.domain() == "ai.onnx" ? "" : op.domain()] =
        static_cast<int>(op.version());
  }
  return v;
}

void Collect(onnx::GraphProto* g, const Versions& versions,
             std::vector<std::pair<onnx::NodeProto*, std::string>>* out) {
  const auto& known = onnx::OpSchemaRegistry::DomainToVersionRange::Instance();
  for (auto& node : *g->mutable_node()) {
    const std::string domain = node.domain() == "ai.onnx" ? "" : node.domain();
    auto v = versions.find(domain);
    if (known.Map().contains(domain) && v != versions.end() &&
        onnx::OpSchemaRegistry::Schema(node.op_type(), v->second, domain) ==
            nullptr) {
      out->emplace_back(&node, node.domain());
    }
    for (auto& a : *node.mutable_attribute()) {
      if (a.has_g()) Collect(a.mutable_g(), versions, out);
      for (auto& sub : *a.mutable_graphs()) Collect(&sub, versions, out);
    }
  }
}

}  // namespace

UnknownOperators::UnknownOperators(onnx::ModelProto* model) {
  Collect(model->mutable_graph(), OpsetVersions(*model), &hidden_);
  for (auto& [node, domain] : hidden_) node->set_domain(kHiddenDomain);
}

UnknownOperators::~UnknownOperators() {
  for (auto& [node, domain] : hidden_) node->set_domain(domain);
}

std::vector<std::string> DescribeUnknownOperators(onnx::ModelProto* model) {
  std::vector<std::string> out;
  std::vector<std::pair<onnx::NodeProto*, std::string>> found;
  Collect(model->mutable_graph(), OpsetVersions(*model), &found);
  std::map<std::string, int> per_op;
  for (const auto& [node, domain] : found) {
    ++per_op[(domain.empty() ? "ai.onnx" : domain) + ":" + node->op_type()];
  }
  for (const auto& [op, count] : per_op) {
    out.push_back("unknown operator " + op + " (" + std::to_string(count) +
                  " nodes): no schema at the model's opset, so its outputs' "
                  "shapes cannot be inferred");
  }
  return out;
}

}  // namespace tessera::graph::internal
