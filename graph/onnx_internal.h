#ifndef TESSERA_GRAPH_ONNX_INTERNAL_H_
#define TESSERA_GRAPH_ONNX_INTERNAL_H_

// ONNX protobuf <-> OpGraph, used inside graph/ only.

#include <memory>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "graph/graph.h"

namespace tessera::graph::internal {

// Converts a (shape-inferred) ONNX graph into an OpGraph: Constant outputs
// become weights, subgraphs become nested OpGraphs, and tensors a subgraph
// reads from enclosing graphs become implicit inputs of its node.
// `float_type`: see LoadOptions::float_type.
Result<std::unique_ptr<OpGraph>> ConvertGraph(
    const onnx::GraphProto& graph,
    std::optional<DataType> float_type = std::nullopt);

// True if every graph (and subgraph) lists its nodes in topological order.
bool IsTopologicallySorted(const OpGraph& graph);

// Reorders the nodes of `proto` (and its subgraphs) into the topological
// order of `graph`, which must have been converted from `proto`.
void SortNodes(const OpGraph& graph, onnx::GraphProto* proto);

// Applies --input and --batch to the main graph's inputs. Returns whether a
// dimension changed; appends to `warnings` when a binding had no effect.
Result<bool> BindInputs(const LoadOptions& options, onnx::GraphProto* graph,
                        std::vector<std::string>* warnings);

// Drops value_info and output shapes (keeping element types) everywhere so
// that shape inference recomputes them after a binding changed the inputs.
void ClearInferredShapes(onnx::GraphProto* graph);

// Evaluates integer shape computations (Shape, Cast, Gather, Slice, Concat,
// Squeeze, Unsqueeze, Add/Sub/Mul/Div on small int tensors) whose inputs are
// known, replacing their nodes by initializers so that shape inference can
// use the values. For a scratch copy of the graph only: it changes the
// graph's structure. Returns how many nodes it replaced.
int FoldShapeComputations(onnx::GraphProto* graph);

// Runs ONNX shape inference on `model` in a forked child process (ONNX
// crashes on some corrupted models) and merges the inferred types back;
// problems become warnings. See graph/shape_inference.cc.
void InferShapes(onnx::ModelProto* model, std::vector<std::string>* warnings);

// While alive, hides the nodes of `model` whose (domain, op type) has no
// schema at the model's opset in a private domain, so that ONNX's shape
// inference (which crashes on them) skips them; restores them on
// destruction. The model's nodes must not be added, removed or moved
// meanwhile.
class UnknownOperators {
 public:
  explicit UnknownOperators(onnx::ModelProto* model);
  UnknownOperators(const UnknownOperators&) = delete;
  UnknownOperators& operator=(const UnknownOperators&) = delete;
  ~UnknownOperators();

 private:
  std::vector<std::pair<onnx::NodeProto*, std::string>> hidden_;
};

// One warning per unknown operator type of `model` (see UnknownOperators).
std::vector<std::string> DescribeUnknownOperators(onnx::ModelProto* model);

}  // namespace tessera::graph::internal

#endif  // TESSERA_GRAPH_ONNX_INTERNAL_H_
