// Property test: random DAGs written to ONNX with their nodes shuffled all
// load, keep every node, and come back in a valid topological order.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "tests/testlib/onnx_model_builder.h"

namespace tessera::graph {
namespace {

using testlib::Dim;
using testlib::OnnxModelBuilder;

constexpr int kGraphs = 200;
constexpr int kMaxNodes = 40;

// A random DAG over [2,4] float tensors: node i reads one or two of the
// graph input, a weight and the outputs of nodes before it (Relu or Add).
// Nodes are then written in a random order.
OnnxModelBuilder RandomDag(std::mt19937& rng, int num_nodes) {
  OnnxModelBuilder m("random");
  m.AddInput("x", testlib::kFloat, std::vector<Dim>{2, 4});
  m.AddInitializer("w", {2, 4});
  std::vector<std::string> available = {"x", "w"};
  for (int i = 0; i < num_nodes; ++i) {
    std::uniform_int_distribution<size_t> pick(0, available.size() - 1);
    const std::string out = "t" + std::to_string(i);
    const std::string name = "n" + std::to_string(i);
    if (rng() % 2 == 0) {
      m.AddNode("Relu", {available[pick(rng)]}, {out}, name);
    } else {
      m.AddNode("Add", {available[pick(rng)], available[pick(rng)]}, {out},
                name);
    }
    available.push_back(out);
  }
  m.AddOutput("t" + std::to_string(num_nodes - 1));
  auto* nodes = m.proto().mutable_node();
  std::shuffle(nodes->pointer_begin(), nodes->pointer_end(), rng);
  return m;
}

TEST(LoadModelProperty, RandomShuffledDagsLoadInTopologicalOrder) {
  testlib::TempDir dir;
  const std::string path = dir.File("random.onnx");
  std::mt19937 rng(20240601);
  std::uniform_int_distribution<int> size(1, kMaxNodes);
  for (int graph = 0; graph < kGraphs; ++graph) {
    const int num_nodes = size(rng);
    const OnnxModelBuilder m = RandomDag(rng, num_nodes);
    m.WriteTo(path);
    SCOPED_TRACE("graph " + std::to_string(graph));
    auto model = LoadModel(path, {});
    ASSERT_TRUE(model) << model.error().message;
    const OpGraph& g = *model->graph;
    ASSERT_EQ(g.num_nodes(), static_cast<size_t>(num_nodes));
    const auto order = g.topological_order();
    ASSERT_EQ(order.size(), g.num_nodes());
    std::vector<size_t> position(g.num_nodes(), SIZE_MAX);
    for (size_t i = 0; i < order.size(); ++i) {
      ASSERT_EQ(position[order[i]], SIZE_MAX) << "node listed twice";
      position[order[i]] = i;
    }
    const Dag& dag = g.dag();
    for (auto [it, end] = boost::edges(dag); it != end; ++it) {
      ASSERT_LT(position[boost::source(*it, dag)],
                position[boost::target(*it, dag)]);
      ASSERT_EQ(g.tensor(dag[*it].tensor).producer, boost::source(*it, dag));
    }
    for (NodeId n = 0; n < g.num_nodes(); ++n) {
      for (const TensorId t : g.node(n).inputs) {
        const NodeId producer = g.tensor(t).producer;
        if (producer == kNoNode) continue;
        ASSERT_LT(position[producer], position[n])
            << g.tensor(t).name << " read by " << g.node(n).name;
      }
    }
    // Sorted before inference: every shape is known.
    ASSERT_TRUE(model->unknown_shapes.empty())
        << model->unknown_shapes.front().tensor;
    EXPECT_EQ(model->weights.tensors, 1);
  }
}

}  // namespace
}  // namespace tessera::graph
