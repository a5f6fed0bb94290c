// Lowers an ONNX graph to the operators a framework dispatches
// (docs/estimator.md, "Runtimes"):
// - shape arithmetic (Shape and what only reads its results) runs on the
//   host and costs nothing on the GPU;
// - views (Reshape, Flatten, Squeeze, Unsqueeze, Identity, Transpose,
//   Split, Expand, Slice) move nothing, but a view of a transposed tensor
//   that must be contiguous (a reshape, a batched matmul operand) is a copy;
// - fusions the export undid: a MatMul by a weight plus its bias Add is one
//   linear (addmm); the erf and tanh decompositions of GELU are one kernel,
//   and so are x * sigmoid(x) (SiLU) and x * hardsigmoid(x) (hardswish);
//   unmasked attention is one scaled_dot_product_attention (Attention::kAuto);
//   a constant Pad before a pooling or a convolution is its padding;
//   ONNX Runtime also folds BatchNormalization and activations into Conv;
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

#include "estimator/runtime_internal.h"
#include "graph/noop.h"

namespace tessera::estimator::internal {
namespace {

using graph::kNoNode;
using graph::kNoTensor;
using graph::NodeId;
using graph::NodeView;
using graph::OpGraph;
using graph::TensorId;

bool In(std::string_view s, std::initializer_list<std::string_view> set) {
  return std::find(set.begin(), set.end(), s) != set.end();
}

bool IsElementwiseArith(std::string_view op) {
  return In(op, {"Add", "Sub", "Mul", "Div", "Pow"});
}

// Float tensors of more than one element count as tensors for type
// promotion and saving; one-element constants are scalars.
bool IsScalarWeight(const OpGraph& g, TensorId t) {
  const graph::TensorView v = g.tensor(t);
  return graph::IsWeight(v.kind) && v.elements >= 0 && v.elements <= 1;
}

class Lowering {
 public:
  Lowering(const graph::Model& model, std::span<const OpCost> costs,
           const RuntimeOptions& options)
      : g_(*model.graph), costs_(costs), o_(options) {}

  Lowered Run() {
    InitTensors();
    MarkHost();
    FindGelus();
    FindSwishes();
    FindLinears();
    FindAttention();
    FindPads();
    if (o_.runtime == Runtime::kOnnxRuntime) FindConvFolds();
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

  bool Single(TensorId t) const { return g_.consumers(t).size() == 1; }
  NodeId Producer(TensorId t) const {
    return t == kNoTensor ? kNoNode : g_.tensor(t).producer;
  }
  bool IsActivation(TensorId t) const {
    return t != kNoTensor && !out_.tensors[t].weight &&
           out_.tensors[t].on_device;
  }
  std::vector<TensorId> ActInputs(NodeId n) const {
    std::vector<TensorId> r;
    for (const TensorId t : g_.node(n).inputs) {
      if (IsActivation(t) && std::find(r.begin(), r.end(), t) == r.end()) {
        r.push_back(t);
      }
    }
    return r;
  }

  // --- fusions ---------------------------------------------------------------
  // GELU: grow a region of elementwise nodes around each Erf/Tanh until it
  // has one outside activation input.
  void FindGelus() {
    owner_.assign(g_.num_nodes(), kNoNode);
    for (NodeId n = 0; n < g_.num_nodes(); ++n) {
      const NodeView v = g_.node(n);
      if ((v.op_type != "Erf" && v.op_type != "Tanh") || owner_[n] != kNoNode)
        continue;
      std::unordered_set<NodeId> region{n};
      bool grew = true;
      while (grew && region.size() < 14) {
        grew = false;
        // Backward: producers whose outputs only feed the region.
        for (const NodeId r :
             std::vector<NodeId>(region.begin(), region.end())) {
          for (const TensorId t : g_.node(r).inputs) {
            const NodeId p = Producer(t);
            // (a bias add before the activation is the linear layer's)
            if (p == kNoNode || region.count(p) || owner_[p] != kNoNode ||
                !IsElementwiseArith(g_.node(p).op_type) || HasWeightOperand(p))
              continue;
            bool only = true;
            for (const TensorId o : g_.node(p).outputs) {
              for (const NodeId c : g_.consumers(o))
                only &= region.count(c) > 0;
            }
            if (only) {
              region.insert(p);
              grew = true;
            }
          }
        }
        // Forward: consumers whose activation inputs come from the region
        // or from its single outside input.
        const std::vector<TensorId> ext = External(region);
        if (ext.size() != 1) continue;
        for (const NodeId r :
             std::vector<NodeId>(region.begin(), region.end())) {
          for (const TensorId o : g_.node(r).outputs) {
            for (const NodeId c : g_.consumers(o)) {
              if (region.count(c) || owner_[c] != kNoNode ||
                  !IsElementwiseArith(g_.node(c).op_type))
                continue;
              bool inside = true;
              for (const TensorId t : ActInputs(c)) {
                const NodeId p = Producer(t);
                inside &= t == ext[0] || (p != kNoNode && region.count(p));
              }
              if (inside) {
                region.insert(c);
                grew = true;
              }
            }
          }
        }
      }
      if (External(region).size() != 1 || region.size() < 4) continue;
      // The region's outputs: exactly one tensor leaves it.
      int leaving = 0;
      for (const NodeId r : region) {
        for (const TensorId o : g_.node(r).outputs) {
          bool out = false;
          for (const NodeId c : g_.consumers(o)) out |= !region.count(c);
          for (const TensorId go : g_.outputs()) out |= go == o;
          leaving += out ? 1 : 0;
        }
      }
      if (leaving != 1) continue;
      const NodeId anchor = *std::min_element(
          region.begin(), region.end(),
          [&](NodeId a, NodeId b) { return Rank(a) < Rank(b); });
      for (const NodeId r : region) owner_[r] = anchor;
      fused_kind_[anchor] = kGelu;
    }
  }

  // SiLU and hardswish: nn.SiLU exports as Mul(x, Sigmoid(x)) and an old
  // opset's nn.Hardswish as Mul(x, HardSigmoid(x)); PyTorch runs each as one
  // kernel forward and one backward. A gate (x * sigmoid(y), y not x: a
  // squeeze-excite block) stays two kernels, as in PyTorch.
  void FindSwishes() {
    for (NodeId n = 0; n < g_.num_nodes(); ++n) {
      const NodeView v = g_.node(n);
      if ((v.op_type != "Sigmoid" && v.op_type != "HardSigmoid") ||
          owner_[n] != kNoNode || v.inputs.empty() || v.outputs.empty())
        continue;
      const TensorId x = v.inputs[0];
      const TensorId gate = v.outputs[0];
      if (x == kNoTensor || gate == kNoTensor || !Single(gate) ||
          IsGraphOutput(gate))
        continue;
      const NodeId m = g_.consumers(gate)[0];
      const NodeView mul = g_.node(m);
      if (mul.op_type != "Mul" || owner_[m] != kNoNode ||
          mul.inputs.size() != 2)
        continue;
      const bool swish = (mul.inputs[0] == x && mul.inputs[1] == gate) ||
                         (mul.inputs[0] == gate && mul.inputs[1] == x);
      if (!swish) continue;
      owner_[n] = n;
      owner_[m] = n;
      fused_kind_[n] = kSwish;
    }
  }

  std::vector<TensorId> External(const std::unordered_set<NodeId>& region) {
    std::vector<TensorId> ext;
    for (const NodeId r : region) {
      for (const TensorId t : ActInputs(r)) {
        const NodeId p = Producer(t);
        if ((p == kNoNode || !region.count(p)) &&
            std::find(ext.begin(), ext.end(), t) == ext.end()) {
          ext.push_back(t);
        }
      }
    }
    return ext;
  }

  size_t Rank(NodeId n) {
    if (rank_.empty()) {
      rank_.assign(g_.num_nodes(), 0);
      size_t i = 0;
      for (const NodeId m : g_.topological_order()) rank_[m] = i++;
    }
    return rank_[n];
  }

  bool HasWeightOperand(NodeId n) const {
    for (const TensorId t : g_.node(n).inputs) {
      if (t != kNoTensor && out_.tensors[t].weight && !IsScalarWeight(g_, t))
        return true;
    }
    return false;
  }

  // MatMul by a weight, then Add of a weight bias: one linear layer.
  void FindLinears() {
    for (NodeId n = 0; n < g_.num_nodes(); ++n) {
      const NodeView v = g_.node(n);
      if (owner_[n] != kNoNode) continue;
      if (v.op_type == "Gemm") {
        linear_.insert(n);
        continue;
      }
      if (v.op_type != "MatMul" || !HasWeightOperand(n)) continue;
      linear_.insert(n);
      const TensorId y = v.outputs[0];
      if (!Single(y)) continue;
      const NodeId c = g_.consumers(y)[0];
      const NodeView cv = g_.node(c);
      if (cv.op_type != "Add" || owner_[c] != kNoNode) continue;
      if (HasWeightOperand(c)) {
        owner_[n] = n;
        owner_[c] = n;
        bias_.insert(n);
      }
    }
  }

  // MatMul -> [scale] -> [mask] -> Softmax -> MatMul.
  void FindAttention() {
    if (o_.attention == Attention::kUnfused) return;
    for (NodeId s = 0; s < g_.num_nodes(); ++s) {
      const NodeView sv = g_.node(s);
      if (sv.op_type != "Softmax" || owner_[s] != kNoNode) continue;
      std::vector<NodeId> chain{s};
      bool masked = false;
      TensorId t = sv.inputs.empty() ? kNoTensor : sv.inputs[0];
      NodeId p = Producer(t);
      // A scale and a mask or two: a longer chain is no attention block
      // (and a bound keeps adversarial chains linear).
      while (p != kNoNode && g_.node(p).op_type != "MatMul" &&
             chain.size() < 8) {
        const NodeView pv = g_.node(p);
        if (!Single(t)) break;
        if ((pv.op_type == "Div" || pv.op_type == "Mul") &&
            ActInputs(p).size() == 1 && !HasWeightOperand(p)) {
          // a scale
        } else if (pv.op_type == "Add" || pv.op_type == "Where" ||
                   pv.op_type == "Mul" || pv.op_type == "Sub") {
          masked = true;
        } else {
          break;
        }
        chain.push_back(p);
        t = ActInputs(p).empty() ? kNoTensor : ActInputs(p)[0];
        if (pv.op_type == "Where") t = pv.inputs.size() > 1 ? pv.inputs[1] : t;
        p = Producer(t);
      }
      if (p == kNoNode || g_.node(p).op_type != "MatMul" || !Single(t) ||
          HasWeightOperand(p))
        continue;
      const NodeId mm1 = p;
      const TensorId probs = sv.outputs[0];
      if (!Single(probs)) continue;
      const NodeId mm2 = g_.consumers(probs)[0];
      if (g_.node(mm2).op_type != "MatMul" || HasWeightOperand(mm2)) continue;
      if (masked && o_.attention == Attention::kAuto) continue;
      chain.push_back(mm1);
      chain.push_back(mm2);
      for (const NodeId c : chain) owner_[c] = mm1;
      fused_kind_[mm1] = kSdpa;
    }
  }

  void FindPads() {
    for (NodeId n = 0; n < g_.num_nodes(); ++n) {
      const NodeView v = g_.node(n);
      if (v.op_type != "Pad" || owner_[n] != kNoNode || !Single(v.outputs[0]))
        continue;
      const auto mode = g_.GetString(n, "mode");
      if (mode && *mode != "constant") continue;
      const NodeId c = g_.consumers(v.outputs[0])[0];
      if (In(g_.node(c).op_type, {"AveragePool", "MaxPool", "Conv"}) &&
          owner_[c] == kNoNode) {
        owner_[n] = c;
        owner_[c] = c;
      }
    }
  }

  // ONNX Runtime folds BatchNormalization into the Conv before it and fuses
  // a following activation.
  void FindConvFolds() {
    for (NodeId n = 0; n < g_.num_nodes(); ++n) {
      if (g_.node(n).op_type != "Conv" || owner_[n] != kNoNode) continue;
      NodeId last = n;
      for (int step = 0; step < 2; ++step) {
        const TensorId y = g_.node(last).outputs[0];
        if (!Single(y)) break;
        const NodeId c = g_.consumers(y)[0];
        const std::string_view op = g_.node(c).op_type;
        if (owner_[c] != kNoNode) break;
        if ((step == 0 && op == "BatchNormalization") ||
            In(op, {"Relu", "Clip", "LeakyRelu", "Sigmoid", "HardSwish"})) {
          owner_[n] = n;
          owner_[c] = n;
          last = c;
        } else {
          break;
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
      if (owner_[n] != kNoNode) members[owner_[n]].push_back(n);
    }
    for (const NodeId n : g_.topological_order()) {
      if (owner_[n] != kNoNode && owner_[n] != n) continue;
      std::vector<NodeId> nodes =
          owner_[n] == n ? members[n] : std::vector<NodeId>{n};
      EmitOp(n, nodes);
    }
  }

  void EmitOp(NodeId anchor, const std::vector<NodeId>& nodes) {
    const NodeView v = g_.node(anchor);
    ROp op;
    op.nodes = nodes;
    std::unordered_set<NodeId> set(nodes.begin(), nodes.end());
    // External inputs and outputs of the group.
    for (const NodeId m : nodes) {
      for (const TensorId t : g_.node(m).inputs) {
        if (t == kNoTensor) continue;
        const NodeId p = Producer(t);
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
    const auto it = fused_kind_.find(anchor);
    const int fused = it == fused_kind_.end() ? 0 : it->second;
    if (view) {
      op.free = noop;
      EmitView(anchor, op);
      return;
    }
    // Dtypes under autocast.
    const bool amp = o_.amp != Amp::kNone;
    const OpClass cls = costs_[anchor].op_class;
    const bool product = fused == kSdpa || linear_.count(anchor) ||
                         type == "MatMul" || cls == OpClass::kConvolution ||
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
    // Contiguity copies: a batched matmul or a linear layer reading a
    // permuted tensor copies it first (fused attention takes any strides).
    if ((type == "MatMul" || linear_.count(anchor)) && fused != kSdpa) {
      for (size_t i = 0; i < op.inputs.size(); ++i) {
        if (layout_[op.inputs[i]] == 3 && op.input_copy[i] == 0)
          op.input_copy[i] = out_.tensors[op.inputs[i]].bytes;
      }
    }

    // Work kind and traffic.
    int64_t in_bytes = 0, out_bytes = 0, w_bytes = 0;
    for (const TensorId t : op.inputs) in_bytes += out_.tensors[t].bytes;
    for (const TensorId t : op.outputs) out_bytes += out_.tensors[t].bytes;
    for (const TensorId t : op.weights) {
      w_bytes +=
          op.low_precision ? out_.tensors[t].bytes / 2 : out_.tensors[t].bytes;
    }
    op.bytes = static_cast<double>(in_bytes + out_bytes + w_bytes);
    if (fused == kSdpa) {
      op.work = Work::kAttention;
    } else if (linear_.count(anchor) || type == "MatMul") {
      op.work = Work::kGemm;
      op.blas_api =
          linear_.count(anchor) && (bias_.count(anchor) || type == "Gemm") ? 1
                                                                           : 2;
      op.has_bias =
          bias_.count(anchor) || (type == "Gemm" && v.inputs.size() > 2);
    } else if (cls == OpClass::kConvolution) {
      op.work = Work::kConv;
      op.has_bias = v.inputs.size() > 2 && v.inputs[2] != kNoTensor;
    } else if (cls == OpClass::kSpatialConvolution) {
      op.work = Work::kSpatialConv;
      op.has_bias = v.inputs.size() > 2 && v.inputs[2] != kNoTensor;
    } else if (cls == OpClass::kDepthwiseConvolution) {
      op.work = Work::kDepthwise;
      op.has_bias = v.inputs.size() > 2 && v.inputs[2] != kNoTensor;
    } else if (fused == kGelu || fused == kSwish) {
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

    // In-place activations.
    if (o_.runtime == Runtime::kPyTorch &&
        In(type, {"Relu", "Clip", "LeakyRelu"}) && nodes.size() == 1 &&
        !op.inputs.empty() && Single(op.inputs[0]) &&
        Producer(op.inputs[0]) != kNoNode && layout_[op.inputs[0]] == 0 &&
        !IsGraphOutput(op.inputs[0])) {
      op.in_place = true;
    }
    if (o_.training) Saves(anchor, fused, op);
    out_.ops.push_back(std::move(op));
  }

  bool IsGraphOutput(TensorId t) const {
    for (const TensorId o : g_.outputs()) {
      if (o == t) return true;
    }
    return false;
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
  void Saves(NodeId anchor, int fused, ROp& op) {
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
    if (fused == kSdpa) {
      all_inputs();
      output();
      op.saved_extra_bytes += LogSumExpBytes(op);
    } else if (fused == kGelu || fused == kSwish) {
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

  enum { kGelu = 1, kSdpa = 2, kSwish = 3 };

  const OpGraph& g_;
  std::span<const OpCost> costs_;
  const RuntimeOptions& o_;
  Lowered out_;
  std::vector<bool> host_node_;
  std::vector<NodeId> owner_;
  std::vector<size_t> rank_;
  std::vector<int> layout_;
  std::unordered_map<NodeId, int> fused_kind_;
  std::unordered_set<NodeId> linear_, bias_;
};

}  // namespace

Lowered Lower(const graph::Model& model, std::span<const OpCost> costs,
              const RuntimeOptions& options) {
  return Lowering(model, costs, options).Run();
}

}  // namespace tessera::estimator::internal
