// Memory-bound operators: element-wise math, normalizations, reductions,
// interpolation, data movement, views and Constant. Their bytes come from
// the dispatcher (op_cost.cc); here only their arithmetic, a documented
// number of flops per element.
#include <algorithm>
#include <cstdint>
#include <string_view>

#include "estimator/op_cost_internal.h"

namespace tessera::estimator::internal {

using graph::TensorView;

namespace {

// BatchNormalization in inference: per-channel scale' = gamma /
// sqrt(var + eps) and shift' = beta - mean * scale' (4 flops per channel),
// then y = x * scale' + shift' (2 flops per element).
constexpr int64_t kBatchNormElementFlops = 2;
constexpr int64_t kBatchNormChannelFlops = 4;
// Training mode also computes the batch statistics: mean (1) and variance
// (subtract, square, add = 3) per element.
constexpr int64_t kBatchNormStatsFlops = 4;
// LRN: per element a sum of `size` squares (2 flops each), then scale,
// power and divide (3).
constexpr int64_t kLrnFlopsPerTap = 2;
constexpr int64_t kLrnFixedFlops = 3;
// Interpolation taps per resized axis.
constexpr int64_t kNearestTaps = 1;
constexpr int64_t kLinearTaps = 2;
constexpr int64_t kCubicTaps = 4;

// Taps per axis for an interpolation `mode` (Resize, Upsample, GridSample).
int64_t TapsPerAxis(std::string_view mode) {
  if (mode == "linear" || mode == "bilinear" || mode == "trilinear") {
    return kLinearTaps;
  }
  if (mode == "cubic" || mode == "bicubic") return kCubicTaps;
  return kNearestTaps;
}

// Number of axes whose extent Resize changes; every axis past the first two
// when the shapes are not known (the usual spatial resize).
int ResizedAxes(const Op& op) {
  if (!op.has_input(0) || !op.has_output(0)) return 0;
  const TensorView x = op.input(0);
  const TensorView y = op.output(0);
  if (!x.dims || !y.dims || x.dims->size() != y.dims->size()) {
    return x.dims ? std::max(static_cast<int>(x.dims->size()) - 2, 0) : 0;
  }
  int axes = 0;
  for (size_t i = 0; i < x.dims->size(); ++i) {
    const int64_t a = (*x.dims)[i];
    const int64_t b = (*y.dims)[i];
    if (!graph::IsKnownDim(a) || !graph::IsKnownDim(b) || a != b) ++axes;
  }
  return axes;
}

int64_t Power(const Op& op, int64_t base, int exponent) {
  int64_t r = 1;
  for (int i = 0; i < exponent; ++i) r = op.Mul(r, base);
  return r;
}

}  // namespace

// per_element() flops per element of output 0 (element-wise math).
void CostPerOutputElement(const Op& op) {
  op.AddFlops(op.Mul(op.OutputElements(0), op.per_element()));
}

// per_element() flops per element of input 0 (reductions, softmax,
// normalizations, global pooling).
void CostPerInputElement(const Op& op) {
  op.AddFlops(op.Mul(op.InputElements(0), op.per_element()));
}

// Sum / Mean / Max / Min of k inputs: k - 1 operations per output element
// (at least one; Mean's final divide is folded into that one).
void CostVariadic(const Op& op) {
  int64_t inputs = 0;
  for (size_t i = 0; i < op.node().inputs.size(); ++i) {
    inputs += op.has_input(i) ? 1 : 0;
  }
  op.AddFlops(op.Mul(op.OutputElements(0), std::max<int64_t>(inputs - 1, 1)));
}

// BatchNormalization(X [N, C, ...], scale, B, mean, var): see the constants.
// Training mode (training_mode = 1, or the running-stat outputs present)
// adds the batch statistics.
void CostBatchNorm(const Op& op) {
  const int64_t elements = op.InputElements(0);
  const bool training = op.Int("training_mode", 0) != 0 || op.has_output(1);
  const int64_t per_element =
      kBatchNormElementFlops + (training ? kBatchNormStatsFlops : 0);
  op.AddFlops(op.Mul(elements, per_element));
  const int64_t channels = op.has_input(1) ? op.InputElements(1) : 0;
  op.AddFlops(op.Mul(channels, kBatchNormChannelFlops));
}

// LRN: 2 x size + 3 flops per element.
void CostLrn(const Op& op) {
  const int64_t size = std::max<int64_t>(op.Int("size", 1), 1);
  const int64_t per_element =
      op.Add(op.Mul(size, kLrnFlopsPerTap), kLrnFixedFlops);
  op.AddFlops(op.Mul(op.InputElements(0), per_element));
}

// Resize / Upsample: output elements x taps^k, k the number of resized axes
// (nearest 1 tap, linear 2, cubic 4 per axis).
void CostResize(const Op& op) {
  const int64_t taps = TapsPerAxis(op.String("mode", "nearest"));
  op.AddFlops(op.Mul(op.OutputElements(0), Power(op, taps, ResizedAxes(op))));
}

// GridSample(X [N, C, D...], grid): output elements x taps^(rank - 2),
// bilinear by default.
void CostGridSample(const Op& op) {
  const int64_t taps = TapsPerAxis(op.String("mode", "bilinear"));
  const int rank = op.has_input(0) ? op.Rank(op.input(0)) : -1;
  const int axes = std::max(rank - 2, 0);
  op.AddFlops(op.Mul(op.OutputElements(0), Power(op, taps, axes)));
}

// Pure data movement (Concat, Gather, Transpose, ...): bytes only.
void CostDataMovement(const Op&) {}

// Reshape, Squeeze, Unsqueeze, Flatten, Identity: the output is a view of
// the input; no data moves, so no bytes are read or written. output_bytes
// still names the tensor the view produces.
void CostView(const Op& op) {
  OpCost& c = op.cost();
  c.bytes_read = c.bytes_written = c.weight_bytes = 0;
}

// Constant: no compute and no traffic, whatever its value's type; the value
// is counted as weight bytes where a consumer reads it.
void CostConstant(const Op& op) {
  OpCost& c = op.cost();
  c.bytes_read = c.bytes_written = c.weight_bytes = c.output_bytes = 0;
  c.exact = true;
  c.note.clear();
}

}  // namespace tessera::estimator::internal
