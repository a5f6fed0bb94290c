#ifndef TESSERA_TESTS_ESTIMATOR_ONE_OP_GRAPH_H_
#define TESSERA_TESTS_ESTIMATOR_ONE_OP_GRAPH_H_

// OneOpGraph builds a graph holding one operator (plus any producer nodes a
// test adds first) for the per-operator cost tests:
//   OneOpGraph op;
//   op.In("x", {1, 3, 8, 8}).Weight("w", {4, 3, 3, 3}).Out("y", {1, 4, 6, 6});
//   op.Node("Conv").Ints("strides", {1, 1});
//   const OpCost c = op.Cost();
// Not thread-safe; one per test.

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "estimator/op_cost.h"
#include "graph/builder.h"

namespace tessera::estimator::testing {

using graph::DataType;
using graph::TensorId;
using graph::TensorKind;
using Dims = std::optional<std::vector<int64_t>>;

class OneOpGraph {
 public:
  explicit OneOpGraph(std::string_view name = "test") : b_(name) {}

  graph::OpGraphBuilder& builder() { return b_; }

  // Declares a tensor; `dims` nullopt leaves the rank unknown.
  TensorId Tensor(std::string_view name, const Dims& dims, TensorKind kind,
                  DataType dtype = DataType::kFloat32) {
    if (!dims) return b_.AddTensor(name, dtype, std::nullopt, kind);
    return b_.AddTensor(name, dtype, std::span<const int64_t>(*dims), kind);
  }

  // Next input of the operator: a graph input, a weight, or omitted.
  OneOpGraph& In(std::string_view name, const Dims& dims,
                 DataType dtype = DataType::kFloat32,
                 TensorKind kind = TensorKind::kInput) {
    inputs_.push_back(Tensor(name, dims, kind, dtype));
    if (kind == TensorKind::kInput) b_.MarkInput(inputs_.back());
    return *this;
  }
  OneOpGraph& Weight(std::string_view name, const Dims& dims,
                     DataType dtype = DataType::kFloat32) {
    return In(name, dims, dtype, TensorKind::kInitializer);
  }
  OneOpGraph& Omitted() {
    inputs_.push_back(graph::kNoTensor);
    return *this;
  }
  // An input that is already declared (e.g. produced by an earlier node).
  OneOpGraph& Use(TensorId t) {
    inputs_.push_back(t);
    return *this;
  }
  // Next output of the operator.
  OneOpGraph& Out(std::string_view name, const Dims& dims,
                  DataType dtype = DataType::kFloat32) {
    outputs_.push_back(Tensor(name, dims, TensorKind::kActivation, dtype));
    return *this;
  }

  // Adds the operator; attributes and subgraphs added next belong to it.
  OneOpGraph& Node(std::string_view op_type, std::string_view domain = "") {
    node_ = b_.AddNode("op", op_type, domain, inputs_, outputs_);
    for (const TensorId t : outputs_) b_.MarkOutput(t);
    return *this;
  }
  OneOpGraph& Int(std::string_view attr, int64_t v) {
    b_.AddInt(attr, v);
    return *this;
  }
  OneOpGraph& Ints(std::string_view attr, std::vector<int64_t> v) {
    b_.AddInts(attr, v);
    return *this;
  }
  OneOpGraph& Float(std::string_view attr, double v) {
    b_.AddFloat(attr, v);
    return *this;
  }
  OneOpGraph& String(std::string_view attr, std::string_view v) {
    b_.AddString(attr, v);
    return *this;
  }
  OneOpGraph& Subgraph(std::unique_ptr<graph::OpGraph> g) {
    b_.AddSubgraph(std::move(g));
    return *this;
  }

  // Builds the graph and costs the operator.
  OpCost Cost() {
    auto g = std::move(b_).Build();
    EXPECT_TRUE(g) << g.error().message;
    if (!g) return {};
    graph_ = std::move(g).value();
    return CostOf(*graph_, node_);
  }
  const graph::OpGraph& graph() const { return *graph_; }

 private:
  graph::OpGraphBuilder b_;
  std::vector<TensorId> inputs_, outputs_;
  graph::NodeId node_ = 0;
  std::unique_ptr<graph::OpGraph> graph_;
};

}  // namespace tessera::estimator::testing

#endif  // TESSERA_TESTS_ESTIMATOR_ONE_OP_GRAPH_H_
