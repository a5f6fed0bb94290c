#ifndef TESSERA_ESTIMATOR_MEMORY_MODEL_H_
#define TESSERA_ESTIMATOR_MEMORY_MODEL_H_

// Device memory a model needs: weights, activations (the peak of live
// tensors in inference; everything kept for backward in training),
// gradients, optimizer state and workspace; plus the headroom the CUDA
// context and allocator fragmentation take, reported apart.

#include <span>
#include <string_view>

#include "estimator/op_cost.h"

namespace tessera::estimator {

enum class Optimizer { kNone, kSgd, kSgdMomentum, kAdam };
// "none", "sgd", "sgd-momentum", "adam"; else kBadInput "optimizer 'TEXT':
// ..." (ProfileOptions::optimizer, as the errors of the parsers below name
// the field they fill, not a command's flag).
Result<Optimizer> ParseOptimizer(std::string_view text);
std::string_view OptimizerName(Optimizer o);

// The CUDA context with cuBLAS/cuDNN handles: 300-600 MiB on recent CUDA.
inline constexpr int64_t kCudaContextBytes = int64_t{512} << 20;
// Allocator fragmentation and cached blocks: PyTorch OOM post-mortems show
// 6-9% of the model's own need; 8% by default (--headroom overrides).
inline constexpr double kDefaultFragmentation = 0.08;

struct MemoryOptions {
  bool training = false;
  Optimizer optimizer = Optimizer::kAdam;
};

struct MemoryEstimate {
  int64_t weights = 0;
  int64_t gradients = 0;        // training: one per weight, same dtype
  int64_t optimizer_state = 0;  // training: moments (+ fp32 master copies)
  int64_t activations = 0;      // live at the peak / kept for backward
  int64_t workspace = 0;        // of the operator at the peak
  graph::NodeId peak_at = graph::kNoNode;  // inference: the peak operator
  int64_t total() const {
    return weights + gradients + optimizer_state + activations + workspace;
  }
};

// `weights` are the model's weight totals (graph::Model::weights): every
// weight stays resident. `costs` are CostAll(g).
MemoryEstimate EstimateMemory(const graph::OpGraph& g,
                              std::span<const OpCost> costs,
                              const graph::WeightStats& weights,
                              const MemoryOptions& options);

// CUDA context + `fragmentation` x the model's need.
int64_t HeadroomBytes(int64_t model_bytes, double fragmentation);

}  // namespace tessera::estimator

#endif  // TESSERA_ESTIMATOR_MEMORY_MODEL_H_
