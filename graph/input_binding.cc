// --input NAME=DxDxD and --batch N, applied to the main graph's inputs.
#include <algorithm>
#include <unordered_set>

#include "common/strings.h"
#include "graph/onnx_internal.h"

namespace tessera::graph {

Result<InputBinding> ParseInputBinding(std::string_view text) {
  const std::string quoted = "input '" + std::string(text) + "': ";
  const size_t eq = text.rfind('=');
  if (eq == std::string_view::npos || eq == 0) {
    return BadInput(quoted + "expected NAME=DIMS, e.g. input_ids=1x128");
  }
  InputBinding b{std::string(text.substr(0, eq)), {}};
  const std::string_view dims = text.substr(eq + 1);
  for (const std::string_view d : Split(dims, 'x')) {
    int64_t v = 0;
    if (!ParseInt64(d, &v) || v == 0) {
      return BadInput(quoted + "dimension '" + std::string(d) +
                      "' is not a positive integer (dims are written "
                      "1x3x224x224)");
    }
    b.dims.push_back(v);
  }
  return b;
}

namespace internal {
namespace {

using Dim = onnx::TensorShapeProto_Dimension;

std::string DescribeShape(const onnx::TensorShapeProto& s) {
  std::string out;
  for (int i = 0; i < s.dim_size(); ++i) {
    if (i) out += "x";
    const Dim& d = s.dim(i);
    out += d.has_dim_value()       ? std::to_string(d.dim_value())
           : d.dim_param().empty() ? "?"
                                   : d.dim_param();
  }
  return out.empty() ? "scalar" : out;
}

void SetDim(Dim* d, int64_t v, bool* changed) {
  if (d->has_dim_value() && d->dim_value() == v) return;
  d->set_dim_value(v);  // also clears dim_param (a oneof)
  *changed = true;
}

// Graph inputs that the caller feeds (not initializers), by name.
std::vector<onnx::ValueInfoProto*> FedInputs(onnx::GraphProto* g) {
  std::unordered_set<std::string> inits;
  for (const auto& t : g->initializer()) inits.insert(t.name());
  std::vector<onnx::ValueInfoProto*> fed;
  for (auto& v : *g->mutable_input()) {
    if (!inits.contains(v.name())) fed.push_back(&v);
  }
  return fed;
}

onnx::TensorShapeProto* ShapeOf(onnx::ValueInfoProto* v) {
  if (!v->type().has_tensor_type() || !v->type().tensor_type().has_shape()) {
    return nullptr;
  }
  return v->mutable_type()->mutable_tensor_type()->mutable_shape();
}

void BindBatch(int64_t batch, const std::vector<onnx::ValueInfoProto*>& fed,
               bool* changed, std::vector<std::string>* warnings) {
  std::vector<Dim*> symbolic;
  std::vector<Dim*> fixed;
  for (onnx::ValueInfoProto* v : fed) {
    onnx::TensorShapeProto* s = ShapeOf(v);
    if (s == nullptr || s->dim_size() == 0) continue;
    (s->dim(0).has_dim_value() ? fixed : symbolic).push_back(s->mutable_dim(0));
  }
  // Symbolic leading dims show which inputs are batched; failing that, the
  // inputs that share the first input's leading dim (the exported batch).
  std::vector<Dim*>& targets = symbolic.empty() ? fixed : symbolic;
  if (targets.empty()) {
    warnings->push_back("batch " + std::to_string(batch) +
                        " had no effect: no graph input has a leading "
                        "dimension");
    return;
  }
  const int64_t exported = symbolic.empty() ? fixed.front()->dim_value() : -1;
  for (Dim* d : targets) {
    if (symbolic.empty() && d->dim_value() != exported) continue;
    SetDim(d, batch, changed);
  }
}

}  // namespace

Result<bool> BindInputs(const LoadOptions& options, onnx::GraphProto* graph,
                        std::vector<std::string>* warnings) {
  bool changed = false;
  const auto fed = FedInputs(graph);
  if (options.batch) {
    if (*options.batch <= 0) {
      return BadInput("batch: must be a positive integer, got " +
                      std::to_string(*options.batch));
    }
    BindBatch(*options.batch, fed, &changed, warnings);
  }
  for (const InputBinding& b : options.inputs) {
    auto it = std::find_if(fed.begin(), fed.end(),
                           [&](auto* v) { return v->name() == b.name; });
    if (it == fed.end()) {
      std::string names;
      for (auto* v : fed) names += (names.empty() ? "" : ", ") + v->name();
      return BadInput("inputs." + b.name +
                      ": the model has no input of "
                      "that name (its inputs: " +
                      (names.empty() ? "none" : names) + ")");
    }
    onnx::TensorShapeProto* s = ShapeOf(*it);
    if (s != nullptr && s->dim_size() != static_cast<int>(b.dims.size())) {
      return BadInput(
          "inputs." + b.name + ": " + std::to_string(b.dims.size()) +
          " dimensions given, but the model's input has rank " +
          std::to_string(s->dim_size()) + " (" + DescribeShape(*s) + ")");
    }
    if (s == nullptr) {
      s = (*it)->mutable_type()->mutable_tensor_type()->mutable_shape();
      for (size_t i = 0; i < b.dims.size(); ++i) s->add_dim();
      changed = true;
    }
    for (size_t i = 0; i < b.dims.size(); ++i) {
      Dim* d = s->mutable_dim(static_cast<int>(i));
      // The leading (batch) dimension is rebound silently, as `batch` is.
      if (i > 0 && d->has_dim_value() && d->dim_value() != b.dims[i]) {
        warnings->push_back("inputs." + b.name + ": dimension " +
                            std::to_string(i) + " overrides the model's " +
                            std::to_string(d->dim_value()) + " with " +
                            std::to_string(b.dims[i]));
      }
      SetDim(d, b.dims[i], &changed);
    }
  }
  return changed;
}

void ClearInferredShapes(onnx::GraphProto* graph) {
  graph->clear_value_info();
  for (auto& out : *graph->mutable_output()) {
    if (out.type().has_tensor_type()) {
      out.mutable_type()->mutable_tensor_type()->clear_shape();
    }
  }
  for (auto& node : *graph->mutable_node()) {
    for (auto& a : *node.mutable_attribute()) {
      if (a.has_g()) ClearInferredShapes(a.mutable_g());
      for (auto& g : *a.mutable_graphs()) ClearInferredShapes(&g);
    }
  }
}

}  // namespace internal
}  // namespace tessera::graph
