// ONNX GraphProto -> OpGraph.
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "graph/builder.h"
#include "graph/graph_internal.h"
#include "graph/onnx_internal.h"

namespace tessera::graph::internal {
namespace {

// Names defined in one graph, chained to the enclosing graphs' scopes.
struct Scope {
  const Scope* parent = nullptr;
  std::unordered_set<std::string_view> names;
  bool DefinedAbove(std::string_view name) const {
    for (const Scope* s = parent; s; s = s->parent) {
      if (s->names.contains(name)) return true;
    }
    return false;
  }
};

struct Shape {
  DataType dtype = DataType::kUndefined;
  std::optional<std::vector<int64_t>> dims;
};

class GraphConverter {
 public:
  GraphConverter(const onnx::GraphProto& proto, const Scope* outer,
                 std::optional<DataType> float_type)
      : proto_(proto), builder_(proto.name()), float_type_(float_type) {
    scope_.parent = outer;
    if (float_type) builder_.RetypeFloats(*float_type);
  }

  // On success, `captured` lists the outer-scope names this graph reads.
  Result<std::unique_ptr<OpGraph>> Convert(std::vector<std::string>* captured);

 private:
  void CollectTypesAndNames();
  Shape ShapeOf(const onnx::TypeProto& type);
  Shape ShapeOfName(std::string_view name);
  Result<TensorId> Resolve(const std::string& name, const onnx::NodeProto* by,
                           int index);
  Status AddNode(const onnx::NodeProto& node, int index);
  void AddAttributes(const onnx::NodeProto& node);
  TensorId AddOutput(const onnx::NodeProto& node, const std::string& name);
  // The weight a no-op node passes through (graph.h, IsWeightAlias), or
  // null: its output is then a weight too.
  const Shape* AliasedWeight(const onnx::NodeProto& node) const;

  const onnx::GraphProto& proto_;
  OpGraphBuilder builder_;
  std::optional<DataType> float_type_;
  Scope scope_;
  std::unordered_map<std::string_view, const onnx::TypeProto*> types_;
  // Initializers, Constant values and their aliases, as declared.
  std::unordered_map<std::string, Shape> weights_;
  std::vector<std::string> captured_;
  std::unordered_set<std::string> captured_set_;
  std::vector<std::unique_ptr<OpGraph>> pending_subgraphs_;
};

std::vector<int64_t> Dims(const google::protobuf::RepeatedField<int64_t>& d) {
  return {d.begin(), d.end()};
}

void GraphConverter::CollectTypesAndNames() {
  for (const auto& v : proto_.value_info()) types_[v.name()] = &v.type();
  for (const auto& v : proto_.output()) types_[v.name()] = &v.type();
  for (const auto& v : proto_.input()) {
    types_[v.name()] = &v.type();
    scope_.names.insert(v.name());
  }
  for (const auto& t : proto_.initializer()) scope_.names.insert(t.name());
  for (const auto& t : proto_.sparse_initializer()) {
    scope_.names.insert(t.values().name());
  }
  for (const auto& n : proto_.node()) {
    for (const auto& o : n.output()) {
      if (!o.empty()) scope_.names.insert(o);
    }
  }
}

Shape GraphConverter::ShapeOf(const onnx::TypeProto& type) {
  // Dense and sparse tensor types carry the same (elem_type, shape) pair.
  const auto convert = [this](const auto& t) {
    Shape s{DataTypeFromOnnx(t.elem_type()), std::nullopt};
    if (!t.has_shape()) return s;
    s.dims.emplace();
    for (const auto& d : t.shape().dim()) {
      s.dims->push_back(d.has_dim_value() && d.dim_value() >= 0
                            ? d.dim_value()
                            : builder_.Symbol(d.dim_param()));
    }
    return s;
  };
  if (type.has_tensor_type()) return convert(type.tensor_type());
  if (type.has_sparse_tensor_type()) return convert(type.sparse_tensor_type());
  return {};  // sequences, maps, optionals: no tensor shape
}

Shape GraphConverter::ShapeOfName(std::string_view name) {
  auto it = types_.find(name);
  return it == types_.end() ? Shape{} : ShapeOf(*it->second);
}

TensorId AddWithShape(OpGraphBuilder& b, std::string_view name, const Shape& s,
                      TensorKind kind) {
  if (!s.dims) return b.AddTensor(name, s.dtype, std::nullopt, kind);
  return b.AddTensor(name, s.dtype, std::span<const int64_t>(*s.dims), kind);
}

std::string Label(const onnx::NodeProto& node, int index) {
  const std::string op = " (" + node.op_type() + ")";
  if (node.name().empty()) return "#" + std::to_string(index) + op;
  return "'" + node.name() + "'" + op;
}

Result<TensorId> GraphConverter::Resolve(const std::string& name,
                                         const onnx::NodeProto* by, int index) {
  if (auto t = builder_.Find(name)) return *t;
  if (scope_.names.contains(name)) {
    return AddWithShape(builder_, name, ShapeOfName(name),
                        TensorKind::kActivation);
  }
  if (scope_.DefinedAbove(name)) {
    if (captured_set_.insert(name).second) captured_.push_back(name);
    return AddWithShape(builder_, name, ShapeOfName(name),
                        TensorKind::kOuterScope);
  }
  const std::string where = "graph '" + proto_.name() + "': ";
  if (by == nullptr) {
    return BadInput(where + "graph output '" + name + "' is never produced");
  }
  return BadInput(where + "node " + Label(*by, index) + " consumes tensor '" +
                  name +
                  "', which no node produces and which is neither a graph "
                  "input nor an initializer");
}

// Weights must have a size: dims >= 0 whose product fits in int64.
Status CheckWeightDims(const std::string& graph, const std::string& name,
                       const std::vector<int64_t>& dims) {
  int64_t elements = 1;
  for (const int64_t d : dims) {
    if (d < 0 || __builtin_mul_overflow(elements, d, &elements)) {
      std::string text;
      for (const int64_t x : dims)
        text += (text.empty() ? "" : "x") + std::to_string(x);
      return BadInput("graph '" + graph + "': weight '" + name +
                      "' has invalid dims " + text +
                      " (negative or too large; is the file corrupted?)");
    }
  }
  return {};
}

// The value of a Constant node: its dtype and dims.
Shape ConstantValueShape(const onnx::NodeProto& node) {
  for (const auto& a : node.attribute()) {
    const std::string& n = a.name();
    if (n == "value") {
      return {DataTypeFromOnnx(a.t().data_type()), Dims(a.t().dims())};
    }
    if (n == "sparse_value") {
      return {DataTypeFromOnnx(a.sparse_tensor().values().data_type()),
              Dims(a.sparse_tensor().dims())};
    }
    if (n == "value_float") return {DataType::kFloat32, std::vector<int64_t>{}};
    if (n == "value_int") return {DataType::kInt64, std::vector<int64_t>{}};
    if (n == "value_string") return {DataType::kString, std::vector<int64_t>{}};
    if (n == "value_floats") {
      return {DataType::kFloat32, std::vector<int64_t>{a.floats_size()}};
    }
    if (n == "value_ints") {
      return {DataType::kInt64, std::vector<int64_t>{a.ints_size()}};
    }
    if (n == "value_strings") {
      return {DataType::kString, std::vector<int64_t>{a.strings_size()}};
    }
  }
  return {};
}

const Shape* GraphConverter::AliasedWeight(const onnx::NodeProto& node) const {
  if (node.input_size() < 1 || node.output_size() < 1) return nullptr;
  const auto it = weights_.find(node.input(0));
  if (it == weights_.end()) return nullptr;
  std::optional<DataType> to;
  for (const auto& a : node.attribute()) {
    if (a.name() == "to" && a.type() == onnx::AttributeProto::INT) {
      to = DataTypeFromOnnx(static_cast<int32_t>(a.i()));
    }
  }
  const bool training_mode = node.input_size() > 2 && !node.input(2).empty();
  return internal::PassesThrough(node.domain(), node.op_type(),
                                 it->second.dtype, to, training_mode)
             ? &it->second
             : nullptr;
}

TensorId GraphConverter::AddOutput(const onnx::NodeProto& node,
                                   const std::string& name) {
  if (node.op_type() == "Constant" &&
      (node.domain().empty() || node.domain() == "ai.onnx")) {
    const Shape value = ConstantValueShape(node);
    weights_.emplace(name, value);
    return AddWithShape(builder_, name, value, TensorKind::kConstant);
  }
  if (const Shape* w = AliasedWeight(node); w && name == node.output(0)) {
    const Shape value = *w;  // copied: emplace may rehash
    weights_.emplace(name, value);
    return AddWithShape(builder_, name, value, TensorKind::kConstant);
  }
  return AddWithShape(builder_, name, ShapeOfName(name),
                      TensorKind::kActivation);
}

void GraphConverter::AddAttributes(const onnx::NodeProto& node) {
  using A = onnx::AttributeProto;
  for (const auto& a : node.attribute()) {
    switch (a.type()) {
      case A::INT:
        builder_.AddInt(a.name(), a.i());
        break;
      case A::FLOAT:
        builder_.AddFloat(a.name(), a.f());
        break;
      case A::STRING:
        builder_.AddString(a.name(), a.s());
        break;
      case A::INTS:
        builder_.AddInts(a.name(), {a.ints().data(), size_t(a.ints_size())});
        break;
      case A::FLOATS:
        builder_.AddFloats(a.name(),
                           {a.floats().data(), size_t(a.floats_size())});
        break;
      case A::STRINGS: {
        const std::vector<std::string> v(a.strings().begin(),
                                         a.strings().end());
        builder_.AddStrings(a.name(), v);
        break;
      }
      default:
        break;  // tensors and graphs are handled elsewhere
    }
  }
  for (auto& sub : pending_subgraphs_) builder_.AddSubgraph(std::move(sub));
  pending_subgraphs_.clear();
}

Status GraphConverter::AddNode(const onnx::NodeProto& node, int index) {
  // Subgraphs first: what they capture becomes this node's implicit inputs.
  std::vector<std::string> sub_captured;
  for (const auto& a : node.attribute()) {
    std::vector<const onnx::GraphProto*> graphs;
    if (a.has_g()) graphs.push_back(&a.g());
    for (const auto& g : a.graphs()) graphs.push_back(&g);
    for (const onnx::GraphProto* g : graphs) {
      GraphConverter sub(*g, &scope_, float_type_);
      std::vector<std::string> names;
      auto built = sub.Convert(&names);
      if (!built) {
        return built.error().WithContext("in subgraph '" + a.name() +
                                         "' of node " + Label(node, index));
      }
      pending_subgraphs_.push_back(std::move(built).value());
      for (auto& n : names) {
        if (std::find(sub_captured.begin(), sub_captured.end(), n) ==
            sub_captured.end()) {
          sub_captured.push_back(std::move(n));
        }
      }
    }
  }
  std::vector<TensorId> inputs;
  std::vector<TensorId> implicit;
  std::vector<TensorId> outputs;
  for (const auto& name : node.input()) {
    if (name.empty()) {
      inputs.push_back(kNoTensor);
      continue;
    }
    auto t = Resolve(name, &node, index);
    if (!t) return t.error();
    inputs.push_back(*t);
  }
  for (const auto& name : sub_captured) {
    auto t = Resolve(name, &node, index);
    if (!t) return t.error();
    implicit.push_back(*t);
  }
  if (node.op_type() == "Constant" && node.output_size() == 1) {
    const Shape value = ConstantValueShape(node);
    if (value.dims) {
      TESSERA_RETURN_IF_ERROR(
          CheckWeightDims(proto_.name(), node.output(0), *value.dims));
    }
  }
  for (const auto& name : node.output()) {
    outputs.push_back(name.empty() ? kNoTensor : AddOutput(node, name));
  }
  builder_.AddNode(node.name(), node.op_type(), node.domain(), inputs, outputs,
                   implicit);
  AddAttributes(node);
  return {};
}

Result<std::unique_ptr<OpGraph>> GraphConverter::Convert(
    std::vector<std::string>* captured) {
  CollectTypesAndNames();
  for (const auto& t : proto_.initializer()) {
    TESSERA_RETURN_IF_ERROR(
        CheckWeightDims(proto_.name(), t.name(), Dims(t.dims())));
    builder_.AddTensor(t.name(), DataTypeFromOnnx(t.data_type()),
                       Dims(t.dims()), TensorKind::kInitializer);
    weights_.emplace(t.name(),
                     Shape{DataTypeFromOnnx(t.data_type()), Dims(t.dims())});
  }
  for (const auto& t : proto_.sparse_initializer()) {
    builder_.AddTensor(t.values().name(),
                       DataTypeFromOnnx(t.values().data_type()), Dims(t.dims()),
                       TensorKind::kInitializer);
  }
  for (const auto& v : proto_.input()) {
    if (builder_.Find(v.name())) continue;  // IR < 4: initializers as inputs
    builder_.MarkInput(AddWithShape(builder_, v.name(), ShapeOf(v.type()),
                                    TensorKind::kInput));
  }
  for (int i = 0; i < proto_.node_size(); ++i) {
    TESSERA_RETURN_IF_ERROR(AddNode(proto_.node(i), i));
  }
  for (const auto& v : proto_.output()) {
    auto t = Resolve(v.name(), nullptr, -1);
    if (!t) return t.error();
    builder_.MarkOutput(*t);
  }
  auto built = std::move(builder_).Build();
  if (built && captured) *captured = std::move(captured_);
  return built;
}

}  // namespace

Result<std::unique_ptr<OpGraph>> ConvertGraph(
    const onnx::GraphProto& graph, std::optional<DataType> float_type) {
  return GraphConverter(graph, nullptr, float_type).Convert(nullptr);
}

bool IsTopologicallySorted(const OpGraph& graph) {
  const auto order = graph.topological_order();
  for (NodeId i = 0; i < order.size(); ++i) {
    if (order[i] != i) return false;
  }
  for (size_t s = 0; s < graph.num_subgraphs(); ++s) {
    if (!IsTopologicallySorted(graph.subgraph(static_cast<uint32_t>(s)))) {
      return false;
    }
  }
  return true;
}

void SortNodes(const OpGraph& graph, onnx::GraphProto* proto) {
  for (NodeId n = 0; n < graph.num_nodes(); ++n) {
    const auto subs = graph.node(n).subgraphs;
    size_t k = 0;
    for (auto& a :
         *proto->mutable_node(static_cast<int>(n))->mutable_attribute()) {
      if (a.has_g()) SortNodes(graph.subgraph(subs[k++]), a.mutable_g());
      for (auto& g : *a.mutable_graphs()) {
        SortNodes(graph.subgraph(subs[k++]), &g);
      }
    }
  }
  google::protobuf::RepeatedPtrField<onnx::NodeProto> sorted;
  for (const NodeId n : graph.topological_order()) {
    *sorted.Add() = std::move(*proto->mutable_node(static_cast<int>(n)));
  }
  proto->mutable_node()->Swap(&sorted);
}

}  // namespace tessera::graph::internal
