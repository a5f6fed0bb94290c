#include "cli/model/inspect.h"

#include <algorithm>
#include <fstream>
#include <iostream>

#include "cli/model_loading.h"
#include "cli/output.h"
#include "common/strings.h"
#include "graph/export.h"
#include "graph/graph.h"

namespace tessera::cli {
namespace {

using graph::Model;
using graph::OpGraph;

std::string OpsetText(const Model& m) {
  std::string out;
  for (const auto& op : m.opsets) {
    if (!out.empty()) out += ", ";
    out += (op.domain.empty() ? "ai.onnx" : op.domain) + " " +
           std::to_string(op.version);
  }
  return out.empty() ? "none" : out;
}

std::string ValuesTable(const OpGraph& g,
                        std::span<const graph::TensorId> ids) {
  TextTable table({"name", "dtype", "shape"});
  for (const graph::TensorId t : ids) {
    const auto v = g.tensor(t);
    table.AddRow({std::string(v.name),
                  std::string(graph::DataTypeName(v.dtype)),
                  graph::FormatShape(g, t)});
  }
  return table.Render();
}

std::string HistogramTable(const OpGraph& g) {
  const auto hist = graph::OpHistogram(g);
  const int64_t top = hist.empty() ? 1 : hist.front().second;
  constexpr int kBarWidth = 30;
  TextTable table({"op type", "count", ""}, {false, true, false});
  for (const auto& [op, count] : hist) {
    const auto n =
        static_cast<size_t>(std::max<int64_t>(1, count * kBarWidth / top));
    std::string bar;
    for (size_t i = 0; i < n; ++i) bar += "\u2588";
    table.AddRow({op, WithThousands(count), bar});
  }
  return table.Render();
}

void PrintHuman(const Model& m) {
  const OpGraph& g = *m.graph;
  std::cout << m.path << "\n";
  TextTable facts({"", ""});
  facts.AddRow({"graph", m.graph_name.empty() ? "(unnamed)" : m.graph_name});
  facts.AddRow({"producer", m.producer_name.empty()
                                ? "(unknown)"
                                : m.producer_name + " " + m.producer_version});
  facts.AddRow({"format", "IR " + std::to_string(m.ir_version) + ", opsets " +
                              OpsetText(m)});
  facts.AddRow(
      {"nodes",
       WithThousands(static_cast<int64_t>(g.num_nodes())) + " (" +
           WithThousands(static_cast<int64_t>(g.num_nodes_with_subgraphs())) +
           " with subgraphs)"});
  facts.AddRow({"edges", WithThousands(static_cast<int64_t>(g.num_edges()))});
  facts.AddRow({"weights", WithThousands(m.weights.tensors) + " tensors, " +
                               WithThousands(m.weights.elements) +
                               " elements, " + HumanBytes(m.weights.bytes)});
  facts.AddRow({"shapes", m.unknown_shapes.empty()
                              ? "all known"
                              : WithThousands(static_cast<int64_t>(
                                    m.unknown_shapes.size())) +
                                    " tensors with unknown shape"});
  // The header row of `facts` is empty; skip it.
  const std::string rendered = facts.Render();
  std::cout << rendered.substr(rendered.find('\n') + 1) << "\n";
  std::cout << "inputs\n" << ValuesTable(g, g.inputs()) << "\n";
  std::cout << "outputs\n" << ValuesTable(g, g.outputs()) << "\n";
  std::cout << "operators\n" << HistogramTable(g);
  if (!m.unknown_shapes.empty()) {
    constexpr size_t kShown = 10;
    std::cout << "\nunknown shapes (bind inputs with --input or --batch)\n";
    TextTable table({"tensor", "graph", "consumed by"});
    for (size_t i = 0; i < m.unknown_shapes.size() && i < kShown; ++i) {
      const auto& u = m.unknown_shapes[i];
      std::string consumers;
      for (const auto& c : u.consumers) {
        consumers += (consumers.empty() ? "" : "; ") + c;
      }
      table.AddRow({u.tensor, u.graph.empty() ? "main" : u.graph,
                    consumers.empty() ? "(graph output)" : consumers});
    }
    std::cout << table.Render();
    if (m.unknown_shapes.size() > kShown) {
      std::cout << "  ... and " << m.unknown_shapes.size() - kShown
                << " more (--json lists all)\n";
    }
  }
}

}  // namespace

int RunInspect(const InspectArgs& args) {
  auto model =
      LoadModelForCommand(args.model, args.inputs, args.batch, {}, "loading");
  if (!model) return ReportError(model.error());

  if (!args.dot.empty()) {
    if (args.dot == "-") {
      graph::WriteDot(*model->graph, std::cout);
      return 0;
    }
    std::ofstream out(args.dot);
    if (!out)
      return ReportError(BadInput("--dot " + args.dot + ": cannot write"));
    graph::WriteDot(*model->graph, out);
    std::cerr << "tessera: wrote " << args.dot << "\n";
  }
  if (args.json) {
    std::cout << graph::ModelSummaryJson(*model) << "\n";
  } else {
    PrintHuman(*model);
  }
  return 0;
}

}  // namespace tessera::cli
