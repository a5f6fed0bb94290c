// StripWeightData: a model's structure without its weights, for sending it
// to the queue service (tessera submit --model): tessera sizes a model from
// dims and dtypes, never from weight values, except the small integer
// tensors of shape arithmetic, which are kept.
#include <climits>

#include "graph/onnx_internal.h"

namespace tessera::graph {
namespace {

// The bytes a tensor's values take in the proto, whichever field holds them.
int64_t DataBytes(const onnx::TensorProto& t) {
  int64_t bytes =
      static_cast<int64_t>(t.raw_data().size()) +
      4 * (t.float_data_size() + t.int32_data_size()) +
      8 * (t.int64_data_size() + t.double_data_size() + t.uint64_data_size());
  for (const std::string& s : t.string_data()) {
    bytes += static_cast<int64_t>(s.size());
  }
  return bytes;
}

void StripTensor(onnx::TensorProto* t, int64_t keep_bytes) {
  const bool external = t->data_location() == onnx::TensorProto::EXTERNAL;
  if (!external && DataBytes(*t) <= keep_bytes) return;
  t->clear_raw_data();
  t->clear_float_data();
  t->clear_int32_data();
  t->clear_int64_data();
  t->clear_double_data();
  t->clear_uint64_data();
  t->clear_string_data();
  t->clear_external_data();
  t->clear_data_location();
}

void StripGraph(onnx::GraphProto* g, int64_t keep_bytes) {
  for (auto& t : *g->mutable_initializer()) StripTensor(&t, keep_bytes);
  for (auto& node : *g->mutable_node()) {
    for (auto& a : *node.mutable_attribute()) {
      if (a.has_t()) StripTensor(a.mutable_t(), keep_bytes);
      for (auto& t : *a.mutable_tensors()) StripTensor(&t, keep_bytes);
      if (a.has_g()) StripGraph(a.mutable_g(), keep_bytes);
      for (auto& sub : *a.mutable_graphs()) StripGraph(&sub, keep_bytes);
    }
  }
}

}  // namespace

Result<std::string> StripWeightData(const std::string& bytes,
                                    int64_t keep_bytes) {
  if (bytes.size() > static_cast<size_t>(INT32_MAX)) {
    return BadInput(
        "larger than 2 GiB, which protobuf cannot parse; save the weights as "
        "external data");
  }
  onnx::ModelProto model;
  if (bytes.empty() || !model.ParseFromString(bytes) || !model.has_graph()) {
    return BadInput(
        "not an ONNX model (the bytes do not parse as an ONNX "
        "ModelProto with a graph)");
  }
  StripGraph(model.mutable_graph(), keep_bytes);
  std::string out;
  if (!model.SerializeToString(&out)) {
    return Internal("the stripped model could not be serialized");
  }
  return out;
}

}  // namespace tessera::graph
