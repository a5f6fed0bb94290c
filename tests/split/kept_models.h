#ifndef TESSERA_TESTS_SPLIT_KEPT_MODELS_H_
#define TESSERA_TESTS_SPLIT_KEPT_MODELS_H_

// Loading models as `tessera split` does (graph::LoadOptions::keep_proto),
// for the split tests.

#include <stdexcept>
#include <string>

#include "graph/graph.h"
#include "tests/testlib/onnx_model_builder.h"

namespace tessera::split::testing {

// Loads the model at `path` with its ModelProto kept; throws (failing the
// test) when it does not load.
inline graph::Model LoadFile(const std::string& path) {
  graph::LoadOptions options;
  options.keep_proto = true;
  auto model = graph::LoadModel(path, options);
  if (!model) throw std::runtime_error(model.error().message);
  return std::move(model).value();
}

// Writes `b` to a scratch file and loads it as LoadFile does.
inline graph::Model Load(const testlib::OnnxModelBuilder& b) {
  testlib::TempDir dir;
  return LoadFile(dir.Write("m.onnx", b));
}

}  // namespace tessera::split::testing

#endif  // TESSERA_TESTS_SPLIT_KEPT_MODELS_H_
