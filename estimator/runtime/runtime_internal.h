#ifndef TESSERA_ESTIMATOR_RUNTIME_RUNTIME_INTERNAL_H_
#define TESSERA_ESTIMATOR_RUNTIME_RUNTIME_INTERNAL_H_

// The lowered graph the runtime models share (runtime_lower.cc builds it
// with runtime_fusions.cc's fusions, runtime.cc times it and
// runtime_memory.cc follows its memory). Nothing outside estimator/
// includes this.

#include <cstdint>
#include <span>
#include <vector>

#include "estimator/runtime/runtime.h"

namespace tessera::estimator::internal {

enum class Exec : uint8_t {
  kKernel,  // launches GPU work
  kView,    // host dispatch only; output aliases input 0
  kHost,    // shape arithmetic the framework does on the host (free)
};

// What kind of work a kernel op does: a compute-bound KernelKind or a
// memory-bound class.
enum class Work : uint8_t {
  kGemm,
  kConv,
  kSpatialConv,
  kDepthwise,
  kAttention,  // fused scaled-dot-product attention
  kElementwise,
  kNormalization,
  kReduction,
  kDataMovement,
};

// One tensor as the runtime holds it.
struct RTensor {
  int64_t bytes = 0;      // in the runtime's dtype (autocast may halve it)
  bool on_device = true;  // false: host shape arithmetic
  bool weight = false;    // a parameter or buffer (resident)
  bool param = false;     // trainable (gets a gradient and optimizer state)
  bool tied = false;      // the export's copy of a tied embedding: the
                          // framework holds the embedding only
  bool grad = false;      // training: its gradient flows back
  bool half = false;      // autocast: held in the low precision
};

// A convolution cuDNN can run by FFT (unit strides and dilations, known
// NCHW shapes): its batch, channels and the input plane padded by the
// kernel, (H + kh - 1) x (W + kw - 1). Only spatial convolutions (group 1,
// a kernel larger than 1x1: op_cost_conv.cc) carry one.
struct FftShape {
  double batch = 0, in_channels = 0, out_channels = 0;
  int64_t padded_h = 0, padded_w = 0;
  bool valid() const { return padded_h > 0 && padded_w > 0; }
};

// One operator as the runtime dispatches it.
struct ROp {
  std::vector<graph::NodeId> nodes;  // the ONNX nodes it stands for
  Exec exec = Exec::kKernel;
  // A view the framework does not even dispatch (graph::IsNoOp: an
  // Identity, a Cast to the same type, eval-mode Dropout): no host time,
  // no autograd node.
  bool free = false;
  Work work = Work::kElementwise;
  bool low_precision = false;  // autocast: computes in bf16/fp16
  bool tensor_cores = false;
  double flops = 0;
  double bytes = 0;                      // memory traffic of the forward kernel
  std::vector<graph::TensorId> inputs;   // activations, distinct
  std::vector<graph::TensorId> weights;  // parameters and buffers read
  std::vector<graph::TensorId> outputs;  // what leaves the op
  bool in_place = false;                 // output 0 reuses input 0's buffer
  // Extra kernels before the op: per input, the bytes of the contiguous
  // copy or autocast cast made of it (0: none); per weight, its cast's.
  // Each is a buffer, transient unless saved.
  std::vector<int64_t> input_copy;
  std::vector<int64_t> weight_cast;
  // Training: which inputs/outputs autograd saves (indices into inputs /
  // outputs; a saved input that was copied or cast is saved as its copy),
  // and extra saved bytes (indices, statistics).
  std::vector<size_t> saves_inputs, saves_outputs;
  bool saves_weight_casts = false;
  int64_t saved_extra_bytes = 0;
  int64_t workspace_bytes = 0;  // transient, while it runs
  int blas_api = 0;  // 0: none; 1: cuBLASLt (linear); 2: cuBLAS (bmm/mm)
  int kernels = 1;
  bool has_bias = false;
  FftShape fft;  // spatial convolutions only
};

struct Lowered {
  std::vector<RTensor> tensors;  // by TensorId of the main graph
  std::vector<ROp> ops;          // in execution order
  int64_t param_bytes = 0;       // trainable parameters (fp32), tied once
  int64_t buffer_bytes = 0;      // other resident tensors
  int64_t param_tensors = 0;
};

Lowered Lower(const graph::Model& model, std::span<const OpCost> costs,
              const RuntimeOptions& options);

// Matrix products, convolutions and fused attention are bound by compute,
// the rest by memory bandwidth.
inline bool ComputeBound(Work w) {
  return w == Work::kGemm || w == Work::kConv || w == Work::kSpatialConv ||
         w == Work::kDepthwise || w == Work::kAttention;
}

// Training: whether a gradient flows back through `op` (one of its outputs
// is downstream of a parameter), so that autograd records it.
inline bool HasGrad(const Lowered& low, const ROp& op) {
  for (const graph::TensorId t : op.outputs) {
    if (low.tensors[t].grad) return true;
  }
  return false;
}

// Follows the memory of a step of `low` through the caching allocator
// (runtime_memory.cc) and fills `e`'s memory fields: weights, workspace,
// saved activations, gradients, optimizer state and the two peaks.
void FollowMemory(const graph::Model& model, const Lowered& low,
                  const RuntimeOptions& options, RuntimeEstimate& e);

}  // namespace tessera::estimator::internal

#endif  // TESSERA_ESTIMATOR_RUNTIME_RUNTIME_INTERNAL_H_
