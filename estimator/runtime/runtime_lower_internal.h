#ifndef TESSERA_ESTIMATOR_RUNTIME_RUNTIME_LOWER_INTERNAL_H_
#define TESSERA_ESTIMATOR_RUNTIME_RUNTIME_LOWER_INTERNAL_H_

// The lowering's two halves: runtime_fusions.cc finds which ONNX nodes the
// framework runs as one operator, runtime_lower.cc emits the operators.
// Nothing outside estimator/runtime/ includes this.

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "estimator/runtime/runtime_internal.h"

namespace tessera::estimator::internal {

inline bool In(std::string_view s,
               std::initializer_list<std::string_view> set) {
  return std::find(set.begin(), set.end(), s) != set.end();
}

// Float tensors of more than one element count as tensors for type
// promotion and saving; one-element constants are scalars.
inline bool IsScalarWeight(const graph::OpGraph& g, graph::TensorId t) {
  const graph::TensorView v = g.tensor(t);
  return graph::IsWeight(v.kind) && v.elements >= 0 && v.elements <= 1;
}

// Whether `t` has exactly one reader.
inline bool Single(const graph::OpGraph& g, graph::TensorId t) {
  return g.consumers(t).size() == 1;
}

inline graph::NodeId Producer(const graph::OpGraph& g, graph::TensorId t) {
  return t == graph::kNoTensor ? graph::kNoNode : g.tensor(t).producer;
}

inline bool IsGraphOutput(const graph::OpGraph& g, graph::TensorId t) {
  for (const graph::TensorId o : g.outputs()) {
    if (o == t) return true;
  }
  return false;
}

// A fused operator's kind, where its work or what autograd saves differs
// from its first node's.
enum class Fused : uint8_t {
  kNone,
  kGelu,   // GELU's erf or tanh decomposition
  kSdpa,   // scaled_dot_product_attention
  kSwish,  // SiLU or hardswish
};

// Which ONNX nodes run as one framework operator.
struct Fusions {
  // By NodeId: the group's anchor, the node the operator is emitted at
  // (kNoNode: the node runs alone).
  std::vector<graph::NodeId> owner;
  std::unordered_map<graph::NodeId, Fused> kind;  // by anchor
  // Linear layers (a Gemm, a MatMul by a weight), and those of them whose
  // bias Add is fused.
  std::unordered_set<graph::NodeId> linear, bias;
};

// The fusions of `g` under `options` (runtime_fusions.cc). `tensors` are
// the lowering's, with the weights and the host tensors marked.
Fusions FindFusions(const graph::OpGraph& g,
                    const std::vector<RTensor>& tensors,
                    const RuntimeOptions& options);

}  // namespace tessera::estimator::internal

#endif  // TESSERA_ESTIMATOR_RUNTIME_RUNTIME_LOWER_INTERNAL_H_
