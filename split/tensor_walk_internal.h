#ifndef TESSERA_SPLIT_TENSOR_WALK_INTERNAL_H_
#define TESSERA_SPLIT_TENSOR_WALK_INTERNAL_H_

// Visiting every tensor a graph stores (inside split/ only).

#include <onnx/onnx_pb.h>

namespace tessera::split::internal {

// Calls f on every tensor stored in `g`: initializers and node attributes
// (a Constant's value), subgraphs included.
template <typename F>
void ForEachMutableTensor(onnx::GraphProto* g, F&& f) {
  for (auto& t : *g->mutable_initializer()) f(&t);
  for (auto& node : *g->mutable_node()) {
    for (auto& a : *node.mutable_attribute()) {
      if (a.has_t()) f(a.mutable_t());
      for (auto& t : *a.mutable_tensors()) f(&t);
      if (a.has_g()) ForEachMutableTensor(a.mutable_g(), f);
      for (auto& sub : *a.mutable_graphs()) ForEachMutableTensor(&sub, f);
    }
  }
}

template <typename F>
void ForEachTensor(const onnx::GraphProto& g, F&& f) {
  for (const auto& t : g.initializer()) f(t);
  for (const auto& node : g.node()) {
    for (const auto& a : node.attribute()) {
      if (a.has_t()) f(a.t());
      for (const auto& t : a.tensors()) f(t);
      if (a.has_g()) ForEachTensor(a.g(), f);
      for (const auto& sub : a.graphs()) ForEachTensor(sub, f);
    }
  }
}

}  // namespace tessera::split::internal

#endif  // TESSERA_SPLIT_TENSOR_WALK_INTERNAL_H_
