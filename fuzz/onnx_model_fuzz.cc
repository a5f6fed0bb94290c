// LoadModelFromBytes: an ONNX file's bytes through parsing, validation,
// ONNX shape inference, shape folding and the OpGraph (tessera plan,
// profile, split and model jobs all load models this way); then, as the
// queue sizes a model job, the PyTorch runtime model in inference and
// training.
#include <cstddef>
#include <cstdint>
#include <string>

#include "estimator/estimator.h"
#include "estimator/runtime/runtime.h"
#include "graph/graph.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  tessera::graph::LoadOptions options;
  options.max_nodes = 5000;
  auto model = tessera::graph::LoadModelFromBytes(std::move(bytes), "fuzz.onnx",
                                                  options);
  if (!model || !tessera::estimator::CheckInputsBound(*model->graph)) return 0;
  static const auto catalog = tessera::estimator::DeviceCatalog::BuiltIn();
  const auto costs = tessera::estimator::CostAll(*model->graph);
  for (const bool training : {false, true}) {
    tessera::estimator::RuntimeOptions o;
    o.training = training;
    (void)tessera::estimator::EstimateRuntime(*model, costs,
                                              *catalog.Find("h100-sxm"), o);
  }
  return 0;
}
