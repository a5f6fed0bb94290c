// LoadModelFromBytes: an ONNX file's bytes through parsing, validation,
// ONNX shape inference, shape folding and the OpGraph (tessera plan,
// profile, split and model jobs all load models this way).
#include <cstddef>
#include <cstdint>
#include <string>

#include "graph/graph.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  (void)tessera::graph::LoadModelFromBytes(std::move(bytes), "fuzz.onnx", {});
  return 0;
}
