#include "graph/export.h"

#include <nlohmann/json.hpp>

namespace tessera::graph {
namespace {

using Json = nlohmann::ordered_json;

Json ShapeJson(const OpGraph& g, const TensorView& v) {
  if (!v.dims) return nullptr;
  Json dims = Json::array();
  for (const int64_t d : *v.dims) {
    if (IsKnownDim(d)) {
      dims.push_back(d);
    } else if (const std::string_view s = g.symbol(d); !s.empty()) {
      dims.push_back(std::string(s));
    } else {
      dims.push_back(nullptr);
    }
  }
  return dims;
}

Json ValuesJson(const OpGraph& g, std::span<const TensorId> ids) {
  Json out = Json::array();
  for (const TensorId t : ids) {
    const TensorView v = g.tensor(t);
    out.push_back({{"name", std::string(v.name)},
                   {"dtype", std::string(DataTypeName(v.dtype))},
                   {"shape", ShapeJson(g, v)}});
  }
  return out;
}

std::string DotEscape(std::string_view s) {
  std::string out;
  for (const char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

}  // namespace

std::string ModelSummaryJson(const Model& model) {
  const OpGraph& g = *model.graph;
  Json histogram = Json::object();
  for (const auto& [op, count] : OpHistogram(g)) histogram[op] = count;
  Json opsets = Json::object();
  for (const auto& op : model.opsets) {
    opsets[op.domain.empty() ? "ai.onnx" : op.domain] = op.version;
  }
  Json unknown = Json::array();
  for (const UnknownShape& u : model.unknown_shapes) {
    unknown.push_back(
        {{"tensor", u.tensor}, {"graph", u.graph}, {"consumers", u.consumers}});
  }
  Json j = {
      {"nodes", g.num_nodes()},
      {"nodes_with_subgraphs", g.num_nodes_with_subgraphs()},
      {"edges", g.num_edges()},
      {"op_histogram", histogram},
      {"weights",
       {{"tensors", model.weights.tensors},
        {"elements", model.weights.elements},
        {"bytes", model.weights.bytes}}},
      {"inputs", ValuesJson(g, g.inputs())},
      {"outputs", ValuesJson(g, g.outputs())},
      {"unknown_shapes", model.unknown_shapes.size()},
      {"unknown_shape_tensors", unknown},
      {"model",
       {{"path", model.path},
        {"graph_name", model.graph_name},
        {"producer", model.producer_name},
        {"producer_version", model.producer_version},
        {"ir_version", model.ir_version},
        {"opsets", opsets}}},
      {"warnings", model.warnings},
  };
  // Names come from the file: replace invalid UTF-8 rather than throw.
  return j.dump(2, ' ', false, Json::error_handler_t::replace);
}

void WriteDot(const OpGraph& g, std::ostream& out) {
  out << "digraph \"" << DotEscape(g.name()) << "\" {\n"
      << "  rankdir=TB;\n  node [shape=box, fontname=\"Helvetica\"];\n";
  for (const TensorId t : g.inputs()) {
    out << "  \"in:" << DotEscape(g.tensor(t).name)
        << "\" [shape=ellipse, label=\"" << DotEscape(g.tensor(t).name) << "\\n"
        << FormatShape(g, t) << "\"];\n";
  }
  for (NodeId n = 0; n < g.num_nodes(); ++n) {
    const NodeView v = g.node(n);
    out << "  n" << n << " [label=\"" << DotEscape(v.op_type) << "\\n"
        << DotEscape(v.name) << "\"];\n";
    for (const TensorId t : v.inputs) {
      if (t != kNoTensor && g.tensor(t).kind == TensorKind::kInput) {
        out << "  \"in:" << DotEscape(g.tensor(t).name) << "\" -> n" << n
            << ";\n";
      }
    }
  }
  const Dag& dag = g.dag();
  for (auto [it, end] = boost::edges(dag); it != end; ++it) {
    const TensorId t = dag[*it].tensor;
    out << "  n" << boost::source(*it, dag) << " -> n"
        << boost::target(*it, dag) << " [label=\"" << FormatShape(g, t)
        << "\"];\n";
  }
  for (const TensorId t : g.outputs()) {
    const TensorView v = g.tensor(t);
    out << "  \"out:" << DotEscape(v.name) << "\" [shape=ellipse, label=\""
        << DotEscape(v.name) << "\\n"
        << FormatShape(g, t) << "\"];\n";
    if (v.producer != kNoNode) {
      out << "  n" << v.producer << " -> \"out:" << DotEscape(v.name)
          << "\";\n";
    }
  }
  out << "}\n";
}

}  // namespace tessera::graph
