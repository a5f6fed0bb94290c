// ONNX shape inference, run so that it cannot take tessera down.
//
// ONNX 1.12's C++ shape inference crashes (SIGSEGV) on some corrupted models
// (fuzzing the zoo found, e.g., a Concat feeding Reshape a 10^14 extent, and
// unknown operators of the standard domain). Bad input must give an error or
// a warning, never a crash, so inference runs in a forked child
// (common/isolated.h) that sends the inferred types back through a pipe; if
// the child dies, the model loads without inferred shapes and a warning
// says why. See docs/graph.md, step 4.
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include "common/isolated.h"
#include "graph/onnx_internal.h"

namespace tessera::graph::internal {
namespace {

// Inference in this process: unknown operators hidden, and a second attempt
// without the file's stored shapes when they conflict with inferred ones
// (ONNX stops at the first merge conflict even in its lenient mode).
void InferInProcess(onnx::ModelProto* model,
                    std::vector<std::string>* warnings) {
  // error_mode 0 skips nodes whose inference fails; data propagation lets
  // Shape -> Gather -> Concat -> Reshape chains produce concrete shapes.
  const onnx::ShapeInferenceOptions options(/*check_type_val=*/false,
                                            /*strict_mode_val=*/0,
                                            /*data_prop_val=*/true);
  const UnknownOperators hidden(model);
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      onnx::shape_inference::InferShapes(
          *model, onnx::OpSchemaRegistry::Instance(), options);
      return;
    } catch (const std::exception& e) {
      if (attempt == 1) {
        warnings->push_back(std::string("shape inference stopped early: ") +
                            e.what());
      }
      ClearInferredShapes(model->mutable_graph());
    }
  }
}

// Every graph of the model, main first, then subgraphs depth first in node
// and attribute order: the same order in parent and child.
void AllGraphs(onnx::GraphProto* g, std::vector<onnx::GraphProto*>* out) {
  out->push_back(g);
  for (auto& node : *g->mutable_node()) {
    for (auto& a : *node.mutable_attribute()) {
      if (a.has_g()) AllGraphs(a.mutable_g(), out);
      for (auto& sub : *a.mutable_graphs()) AllGraphs(&sub, out);
    }
  }
}

// The child's answer: per graph, its value_info and outputs, as one
// GraphProto whose nodes carry one subgraph attribute each; the warnings
// (one per line) in its doc_string.
std::string EncodeTypes(onnx::ModelProto* model,
                        const std::vector<std::string>& warnings) {
  std::vector<onnx::GraphProto*> graphs;
  AllGraphs(model->mutable_graph(), &graphs);
  onnx::GraphProto bundle;
  std::string text;
  for (const std::string& w : warnings) text += w + "\n";
  bundle.set_doc_string(text);
  for (onnx::GraphProto* g : graphs) {
    onnx::GraphProto* types = bundle.add_node()->add_attribute()->mutable_g();
    *types->mutable_value_info() = g->value_info();
    *types->mutable_output() = g->output();
  }
  return bundle.SerializeAsString();
}

bool DecodeTypes(const std::string& bytes, onnx::ModelProto* model,
                 std::vector<std::string>* warnings) {
  onnx::GraphProto bundle;
  std::vector<onnx::GraphProto*> graphs;
  AllGraphs(model->mutable_graph(), &graphs);
  if (!bundle.ParseFromString(bytes) ||
      bundle.node_size() != static_cast<int>(graphs.size())) {
    return false;
  }
  for (size_t i = 0; i < graphs.size(); ++i) {
    onnx::GraphProto* types = bundle.mutable_node(static_cast<int>(i))
                                  ->mutable_attribute(0)
                                  ->mutable_g();
    if (types->output_size() != graphs[i]->output_size()) return false;
    graphs[i]->mutable_value_info()->Swap(types->mutable_value_info());
    graphs[i]->mutable_output()->Swap(types->mutable_output());
  }
  const std::string& text = bundle.doc_string();
  for (size_t start = 0, end; start < text.size(); start = end + 1) {
    end = text.find('\n', start);
    warnings->push_back(text.substr(start, end - start));
  }
  return true;
}

}  // namespace

void InferShapes(onnx::ModelProto* model, std::vector<std::string>* warnings) {
  // No deadline: inference is linear in the model and the loader already
  // bounds the model's size.
  std::string fallback;
  Result<std::string> answer = RunIsolated(
      [model] {
        std::vector<std::string> child_warnings;
        InferInProcess(model, &child_warnings);
        return EncodeTypes(model, child_warnings);
      },
      IsolationLimits{}, "ONNX shape inference", &fallback);
  if (!fallback.empty()) {  // it ran here, on `model` itself
    std::vector<std::string> here;
    if (!answer || !DecodeTypes(*answer, model, &here)) {
      warnings->push_back(fallback);
    }
    warnings->insert(warnings->end(), here.begin(), here.end());
    return;
  }
  if (!answer) {
    warnings->push_back(answer.error().message +
                        " on this model, which is probably corrupted; "
                        "shapes it would have inferred are unknown");
    return;
  }
  if (!DecodeTypes(*answer, model, warnings)) {
    warnings->push_back(
        "shape inference failed in its worker process; "
        "shapes it would have inferred are unknown");
  }
}

}  // namespace tessera::graph::internal
