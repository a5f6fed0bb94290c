#ifndef TESSERA_GRAPH_BUILDER_H_
#define TESSERA_GRAPH_BUILDER_H_

// OpGraphBuilder assembles an OpGraph node by node; Build() validates it
// (every consumed tensor produced, each tensor produced once, no cycle) and
// freezes it. LoadModel uses it for ONNX files; tests and benchmarks use it
// to make graphs directly. Not thread-safe; one builder per graph.

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "graph/graph.h"

namespace tessera::graph {

class OpGraphBuilder {
 public:
  explicit OpGraphBuilder(std::string_view graph_name);
  OpGraphBuilder(const OpGraphBuilder&) = delete;
  OpGraphBuilder& operator=(const OpGraphBuilder&) = delete;
  ~OpGraphBuilder();

  // From now on, tensors declared with a floating-point dtype (fp16, bf16,
  // fp32, fp64) get `to` instead: "what if this model ran in half precision".
  void RetypeFloats(DataType to) { float_type_ = to; }

  // The dimension value that stands for symbol `name` (e.g. "batch").
  int64_t Symbol(std::string_view name);

  // Declares a tensor. `dims` nullopt: rank unknown. Returns its id, or the
  // existing id when `name` was declared before (its first declaration wins).
  TensorId AddTensor(std::string_view name, DataType dtype,
                     std::optional<std::span<const int64_t>> dims,
                     TensorKind kind);
  std::optional<TensorId> Find(std::string_view name) const;
  // Replaces dtype and dims of a declared tensor (e.g. after inference).
  void SetShape(TensorId t, DataType dtype,
                std::optional<std::span<const int64_t>> dims);

  // Adds a node; `inputs` may hold kNoTensor for omitted optional inputs.
  // Attributes and subgraphs added next belong to this node.
  NodeId AddNode(std::string_view name, std::string_view op_type,
                 std::string_view domain, std::span<const TensorId> inputs,
                 std::span<const TensorId> outputs,
                 std::span<const TensorId> implicit_inputs = {});
  void AddInt(std::string_view attr, int64_t v);
  void AddFloat(std::string_view attr, double v);
  void AddString(std::string_view attr, std::string_view v);
  void AddInts(std::string_view attr, std::span<const int64_t> v);
  void AddFloats(std::string_view attr, std::span<const float> v);
  void AddStrings(std::string_view attr, std::span<const std::string> v);
  void AddSubgraph(std::unique_ptr<OpGraph> subgraph);

  void MarkInput(TensorId t);
  void MarkOutput(TensorId t);

  // Validates and freezes. Errors (kBadInput) name the graph and the
  // offending tensor or nodes.
  Result<std::unique_ptr<OpGraph>> Build() &&;

 private:
  uint32_t Append(std::string_view s);  // a new string id
  uint32_t Intern(std::string_view s);  // shared id for repeated strings
  OpGraph::AttrRecord& PushAttr(std::string_view attr, AttrType type);
  Status CheckProducers() const;
  Status ComputeTopologicalOrder();
  std::string DescribeCycle(const std::vector<uint32_t>& indegree) const;
  void BuildConsumersAndDag();
  void BuildIndices();
  void ShrinkToFit();

  std::unique_ptr<OpGraph> g_;
  std::unordered_map<std::string, TensorId> tensor_ids_;
  std::unordered_map<std::string, uint32_t> interned_;
  std::vector<std::pair<TensorId, NodeId>> double_producers_;
  std::optional<DataType> float_type_;
};

}  // namespace tessera::graph

#endif  // TESSERA_GRAPH_BUILDER_H_
