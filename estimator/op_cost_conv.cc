// Convolutions and pooling. Conv MACs follow torchvision's published GMACs:
// N x Cout x prod(output spatial) x (Cin / group) x prod(kernel), i.e.
// output elements x (Cin / group) x prod(kernel); bias adds are flops only.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include "estimator/op_cost_internal.h"

namespace tessera::estimator::internal {

using graph::TensorView;

namespace {

// A bilinear sample (DeformConv): 4 taps, a multiply-add each.
constexpr int64_t kBilinearSampleFlops = 8;
// An input index that no operator has (an absent optional input).
constexpr size_t kNoInput = std::numeric_limits<size_t>::max();

// floor(a / b) and ceil(a / b) for b > 0, any sign of a.
int64_t FloorDiv(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}
int64_t CeilDiv(int64_t a, int64_t b) { return -FloorDiv(-a, b); }

// Attribute `name` at spatial axis `i`, or `fallback` when absent.
int64_t AttrAt(const Op& op, std::string_view name, size_t i,
               int64_t fallback) {
  const auto v = op.Ints(name);
  return i < v.size() ? v[i] : fallback;
}

// Output extent of spatial axis `i` (of `spatial` axes) for input extent
// `in` and kernel `k`, from strides, dilations, pads, auto_pad, ceil_mode.
int64_t WindowOutput(const Op& op, size_t i, size_t spatial, int64_t in,
                     int64_t k) {
  const int64_t stride = std::max<int64_t>(AttrAt(op, "strides", i, 1), 1);
  const int64_t dilation = AttrAt(op, "dilations", i, 1);
  const int64_t span = dilation * (k - 1) + 1;
  const std::string_view auto_pad = op.String("auto_pad", "NOTSET");
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    return CeilDiv(in, stride);
  }
  int64_t padded = in - span;
  if (auto_pad != "VALID") {
    padded += AttrAt(op, "pads", i, 0) + AttrAt(op, "pads", i + spatial, 0);
  }
  const bool ceil_mode = op.Int("ceil_mode", 0) != 0;
  const int64_t steps =
      ceil_mode ? CeilDiv(padded, stride) : FloorDiv(padded, stride);
  return std::max<int64_t>(steps + 1, 0);
}

// Output elements of a windowed operator on `x` ([N, C, D...]) with
// `channels` output channels: the inferred output shape when known, else
// from the attributes. `kernel(i)` gives the window extent of axis i.
template <typename Kernel>
int64_t WindowOutputElements(const Op& op, const TensorView& x,
                             int64_t channels, Kernel kernel) {
  if (op.has_output(0) && op.output(0).elements >= 0) {
    return op.output(0).elements;
  }
  const int rank = op.Rank(x);
  if (rank < 2) return 0;
  const size_t spatial = static_cast<size_t>(rank - 2);
  int64_t elements = op.Mul(op.Dim(x, 0), channels);
  for (size_t i = 0; i < spatial; ++i) {
    const int64_t in = op.Dim(x, static_cast<int>(i) + 2);
    elements = op.Mul(elements, WindowOutput(op, i, spatial, in, kernel(i)));
  }
  return elements;
}

// Conv-like work of X (input `ix`) with W [Cout, Cin / group, k...] (input
// `iw`) and an optional bias (input `ib`): output elements x Cin / group x
// prod(kernel) MACs, one flop per output element for the bias; the class
// becomes kDepthwiseConvolution when each group has one input channel,
// kSpatialConvolution when the group is 1 and the kernel larger than 1.
// Returns the output elements.
int64_t ConvLike(const Op& op, size_t ix, size_t iw, size_t ib) {
  if (!op.has_input(ix) || !op.has_input(iw)) {
    op.Flag(std::string(op.node().op_type) +
            ": data or weight input missing: not counted");
    return 0;
  }
  const TensorView w = op.input(iw);
  const int64_t outputs = WindowOutputElements(
      op, op.input(ix), op.Dim(w, 0),
      [&](size_t i) { return op.Dim(w, static_cast<int>(i) + 2); });
  op.AddMacs(op.Mul(outputs, op.DimProduct(w, 1)));
  // One input channel per group (W [Cout, 1, k...], group > 1): depthwise.
  if (op.Int("group", 1) > 1 && op.Rank(w) >= 2 && op.Dim(w, 1) == 1) {
    op.cost().op_class = OpClass::kDepthwiseConvolution;
  } else if (op.Int("group", 1) == 1 && op.DimProduct(w, 2) > 1) {
    op.cost().op_class = OpClass::kSpatialConvolution;
  }
  if (ib != kNoInput && op.has_input(ib)) op.AddFlops(outputs);
  return outputs;
}

}  // namespace

// Conv(X, W, B), 1-D/2-D/3-D, grouped, dilated, strided, padded.
void CostConv(const Op& op) { ConvLike(op, 0, 1, 2); }

// ConvInteger(x, w, x_zero_point, w_zero_point): int8 MACs as Conv.
void CostConvInteger(const Op& op) { ConvLike(op, 0, 1, kNoInput); }

// QLinearConv(x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B): int8
// MACs as Conv, plus requantizing each output (one flop).
void CostQLinearConv(const Op& op) { op.AddFlops(ConvLike(op, 0, 3, 8)); }

// DeformConv(X, W, offset, B, mask): Conv MACs plus one bilinear sample per
// (output position, input channel, kernel tap).
void CostDeformConv(const Op& op) {
  const int64_t outputs = ConvLike(op, 0, 1, 3);
  if (!op.has_input(0) || !op.has_input(1)) return;
  const TensorView w = op.input(1);
  const int64_t positions = outputs / std::max<int64_t>(op.Dim(w, 0), 1);
  const int64_t samples =
      op.Mul(op.Mul(positions, op.Dim(op.input(0), 1)), op.DimProduct(w, 2));
  op.AddFlops(op.Mul(samples, kBilinearSampleFlops));
}

// ConvTranspose(X, W [Cin, Cout / group, k...], B): each input element is
// multiplied into Cout / group x prod(kernel) outputs, so MACs = X elements
// x Cout / group x prod(kernel); the bias adds one flop per output element.
void CostConvTranspose(const Op& op) {
  if (!op.has_input(0) || !op.has_input(1)) {
    op.Flag("ConvTranspose: data or weight input missing: not counted");
    return;
  }
  op.AddMacs(op.Mul(op.InputElements(0), op.DimProduct(op.input(1), 1)));
  if (op.has_input(2)) op.AddFlops(op.OutputElements(0));
}

// MaxPool / AveragePool / LpPool: output elements x prod(kernel_shape)
// window reads, per_element() flops each (a compare, an add, or a power and
// an add). No MACs.
void CostPool(const Op& op) {
  if (!op.has_input(0)) return;
  const auto kernel = op.Ints("kernel_shape");
  int64_t window = 1;
  for (const int64_t k : kernel) window = op.Mul(window, k);
  const TensorView x = op.input(0);
  const int64_t outputs = WindowOutputElements(
      op, x, op.Dim(x, 1),
      [&](size_t i) { return i < kernel.size() ? kernel[i] : int64_t{1}; });
  op.AddFlops(op.Mul(op.Mul(outputs, window), op.per_element()));
}

}  // namespace tessera::estimator::internal
