// Lowers an ONNX graph to the operators a framework dispatches
// (docs/estimator.md, "Runtimes"):
// - shape arithmetic (Shape and what only reads its results) runs on the
//   host and costs nothing on the GPU;
// - views (Reshape, Flatten, Squeeze, Unsqueeze, Identity, Transpose,
//   Split, Expand, Slice) move nothing, but a view of a transposed tensor
//   that must be contiguous (a reshape, a batched matmul operand) is a copy;
// - fusions the export undid (runtime_fusions.cc finds them): a MatMul by a
//   weight plus its bias Add is one linear (addmm); the erf and tanh
//   decompositions of GELU are one kernel, and so are x * sigmoid(x) (SiLU)
//   and x * hardsigmoid(x) (hardswish); unmasked attention is one
//   scaled_dot_product_attention (Attention::kAuto); a constant Pad before
//   a pooling or a convolution is its padding; ONNX Runtime also folds
//   BatchNormalization and activations into Conv;
// - in-place activations (torchvision's ReLU(inplace=True)) reuse their
//   input's buffer;
// - autocast (Amp) casts inputs of matrix products and convolutions down and
//   of softmax/normalizations/reductions up, weights once per forward;
// - training: what autograd saves for backward, per operator type.

#include <algorithm>
#include <cmath>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "estimator/runtime/runtime_lower_internal.h"
#include "graph/noop.h"

namespace tessera::estimator::internal {
namespace {

using graph::kNoNode;
using graph::kNoTensor;
using graph::NodeId;
using graph::NodeView;
using graph::OpGraph;
using graph::TensorId;

class Lowering {
 public:
  Lowering(const graph::Model& model, std::span<const OpCost> costs,
           const RuntimeOptions& options)
      : g_(*model.graph), costs_(costs), o_(options) {}

  Lowered Run() {
    InitTensors();
    MarkHost();
    // Which nodes run as one operator (runtime_fusions.cc).
    fusions_ = FindFusions(g_, out_.tensors, o_);
    Emit();
    CountWeights();
    return std::move(out_);
  }

 private:
  // --- tensors -------------------------------------------------------------
  void InitTensors() {
    out_.tensors.resize(g_.num_tensors());
    layout_.assign(g_.num_tensors(), 0);
    for (TensorId t = 0; t < g_.num_tensors(); ++t) {
      const graph::TensorView v = g_.tensor(t);
      RTensor& r = out_.tensors[t];
      r.bytes = std::max<int64_t>(v.bytes, 0);
      r.weight = graph::IsWeight(v.kind);
    }
  }

  // Host tensors: Shape/Size outputs and whatever reads only host tensors
  // and small constants.
  void MarkHost() {
    host_node_.assign(g_.num_nodes(), false);
    for (const NodeId n : g_.topological_order()) {
      const NodeView v = g_.node(n);
      // A weight under another name (graph::IsWeightAlias) is the weight
      // itself to the framework: nothing runs, the output stays on device.
      if (graph::IsWeightAlias(g_, n)) {
        host_node_[n] = true;
        continue;
      }
      bool host = v.op_type == "Shape" || v.op_type == "Size" ||
                  v.op_type == "Constant";
      if (!host && v.op_type != "ConstantOfShape") {
        bool any_host = false, all_host = true;
        for (const TensorId t : v.inputs) {
          if (t == kNoTensor) continue;
          const graph::TensorView tv = g_.tensor(t);
          if (!out_.tensors[t].on_device) {
            any_host = true;
          } else if (!(graph::IsWeight(tv.kind) && tv.elements >= 0 &&
                       tv.elements <= 64)) {
            all_host = false;
          }
        }
        host = any_host && all_host;
      }
      host_node_[n] = host;
      if (host && v.op_type != "Constant") {
        for (const TensorId t : v.outputs) {
          if (t != kNoTensor) out_.tensors[t].on_device = false;
        }
      }
    }
  }

  // --- emission --------------------------------------------------------------
  // Layout of a tensor: 0 contiguous, 1 last two axes swapped (cuBLAS takes
  // it as is), 2 strided along the last axis (views keep it), 3 permuted.
  void Emit() {
    std::unordered_map<NodeId, std::vector<NodeId>> members;
    for (const NodeId n : g_.topological_order()) {
      if (fusions_.owner[n] != kNoNode) members[fusions_.owner[n]].push_back(n);
    }
    for (const NodeId n : g_.topological_order()) {
      if (fusions_.owner[n] != kNoNode && fusions_.owner[n] != n) continue;
      std::vector<NodeId> nodes =
          fusions_.owner[n] == n ? members[n] : std::vector<NodeId>{n};
      EmitOp(n, nodes);
    }
  }

  // One operator: the group of `nodes` (one node, or a fusion's) emitted at
  // `anchor`, its first node in topological order.
  void EmitOp(NodeId anchor, const std::vector<NodeId>& nodes) {
    const NodeView v = g_.node(anchor);
    ROp op;
    op.nodes = nodes;
    GroupTensors(op);
    double flops = 0;
    for (const NodeId m : nodes) flops += static_cast<double>(costs_[m].flops);
    op.flops = flops;

    const std::string_view type = v.op_type;
    if (host_node_[anchor]) {
      op.exec = Exec::kHost;
      out_.ops.push_back(std::move(op));
      return;
    }
    const bool noop = graph::IsNoOp(g_, anchor) && nodes.size() == 1;
    const bool view =
        (noop || In(type, {"Reshape", "Flatten", "Squeeze", "Unsqueeze",
                           "Transpose", "Split", "Expand", "Slice"})) &&
        nodes.size() == 1;
    const auto it = fusions_.kind.find(anchor);
    const Fused fused = it == fusions_.kind.end() ? Fused::kNone : it->second;
    if (view) {
      op.free = noop;
      EmitView(anchor, op);
      return;
    }
    Autocast(anchor, fused, op);
    // Contiguity copies: a batched matmul or a linear layer reading a
    // permuted tensor copies it first (fused attention takes any strides).
    if ((type == "MatMul" || fusions_.linear.count(anchor)) &&
        fused != Fused::kSdpa) {
      for (size_t i = 0; i < op.inputs.size(); ++i) {
        if (layout_[op.inputs[i]] == 3 && op.input_copy[i] == 0)
          op.input_copy[i] = out_.tensors[op.inputs[i]].bytes;
      }
    }
    WorkAndTraffic(anchor, fused, op);
    // In-place activations.
    if (o_.runtime == Runtime::kPyTorch &&
        In(type, {"Relu", "Clip", "LeakyRelu"}) && nodes.size() == 1 &&
        !op.inputs.empty() && Single(g_, op.inputs[0]) &&
        Producer(g_, op.inputs[0]) != kNoNode && layout_[op.inputs[0]] == 0 &&
        !IsGraphOutput(g_, op.inputs[0])) {
      op.in_place = true;
    }
    if (o_.training) Saves(anchor, fused, op);
    out_.ops.push_back(std::move(op));
  }

  // The group's tensors: what it reads from outside (activations as inputs,
  // weights apart; scalar constants and host values are neither) and what
  // leaves it (read outside the group, or an output of the graph).
  void GroupTensors(ROp& op) const {
    const std::unordered_set<NodeId> set(op.nodes.begin(), op.nodes.end());
    for (const NodeId m : op.nodes) {
      for (const TensorId t : g_.node(m).inputs) {
        if (t == kNoTensor) continue;
        const NodeId p = Producer(g_, t);
        if (p != kNoNode && set.count(p)) continue;
        auto& list = out_.tensors[t].weight ? op.weights : op.inputs;
        if (out_.tensors[t].weight && IsScalarWeight(g_, t)) continue;
        if (!out_.tensors[t].weight && !out_.tensors[t].on_device) continue;
        if (std::find(list.begin(), list.end(), t) == list.end())
          list.push_back(t);
      }
      for (const TensorId o : g_.node(m).outputs) {
        if (o == kNoTensor) continue;
        bool leaves = false;
        for (const NodeId c : g_.consumers(o)) leaves |= !set.count(c);
        for (const TensorId go : g_.outputs()) leaves |= go == o;
        if (leaves) op.outputs.push_back(o);
      }
    }
  }

  // Dtypes under autocast: matrix products and convolutions compute in the
  // low precision (their float inputs and weights cast down), the fp32 list
  // (softmax, normalizations, reductions and the like) casts low-precision
  // inputs up, anything else computes in the low precision when every float
  // input is in it. Sizes the op's per-input copies and per-weight casts,
  // and marks the outputs held in the low precision.
  void Autocast(NodeId anchor, Fused fused, ROp& op) {
    const std::string_view type = g_.node(anchor).op_type;
    const bool amp = o_.amp != Amp::kNone;
    const OpClass cls = costs_[anchor].op_class;
    const bool product = fused == Fused::kSdpa ||
                         fusions_.linear.count(anchor) || type == "MatMul" ||
                         cls == OpClass::kConvolution ||
                         cls == OpClass::kSpatialConvolution ||
                         cls == OpClass::kDepthwiseConvolution;
    const bool fp32_list =
        In(type, {"Softmax", "LogSoftmax", "LayerNormalization",
                  "GroupNormalization", "InstanceNormalization", "Pow", "Exp",
                  "Log", "ReduceSum", "ReduceL2", "CumSum", "ReduceLogSumExp"});
    bool out_half = false;
    op.input_copy.assign(op.inputs.size(), 0);
    op.weight_cast.assign(op.weights.size(), 0);
    if (amp && product) {
      op.low_precision = true;
      out_half = true;
      for (size_t i = 0; i < op.inputs.size(); ++i) {
        const TensorId t = op.inputs[i];
        if (graph::IsFloat(g_.tensor(t).dtype) && !out_.tensors[t].half)
          op.input_copy[i] = out_.tensors[t].bytes / 2;
      }
      for (size_t i = 0; i < op.weights.size(); ++i) {
        const TensorId t = op.weights[i];
        if (graph::IsFloat(g_.tensor(t).dtype) && g_.tensor(t).bytes > 0)
          op.weight_cast[i] = g_.tensor(t).bytes / 2;
      }
    } else if (amp && fp32_list) {
      for (size_t i = 0; i < op.inputs.size(); ++i) {
        if (out_.tensors[op.inputs[i]].half)
          op.input_copy[i] = out_.tensors[op.inputs[i]].bytes * 2;
      }
    } else if (amp) {
      // Promotion: low precision only when every float tensor input is.
      bool any = false, all = true;
      for (const TensorId t : op.inputs) {
        if (!graph::IsFloat(g_.tensor(t).dtype)) continue;
        any = true;
        all &= out_.tensors[t].half;
      }
      if (type != "BatchNormalization") {
        for (const TensorId t : op.weights) {
          if (graph::IsFloat(g_.tensor(t).dtype)) all = false;
        }
      }
      out_half = any && all;
    }
    for (const TensorId o : op.outputs) {
      if (out_half && g_.tensor(o).dtype == graph::DataType::kFloat32) {
        out_.tensors[o].half = true;
        out_.tensors[o].bytes = std::max<int64_t>(g_.tensor(o).bytes, 0) / 2;
      }
    }
  }

  // What the op's kernel does (a compute-bound kind or a memory-bound
  // class) and the bytes it moves; for a product, the cuBLAS API it goes
  // through and whether it adds a bias; whether it runs on tensor cores.
  void WorkAndTraffic(NodeId anchor, Fused fused, ROp& op) const {
    const NodeView v = g_.node(anchor);
    const std::string_view type = v.op_type;
    const OpClass cls = costs_[anchor].op_class;
    int64_t in_bytes = 0, out_bytes = 0, w_bytes = 0;
    for (const TensorId t : op.inputs) in_bytes += out_.tensors[t].bytes;
    for (const TensorId t : op.outputs) out_bytes += out_.tensors[t].bytes;
    for (const TensorId t : op.weights) {
      w_bytes +=
          op.low_precision ? out_.tensors[t].bytes / 2 : out_.tensors[t].bytes;
    }
    op.bytes = static_cast<double>(in_bytes + out_bytes + w_bytes);
    if (fused == Fused::kSdpa) {
      op.work = Work::kAttention;
    } else if (fusions_.linear.count(anchor) || type == "MatMul") {
      op.work = Work::kGemm;
      op.blas_api = fusions_.linear.count(anchor) &&
                            (fusions_.bias.count(anchor) || type == "Gemm")
                        ? 1
                        : 2;
      op.has_bias = fusions_.bias.count(anchor) ||
                    (type == "Gemm" && v.inputs.size() > 2);
    } else if (cls == OpClass::kConvolution) {
      op.work = Work::kConv;
      op.has_bias = v.inputs.size() > 2 && v.inputs[2] != kNoTensor;
    } else if (cls == OpClass::kSpatialConvolution) {
      op.work = Work::kSpatialConv;
      op.has_bias = v.inputs.size() > 2 && v.inputs[2] != kNoTensor;
      op.fft = Fft(anchor);
    } else if (cls == OpClass::kDepthwiseConvolution) {
      op.work = Work::kDepthwise;
      op.has_bias = v.inputs.size() > 2 && v.inputs[2] != kNoTensor;
    } else if (fused == Fused::kGelu || fused == Fused::kSwish) {
      op.work = Work::kElementwise;
    } else if (cls == OpClass::kNormalization) {
      op.work = Work::kNormalization;
    } else if (cls == OpClass::kReduction) {
      op.work = Work::kReduction;
    } else if (cls == OpClass::kDataMovement) {
      op.work = Work::kDataMovement;
    } else {
      op.work = Work::kElementwise;
    }
    op.tensor_cores =
        (op.work == Work::kGemm || op.work == Work::kConv ||
         op.work == Work::kSpatialConv || op.work == Work::kAttention) &&
        (op.low_precision || o_.tf32);
  }

  // The FFT geometry of a Conv node, empty when cuDNN's FFT algorithms
  // cannot run it (strides or dilations other than 1, unknown shapes).
  FftShape Fft(NodeId n) const {
    const NodeView v = g_.node(n);
    if (v.op_type != "Conv" || v.inputs.size() < 2 || v.outputs.empty())
      return {};
    for (const char* attr : {"strides", "dilations"}) {
      for (const int64_t s : g_.GetInts(n, attr)) {
        if (s != 1) return {};
      }
    }
    const auto dims4 = [&](TensorId t) -> const int64_t* {
      if (t == kNoTensor) return nullptr;
      const auto d = g_.tensor(t).dims;
      if (!d || d->size() != 4) return nullptr;
      for (const int64_t x : *d) {
        if (x <= 0) return nullptr;
      }
      return d->data();
    };
    const int64_t* x = dims4(v.inputs[0]);
    const int64_t* w = dims4(v.inputs[1]);
    const int64_t* y = dims4(v.outputs[0]);
    if (!x || !w || !y) return {};
    // Planes no GPU holds: no FFT (and no overflow padding them).
    constexpr int64_t kMaxSide = int64_t{1} << 30;
    if (x[2] > kMaxSide || x[3] > kMaxSide || w[2] > kMaxSide ||
        w[3] > kMaxSide)
      return {};
    FftShape f;
    f.batch = static_cast<double>(x[0]);
    f.in_channels = static_cast<double>(x[1]);
    f.out_channels = static_cast<double>(y[1]);
    f.padded_h = x[2] + w[2] - 1;
    f.padded_w = x[3] + w[3] - 1;
    return f;
  }

  void EmitView(NodeId n, ROp& op) {
    const NodeView v = g_.node(n);
    op.exec = Exec::kView;
    op.work = Work::kDataMovement;
    const TensorId in = v.inputs.empty() ? kNoTensor : v.inputs[0];
    const int in_layout = in == kNoTensor ? 0 : layout_[in];
    int layout = in_layout;
    if (v.op_type == "Transpose") {
      const auto perm = g_.GetInts(n, "perm");
      const size_t r = perm.size();
      bool last2 = r >= 2 && perm[r - 1] == static_cast<int64_t>(r - 2) &&
                   perm[r - 2] == static_cast<int64_t>(r - 1);
      for (size_t i = 0; last2 && i + 2 < r; ++i)
        last2 = perm[i] == static_cast<int64_t>(i);
      bool identity = true;
      for (size_t i = 0; i < r; ++i)
        identity &= perm[i] == static_cast<int64_t>(i);
      layout = identity ? in_layout : (in_layout == 0 && last2 ? 1 : 3);
    } else if (v.op_type == "Split" || v.op_type == "Slice") {
      layout = std::max(in_layout, 2);
    } else if (In(v.op_type, {"Reshape", "Flatten"}) && in_layout != 0 &&
               in_layout != 2) {
      // A reshape of a transposed tensor copies it.
      op.exec = Exec::kKernel;
      op.inputs = {in};
      op.bytes = 2.0 * static_cast<double>(out_.tensors[in].bytes);
      layout = 0;
    }
    for (const TensorId o : v.outputs) {
      if (o == kNoTensor) continue;
      layout_[o] = layout;
      if (in != kNoTensor) {
        out_.tensors[o].half = out_.tensors[in].half;
        if (out_.tensors[in].half)
          out_.tensors[o].bytes = std::max<int64_t>(g_.tensor(o).bytes, 0) / 2;
      }
    }
    out_.ops.push_back(std::move(op));
  }

  // What autograd saves for backward (PyTorch's derivative formulas).
  void Saves(NodeId anchor, Fused fused, ROp& op) {
    const std::string_view type = g_.node(anchor).op_type;
    auto input = [&](size_t i) {
      if (i < op.inputs.size()) op.saves_inputs.push_back(i);
    };
    auto all_inputs = [&] {
      for (size_t i = 0; i < op.inputs.size(); ++i)
        op.saves_inputs.push_back(i);
    };
    auto output = [&] {
      if (!op.outputs.empty()) op.saves_outputs.push_back(0);
    };
    op.saves_weight_casts = op.low_precision;
    if (fused == Fused::kSdpa) {
      all_inputs();
      output();
      op.saved_extra_bytes += LogSumExpBytes(op);
    } else if (fused == Fused::kGelu || fused == Fused::kSwish) {
      input(0);
    } else if (op.work == Work::kGemm || op.work == Work::kConv ||
               op.work == Work::kSpatialConv || op.work == Work::kDepthwise) {
      all_inputs();
    } else if (In(type, {"Relu", "Clip", "Sigmoid", "Tanh", "Softmax",
                         "LogSoftmax", "Exp", "Sqrt", "HardSigmoid"})) {
      output();
    } else if (In(type,
                  {"BatchNormalization", "LayerNormalization",
                   "GroupNormalization", "InstanceNormalization", "LeakyRelu",
                   "Elu", "Selu", "Gelu", "HardSwish", "Erf", "Log", "Pow",
                   "Reciprocal", "Abs", "Sin", "Cos", "Softplus", "Mish"})) {
      input(0);
    } else if (type == "MaxPool") {
      input(0);
      for (const TensorId o : op.outputs) {
        op.saved_extra_bytes += std::max<int64_t>(g_.tensor(o).elements, 0) * 8;
      }
    } else if (type == "Mul" || type == "Div") {
      // Products by a tensor keep both factors; by a scalar, nothing.
      if (op.inputs.size() + op.weights.size() >= 2) all_inputs();
    } else if (In(type,
                  {"Add", "Sub", "Concat", "AveragePool", "GlobalAveragePool",
                   "ReduceMean", "ReduceSum", "Pad", "Cast", "Neg", "Where",
                   "Gather", "Resize", "Upsample"})) {
      // nothing of size (indices and conditions are inputs or buffers)
    } else {
      all_inputs();
    }
  }

  int64_t LogSumExpBytes(const ROp& op) const {
    // one fp32 per (batch, head, query): the scores' row count
    const TensorId s = g_.node(op.nodes.front()).outputs[0];
    const graph::TensorView v = g_.tensor(s);
    if (!v.dims || v.dims->empty() || v.elements <= 0) return 0;
    return v.elements / std::max<int64_t>(v.dims->back(), 1) * 4;
  }

  // Parameters (trainable) and buffers; an output projection tied to an
  // input embedding (the transposed shape of a Gather's table) counts once.
  void CountWeights() {
    std::unordered_set<TensorId> param, buffer;
    std::vector<std::pair<int64_t, int64_t>> tables;
    for (NodeId n = 0; n < g_.num_nodes(); ++n) {
      const NodeView v = g_.node(n);
      if (v.op_type == "Gather" && !v.inputs.empty() &&
          v.inputs[0] != kNoTensor && out_.tensors[v.inputs[0]].weight) {
        const graph::TensorView t = g_.tensor(v.inputs[0]);
        if (t.dims && t.dims->size() == 2)
          tables.emplace_back((*t.dims)[0], (*t.dims)[1]);
      }
    }
    for (NodeId n = 0; n < g_.num_nodes(); ++n) {
      const NodeView v = g_.node(n);
      if (host_node_[n]) continue;
      for (size_t i = 0; i < v.inputs.size(); ++i) {
        const TensorId t = v.inputs[i];
        if (t == kNoTensor || !out_.tensors[t].weight) continue;
        const graph::TensorView tv = g_.tensor(t);
        const bool stats =
            v.op_type == "BatchNormalization" && (i == 3 || i == 4);
        const bool trainable = graph::IsFloat(tv.dtype) && !stats &&
                               v.op_type != "Where" && tv.elements > 1;
        (trainable ? param : buffer).insert(t);
      }
    }
    for (const TensorId t : param) buffer.erase(t);
    for (const TensorId t : param) {
      const graph::TensorView tv = g_.tensor(t);
      bool tied = false;
      if (tv.dims && tv.dims->size() == 2 && tv.elements >= (1 << 20)) {
        for (const auto& [rows, cols] : tables) {
          tied |= (*tv.dims)[0] == cols && (*tv.dims)[1] == rows &&
                  g_.consumers(t).size() == 1 &&
                  g_.node(g_.consumers(t)[0]).op_type != "Gather";
        }
      }
      out_.tensors[t].param = !tied;
      out_.tensors[t].tied = tied;
      if (tied) continue;
      out_.param_bytes += std::max<int64_t>(tv.bytes, 0);
      ++out_.param_tensors;
    }
    for (const TensorId t : buffer) {
      out_.buffer_bytes += std::max<int64_t>(g_.tensor(t).bytes, 0);
    }
    // Activations whose gradient flows back: downstream of a parameter.
    for (const ROp& op : out_.ops) {
      bool grad = false;
      for (const TensorId t : op.inputs) grad |= out_.tensors[t].grad;
      for (const TensorId t : op.weights) {
        grad |= out_.tensors[t].param || out_.tensors[t].tied;
      }
      for (const TensorId t : op.outputs) out_.tensors[t].grad = grad;
    }
  }

  const OpGraph& g_;
  std::span<const OpCost> costs_;
  const RuntimeOptions& o_;
  Lowered out_;
  std::vector<bool> host_node_;
  Fusions fusions_;
  std::vector<int> layout_;
};

}  // namespace

Lowered Lower(const graph::Model& model, std::span<const OpCost> costs,
              const RuntimeOptions& options) {
  return Lowering(model, costs, options).Run();
}

}  // namespace tessera::estimator::internal
