#ifndef TESSERA_GRAPH_GRAPH_H_
#define TESSERA_GRAPH_GRAPH_H_

// graph/: what a model is. The public header of the component.
//
// An OpGraph is an immutable, compact view of one ONNX graph: operators,
// tensors (dtype, shape, bytes, producer, consumers), weights, a node-level
// DAG in Boost Graph's compressed-sparse-row form, and a topological order.
// Everything refers to nodes and tensors by index; strings live in one arena.
// Control-flow operators (If, Loop, Scan) are single nodes that own their
// subgraphs as nested OpGraphs. See docs/graph.md for the design.
//
// An OpGraph is built once (by LoadModel or OpGraphBuilder) and never
// changes afterwards, so concurrent readers need no locking.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <boost/graph/compressed_sparse_row_graph.hpp>

#include "common/result.h"

namespace onnx {
class ModelProto;  // <onnx/onnx_pb.h>, for those that keep it (split/)
}  // namespace onnx

namespace tessera::graph {

using NodeId = uint32_t;
using TensorId = uint32_t;
inline constexpr NodeId kNoNode = UINT32_MAX;
inline constexpr TensorId kNoTensor = UINT32_MAX;  // an omitted optional input

// Element types, numbered as ONNX's TensorProto.DataType.
enum class DataType : uint8_t {
  kUndefined = 0,
  kFloat32 = 1,
  kUint8 = 2,
  kInt8 = 3,
  kUint16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kFloat64 = 11,
  kUint32 = 12,
  kUint64 = 13,
  kComplex64 = 14,
  kComplex128 = 15,
  kBfloat16 = 16,
};
// "float32", "int64", ...; "undefined" for anything unknown.
std::string_view DataTypeName(DataType type);
// Bits per element; 0 for string and undefined (their size is not known).
int DataTypeBits(DataType type);
// fp16, bf16, fp32 or fp64.
bool IsFloat(DataType type);
// Parses "fp32"/"float32", "fp16"/"float16", "bf16"/"bfloat16"; else
// kBadInput "float_type 'TEXT': ..." (LoadOptions::float_type).
Result<DataType> ParseFloatType(std::string_view text);
// Maps an ONNX data type code; unknown codes give kUndefined.
DataType DataTypeFromOnnx(int32_t code);

// Dimensions are int64: >= 0 is a known extent; a negative value is unknown,
// and -(k + 1) names symbol k of the graph (symbol 0 is anonymous).
inline constexpr int64_t kUnknownDim = -1;
inline bool IsKnownDim(int64_t d) { return d >= 0; }

enum class TensorKind : uint8_t {
  kInput,        // a graph input the caller feeds
  kInitializer,  // a weight stored as an initializer
  kConstant,     // the output of a Constant node (also a weight)
  kActivation,   // produced by a node of this graph
  kOuterScope,   // captured by a subgraph from an enclosing graph
};
inline bool IsWeight(TensorKind k) {
  return k == TensorKind::kInitializer || k == TensorKind::kConstant;
}

struct TensorView {
  std::string_view name;
  DataType dtype;
  TensorKind kind;
  std::optional<std::span<const int64_t>> dims;  // nullopt: rank unknown
  int64_t elements;                              // -1 unless every dim is known
  int64_t bytes;    // -1 unless elements and dtype size are known
  NodeId producer;  // kNoNode for inputs, initializers and outer tensors
  bool shape_known() const { return elements >= 0; }
};

enum class AttrType : uint8_t {
  kInt,
  kFloat,
  kString,
  kInts,
  kFloats,
  kStrings
};

struct NodeView {
  std::string_view name;
  std::string_view op_type;
  std::string_view domain;           // "" is the standard ai.onnx domain
  std::span<const TensorId> inputs;  // positional; kNoTensor if omitted
  std::span<const TensorId>
      implicit_inputs;  // outer tensors its subgraphs read
  std::span<const TensorId> outputs;
  std::span<const uint32_t> subgraphs;  // indices for OpGraph::subgraph()
};

// DAG between nodes: one edge per (tensor, consuming node), carrying the
// tensor. Node indices equal NodeIds.
struct DagEdge {
  TensorId tensor = kNoTensor;
};
using Dag =
    boost::compressed_sparse_row_graph<boost::bidirectionalS,
                                       boost::no_property, DagEdge,
                                       boost::no_property, uint32_t, uint32_t>;

class OpGraphBuilder;

class OpGraph {
 public:
  OpGraph(const OpGraph&) = delete;
  OpGraph& operator=(const OpGraph&) = delete;
  OpGraph(OpGraph&&) noexcept;
  OpGraph& operator=(OpGraph&&) noexcept;
  ~OpGraph();

  std::string_view name() const;
  size_t num_nodes() const { return nodes_.size(); }
  size_t num_tensors() const { return tensors_.size(); }
  // Nodes here plus, recursively, in every subgraph.
  size_t num_nodes_with_subgraphs() const;
  // Edges of dag(): (tensor, consumer) pairs whose tensor a node produces.
  size_t num_edges() const;

  NodeView node(NodeId id) const;
  TensorView tensor(TensorId id) const;
  std::span<const NodeId> consumers(TensorId id) const;
  std::optional<TensorId> FindTensor(std::string_view name) const;
  std::optional<NodeId> FindNode(std::string_view name) const;
  std::string_view symbol(int64_t dim) const;  // "" unless a named symbol

  std::span<const TensorId> inputs() const { return inputs_; }  // no weights
  std::span<const TensorId> outputs() const { return outputs_; }
  std::span<const TensorId> weights() const { return weights_; }
  std::span<const NodeId> topological_order() const { return topo_; }
  const Dag& dag() const { return *dag_; }

  const OpGraph& subgraph(uint32_t index) const { return *subgraphs_[index]; }
  size_t num_subgraphs() const { return subgraphs_.size(); }

  // Attributes by name; nullopt/empty when absent or of another type.
  std::optional<int64_t> GetInt(NodeId node, std::string_view attr) const;
  std::optional<double> GetFloat(NodeId node, std::string_view attr) const;
  std::optional<std::string_view> GetString(NodeId node,
                                            std::string_view attr) const;
  std::span<const int64_t> GetInts(NodeId node, std::string_view attr) const;
  std::span<const float> GetFloats(NodeId node, std::string_view attr) const;

 private:
  friend class OpGraphBuilder;
  OpGraph();

  struct NodeRecord {
    uint32_t name, op_type, domain;  // string ids
    uint32_t in_begin;               // into node_inputs_
    uint32_t in_count, implicit_count, out_count, sub_count;
    uint32_t out_begin, sub_begin, attr_begin, attr_count;
  };
  struct TensorRecord {
    uint32_t name;       // string id
    uint32_t dim_begin;  // into dims_
    int32_t rank;        // -1 when unknown
    DataType dtype;
    TensorKind kind;
    NodeId producer;
    int64_t elements, bytes;
  };
  struct AttrRecord {
    uint32_t name;  // string id
    AttrType type;
    uint32_t begin, count;  // into ints_/floats_/string ids, or the scalar
    int64_t i;
    double f;
  };
  const AttrRecord* FindAttr(NodeId node, std::string_view attr,
                             AttrType type) const;
  std::string_view str(uint32_t id) const;

  std::vector<char> arena_;           // all strings, NUL-separated
  std::vector<uint32_t> str_offset_;  // string id -> offset in arena_
  std::vector<NodeRecord> nodes_;
  std::vector<TensorRecord> tensors_;
  std::vector<TensorId> node_tensors_;  // node inputs/implicit/outputs
  std::vector<int64_t> dims_;
  std::vector<uint32_t> symbols_;  // symbol k -> string id
  std::vector<AttrRecord> attrs_;
  std::vector<int64_t> attr_ints_;
  std::vector<float> attr_floats_;
  std::vector<uint32_t> attr_strings_;
  std::vector<uint32_t> consumer_offset_;  // CSR: tensor -> consumers_
  std::vector<NodeId> consumers_;
  std::vector<uint32_t> node_subgraphs_;
  std::vector<std::unique_ptr<OpGraph>> subgraphs_;
  std::vector<TensorId> inputs_, outputs_, weights_;
  std::vector<NodeId> topo_;
  std::unique_ptr<Dag> dag_;
  std::vector<std::pair<uint32_t, uint32_t>> tensor_index_;  // (hash, id)
  std::vector<std::pair<uint32_t, uint32_t>> node_index_;    // (hash, id)
  uint32_t name_ = 0;
};

// Totals over a model's weights: initializers and Constant-node values in the
// main graph and every subgraph, each distinct tensor name counted once.
struct WeightStats {
  int64_t tensors = 0;
  int64_t elements = 0;
  int64_t bytes = 0;
};

// A tensor whose shape is still not fully known after inference and binding.
struct UnknownShape {
  std::string tensor;
  std::string graph;                   // "" for the main graph
  std::vector<std::string> consumers;  // "OpType name" of each consumer
};

struct OpsetImport {
  std::string domain;  // "" is ai.onnx
  int64_t version = 0;
};

// A loaded model: metadata, the main graph and what loading found.
struct Model {
  std::string path;
  std::string producer_name, producer_version, graph_name, domain;
  int64_t ir_version = 0;
  int64_t model_version = 0;
  std::vector<OpsetImport> opsets;
  std::unique_ptr<const OpGraph> graph;
  WeightStats weights;
  std::vector<UnknownShape> unknown_shapes;
  std::vector<std::string> warnings;  // loaded anyway, but worth telling
  // The parsed file as the graph was built from it (LoadOptions::keep_proto):
  // nodes in the OpGraph's order (NodeId n is node n), inputs bound, value
  // types inferred into value_info. Null unless asked for.
  std::shared_ptr<const onnx::ModelProto> proto;
};

// A user's binding of an input's shape: `--input NAME=DxDxD`.
struct InputBinding {
  std::string name;
  std::vector<int64_t> dims;
};
// Parses "input_ids=1x128"; the error names the text and what is wrong.
Result<InputBinding> ParseInputBinding(std::string_view text);

struct LoadOptions {
  std::vector<InputBinding> inputs;
  std::optional<int64_t> batch;  // sets symbolic/exported leading dims
  // Re-types every floating-point tensor (weights included), e.g. to size a
  // model in half precision.
  std::optional<DataType> float_type;
  // Called at the start of each loading stage ("parsing", "inferring
  // shapes", ...) so a front end can show progress on large models.
  std::function<void(std::string_view stage)> progress;
  // Keep the parsed ModelProto in Model::proto (weights included), for
  // writing sub-models of it.
  bool keep_proto = false;
  // More nodes than this (subgraphs' included) is an error before shape
  // inference; 0 = no limit. The queue service bounds its work with it.
  int64_t max_nodes = 0;
  // More protobuf fields than this, counted at every depth without
  // allocating, is an error before parsing (parsing allocates per field);
  // 0 = no limit. Real models have about ten per node.
  int64_t max_fields = 0;
};

// Loads, validates, binds and shape-infers the ONNX model at `path`. Weight
// data is never read, so external-data files may be absent. Errors
// (kBadInput) name the file and the node or tensor at fault.
Result<Model> LoadModel(const std::string& path, const LoadOptions& options);
// The same from a model's bytes (a file the caller read, an upload); `path`
// names it in errors and Model::path.
Result<Model> LoadModelFromBytes(std::string bytes, const std::string& path,
                                 const LoadOptions& options);

// The serialized ONNX model `bytes` with the data of every tensor larger
// than `keep_bytes` removed (initializers and Constant-node values, in
// subgraphs too; external-data references dropped): dims and dtypes stay,
// so the model loads and sizes as before, and shape constants (small) keep
// their values. kBadInput when `bytes` is not an ONNX model.
Result<std::string> StripWeightData(const std::string& bytes,
                                    int64_t keep_bytes);

// Op-type histogram of the main graph ("Conv" -> 53; "domain:Op" outside the
// standard domain), sorted by count, then name.
std::vector<std::pair<std::string, int64_t>> OpHistogram(const OpGraph& g);

// "'name' (OpType)", or "#index (OpType)" for an unnamed node.
std::string DescribeNode(const OpGraph& g, NodeId n);

// One unique name per node of `g`, by NodeId: the node's own name, or
// "<OpType>_<NodeId>" for an unnamed node; a name that is still taken gets
// "_<k>" appended for the smallest free k >= 1. Plans (placement) and splits
// refer to nodes by these names.
std::vector<std::string> UniqueNodeNames(const OpGraph& g);

// Shape "1x3x224x224", symbols by name ("batchx3x224x224"), "?" for unknown.
std::string FormatShape(const OpGraph& g, TensorId t);

}  // namespace tessera::graph

#endif  // TESSERA_GRAPH_GRAPH_H_
