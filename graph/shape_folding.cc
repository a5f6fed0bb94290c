// Shape folding: evaluates the small integer computations that exporters
// emit to build shapes (Shape -> Slice/Gather -> Cast -> Concat -> Reshape)
// where ONNX's own data propagation gives up (e.g. Cast, or the attribute form
// of Slice that some exporters write under newer opsets), and hands the values
// to shape inference as initializers. See docs/graph.md, step 4.
#include <algorithm>
#include <cstring>
#include <optional>
#include <unordered_map>

#include "graph/onnx_internal.h"

namespace tessera::graph::internal {
namespace {

using Values = std::vector<int64_t>;

// A known 0-D or 1-D integer tensor.
struct IntTensor {
  Values v;
  bool scalar = false;
  int32_t dtype = onnx::TensorProto::INT64;  // or INT32
};

// Integer tensors larger than this are not shape computations.
constexpr size_t kMaxFoldedElements = 64;

std::optional<IntTensor> TensorValues(const onnx::TensorProto& t) {
  if (t.dims_size() > 1 || t.data_location() == onnx::TensorProto::EXTERNAL) {
    return std::nullopt;
  }
  Values v;
  const std::string& raw = t.raw_data();
  if (t.data_type() == onnx::TensorProto::INT64) {
    if (!raw.empty()) {
      v.resize(raw.size() / sizeof(int64_t));
      std::memcpy(v.data(), raw.data(), v.size() * sizeof(int64_t));
    } else {
      v.assign(t.int64_data().begin(), t.int64_data().end());
    }
  } else if (t.data_type() == onnx::TensorProto::INT32) {
    if (!raw.empty()) {
      std::vector<int32_t> w(raw.size() / sizeof(int32_t));
      std::memcpy(w.data(), raw.data(), w.size() * sizeof(int32_t));
      v.assign(w.begin(), w.end());
    } else {
      v.assign(t.int32_data().begin(), t.int32_data().end());
    }
  } else {
    return std::nullopt;
  }
  if (v.size() > kMaxFoldedElements) return std::nullopt;
  return IntTensor{std::move(v), t.dims_size() == 0, t.data_type()};
}

const onnx::AttributeProto* Attr(const onnx::NodeProto& n,
                                 const std::string& name) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

// Python-style clamp of a slice bound into [0, size].
int64_t Clamp(int64_t i, int64_t size) {
  if (i < 0) i += size;
  return std::clamp<int64_t>(i, 0, size);
}

IntTensor Vector(Values v) { return IntTensor{std::move(v), false}; }

class Folder {
 public:
  explicit Folder(const onnx::GraphProto& g) {
    for (const auto& t : g.initializer()) {
      if (auto v = TensorValues(t)) values_[t.name()] = *v;
    }
    auto add_shape = [&](const onnx::ValueInfoProto& vi) {
      if (!vi.type().has_tensor_type()) return;
      const auto& tt = vi.type().tensor_type();
      if (!tt.has_shape()) return;
      Values dims;
      for (const auto& d : tt.shape().dim()) {
        if (!d.has_dim_value()) return;
        dims.push_back(d.dim_value());
      }
      shapes_[vi.name()] = dims;
    };
    for (const auto& vi : g.input()) add_shape(vi);
    for (const auto& vi : g.value_info()) add_shape(vi);
    for (const auto& vi : g.output()) add_shape(vi);
  }

  // Evaluates `n` if its inputs are known integer values; nullopt otherwise.
  std::optional<IntTensor> Evaluate(const onnx::NodeProto& n) const;
  void Set(const std::string& name, IntTensor v) {
    values_[name] = std::move(v);
  }

 private:
  const IntTensor* Value(const onnx::NodeProto& n, int i) const {
    if (i >= n.input_size()) return nullptr;
    auto it = values_.find(n.input(i));
    return it == values_.end() ? nullptr : &it->second;
  }
  std::optional<IntTensor> Shape(const onnx::NodeProto& n) const;
  std::optional<IntTensor> Reshaped(const onnx::NodeProto& n) const;
  std::optional<IntTensor> Gather(const onnx::NodeProto& n) const;
  std::optional<IntTensor> Concat(const onnx::NodeProto& n) const;
  std::optional<IntTensor> Slice(const onnx::NodeProto& n) const;
  std::optional<IntTensor> Arithmetic(const onnx::NodeProto& n) const;

  std::unordered_map<std::string, IntTensor> values_;
  std::unordered_map<std::string, Values> shapes_;
};

std::optional<IntTensor> Folder::Shape(const onnx::NodeProto& n) const {
  if (n.input_size() < 1) return std::nullopt;
  auto it = shapes_.find(n.input(0));
  if (it == shapes_.end()) return std::nullopt;
  const Values& dims = it->second;
  const auto rank = static_cast<int64_t>(dims.size());
  const auto* s = Attr(n, "start");
  const auto* e = Attr(n, "end");
  const int64_t lo = s ? Clamp(s->i(), rank) : 0;
  const int64_t hi = e ? Clamp(e->i(), rank) : rank;
  if (lo >= hi) return Vector({});
  return Vector(Values(dims.begin() + lo, dims.begin() + hi));
}

// Cast, Identity, Squeeze, Unsqueeze: the same values, maybe another rank.
std::optional<IntTensor> Folder::Reshaped(const onnx::NodeProto& n) const {
  const IntTensor* in = Value(n, 0);
  if (!in) return std::nullopt;
  const std::string& op = n.op_type();
  if (op == "Cast") {
    const auto* to = Attr(n, "to");
    if (!to || (to->i() != onnx::TensorProto::INT64 &&
                to->i() != onnx::TensorProto::INT32)) {
      return std::nullopt;
    }
    return IntTensor{in->v, in->scalar, static_cast<int32_t>(to->i())};
  }
  if (op == "Squeeze") {
    if (in->scalar || in->v.size() != 1) return std::nullopt;
    return IntTensor{in->v, true, in->dtype};
  }
  if (op == "Unsqueeze") {
    if (!in->scalar) return std::nullopt;  // would be 2-D
    return IntTensor{in->v, false, in->dtype};
  }
  return *in;
}

std::optional<IntTensor> Folder::Gather(const onnx::NodeProto& n) const {
  const IntTensor* data = Value(n, 0);
  const IntTensor* idx = Value(n, 1);
  const auto* axis = Attr(n, "axis");
  if (!data || !idx || data->scalar || (axis && axis->i() != 0)) {
    return std::nullopt;
  }
  IntTensor out{{}, idx->scalar, data->dtype};
  const auto size = static_cast<int64_t>(data->v.size());
  for (int64_t i : idx->v) {
    if (i < 0) i += size;
    if (i < 0 || i >= size) return std::nullopt;
    out.v.push_back(data->v[static_cast<size_t>(i)]);
  }
  return out;
}

std::optional<IntTensor> Folder::Concat(const onnx::NodeProto& n) const {
  IntTensor out;
  for (int i = 0; i < n.input_size(); ++i) {
    const IntTensor* in = Value(n, i);
    if (!in || in->scalar) return std::nullopt;
    out.v.insert(out.v.end(), in->v.begin(), in->v.end());
    out.dtype = in->dtype;
  }
  return out;
}

std::optional<IntTensor> Folder::Slice(const onnx::NodeProto& n) const {
  const IntTensor* data = Value(n, 0);
  if (!data || data->scalar) return std::nullopt;
  int64_t start = 0;
  int64_t end = 0;
  int64_t step = 1;
  if (const auto* s = Attr(n, "starts"); s && s->ints_size() == 1) {
    // Attribute form (opset < 10, and some exporters' output at 11).
    const auto* e = Attr(n, "ends");
    if (!e || e->ints_size() != 1) return std::nullopt;
    start = s->ints(0);
    end = e->ints(0);
  } else {
    const IntTensor* s_in = Value(n, 1);
    const IntTensor* e_in = Value(n, 2);
    if (!s_in || !e_in || s_in->v.size() != 1 || e_in->v.size() != 1) {
      return std::nullopt;
    }
    start = s_in->v[0];
    end = e_in->v[0];
    if (const IntTensor* st = Value(n, 4); st && st->v.size() == 1) {
      step = st->v[0];
    }
  }
  if (step <= 0) return std::nullopt;
  const auto size = static_cast<int64_t>(data->v.size());
  Values out;
  for (int64_t i = Clamp(start, size); i < Clamp(end, size); i += step) {
    out.push_back(data->v[static_cast<size_t>(i)]);
  }
  return IntTensor{std::move(out), false, data->dtype};
}

std::optional<IntTensor> Folder::Arithmetic(const onnx::NodeProto& n) const {
  const IntTensor* a = Value(n, 0);
  const IntTensor* b = Value(n, 1);
  if (!a || !b) return std::nullopt;
  const size_t len = std::max(a->v.size(), b->v.size());
  if ((a->v.size() != len && a->v.size() != 1) ||
      (b->v.size() != len && b->v.size() != 1)) {
    return std::nullopt;
  }
  IntTensor out{Values(len), a->scalar && b->scalar, a->dtype};
  const std::string& op = n.op_type();
  for (size_t i = 0; i < len; ++i) {
    const int64_t x = a->v[a->v.size() == 1 ? 0 : i];
    const int64_t y = b->v[b->v.size() == 1 ? 0 : i];
    if (op == "Div" && y == 0) return std::nullopt;
    out.v[i] = op == "Add"   ? x + y
               : op == "Sub" ? x - y
               : op == "Mul" ? x * y
                             : x / y;
  }
  return out;
}

std::optional<IntTensor> ConstantValue(const onnx::NodeProto& n) {
  if (const auto* v = Attr(n, "value")) return TensorValues(v->t());
  if (const auto* v = Attr(n, "value_ints")) {
    return Vector(Values(v->ints().begin(), v->ints().end()));
  }
  if (const auto* v = Attr(n, "value_int")) return IntTensor{{v->i()}, true};
  return std::nullopt;
}

std::optional<IntTensor> Folder::Evaluate(const onnx::NodeProto& n) const {
  if (!n.domain().empty() && n.domain() != "ai.onnx") return std::nullopt;
  const std::string& op = n.op_type();
  if (op == "Shape") return Shape(n);
  if (op == "Cast" || op == "Identity" || op == "Squeeze" ||
      op == "Unsqueeze") {
    return Reshaped(n);
  }
  if (op == "Gather") return Gather(n);
  if (op == "Concat") return Concat(n);
  if (op == "Slice") return Slice(n);
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div") {
    return Arithmetic(n);
  }
  if (op == "Constant") return ConstantValue(n);
  return std::nullopt;
}

// An initializer holding `value` under the name `name`: shape inference
// reads initializer data (not Constant nodes' values) for Reshape & co.
void AddInitializer(onnx::GraphProto* g, const std::string& name,
                    const IntTensor& value) {
  onnx::TensorProto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(value.dtype);
  if (!value.scalar) t->add_dims(static_cast<int64_t>(value.v.size()));
  for (const int64_t x : value.v) {
    if (value.dtype == onnx::TensorProto::INT32) {
      t->add_int32_data(static_cast<int32_t>(x));
    } else {
      t->add_int64_data(x);
    }
  }
}

}  // namespace

int FoldShapeComputations(onnx::GraphProto* graph) {
  Folder folder(*graph);
  google::protobuf::RepeatedPtrField<onnx::NodeProto> kept;
  int folded = 0;
  for (auto& node : *graph->mutable_node()) {
    std::optional<IntTensor> value;
    if (node.output_size() == 1 && !node.output(0).empty()) {
      value = folder.Evaluate(node);
    }
    if (!value || value->v.size() > kMaxFoldedElements) {
      *kept.Add() = std::move(node);
      continue;
    }
    folder.Set(node.output(0), *value);
    AddInitializer(graph, node.output(0), *value);
    ++folded;
  }
  graph->mutable_node()->Swap(&kept);
  return folded;
}

}  // namespace tessera::graph::internal
