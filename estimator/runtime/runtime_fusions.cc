// The fusions a framework runs where the ONNX export has several nodes
// (docs/estimator.md, "Runtimes", 1): which nodes the lowering
// (runtime_lower.cc) emits as one operator.
// - a MatMul by a weight plus its bias Add is one linear (addmm);
// - the erf and tanh decompositions of GELU are one kernel, and so are
//   x * sigmoid(x) (SiLU) and x * hardsigmoid(x) (hardswish);
// - unmasked attention is one scaled_dot_product_attention (Attention::kAuto);
// - a constant Pad before a pooling or a convolution is its padding;
// - ONNX Runtime also folds BatchNormalization and activations into Conv.

#include <algorithm>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "estimator/runtime/runtime_lower_internal.h"

namespace tessera::estimator::internal {
namespace {

using graph::kNoNode;
using graph::kNoTensor;
using graph::NodeId;
using graph::NodeView;
using graph::OpGraph;
using graph::TensorId;

bool IsElementwiseArith(std::string_view op) {
  return In(op, {"Add", "Sub", "Mul", "Div", "Pow"});
}

class FusionFinder {
 public:
  FusionFinder(const OpGraph& g, const std::vector<RTensor>& tensors,
               const RuntimeOptions& options)
      : g_(g), tensors_(tensors), o_(options) {}

  Fusions Run() {
    FindGelus();
    FindSwishes();
    FindLinears();
    FindAttention();
    FindPads();
    if (o_.runtime == Runtime::kOnnxRuntime) FindConvFolds();
    return Fusions{std::move(owner_), std::move(fused_kind_),
                   std::move(linear_), std::move(bias_)};
  }

 private:
  // An activation: a tensor on the device that is no weight.
  bool IsActivation(TensorId t) const {
    return t != kNoTensor && !tensors_[t].weight && tensors_[t].on_device;
  }
  // The node's activation inputs, each once.
  std::vector<TensorId> ActInputs(NodeId n) const {
    std::vector<TensorId> r;
    for (const TensorId t : g_.node(n).inputs) {
      if (IsActivation(t) && std::find(r.begin(), r.end(), t) == r.end()) {
        r.push_back(t);
      }
    }
    return r;
  }

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
            const NodeId p = Producer(g_, t);
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
                const NodeId p = Producer(g_, t);
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
      fused_kind_[anchor] = Fused::kGelu;
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
      if (x == kNoTensor || gate == kNoTensor || !Single(g_, gate) ||
          IsGraphOutput(g_, gate))
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
      fused_kind_[n] = Fused::kSwish;
    }
  }

  std::vector<TensorId> External(const std::unordered_set<NodeId>& region) {
    std::vector<TensorId> ext;
    for (const NodeId r : region) {
      for (const TensorId t : ActInputs(r)) {
        const NodeId p = Producer(g_, t);
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
      if (t != kNoTensor && tensors_[t].weight && !IsScalarWeight(g_, t))
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
      if (!Single(g_, y)) continue;
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
      NodeId p = Producer(g_, t);
      // A scale and a mask or two: a longer chain is no attention block
      // (and a bound keeps adversarial chains linear).
      while (p != kNoNode && g_.node(p).op_type != "MatMul" &&
             chain.size() < 8) {
        const NodeView pv = g_.node(p);
        if (!Single(g_, t)) break;
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
        p = Producer(g_, t);
      }
      if (p == kNoNode || g_.node(p).op_type != "MatMul" || !Single(g_, t) ||
          HasWeightOperand(p))
        continue;
      const NodeId mm1 = p;
      const TensorId probs = sv.outputs[0];
      if (!Single(g_, probs)) continue;
      const NodeId mm2 = g_.consumers(probs)[0];
      if (g_.node(mm2).op_type != "MatMul" || HasWeightOperand(mm2)) continue;
      if (masked && o_.attention == Attention::kAuto) continue;
      chain.push_back(mm1);
      chain.push_back(mm2);
      for (const NodeId c : chain) owner_[c] = mm1;
      fused_kind_[mm1] = Fused::kSdpa;
    }
  }

  void FindPads() {
    for (NodeId n = 0; n < g_.num_nodes(); ++n) {
      const NodeView v = g_.node(n);
      if (v.op_type != "Pad" || owner_[n] != kNoNode ||
          !Single(g_, v.outputs[0]))
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
        if (!Single(g_, y)) break;
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

  const OpGraph& g_;
  const std::vector<RTensor>& tensors_;
  const RuntimeOptions& o_;
  std::vector<NodeId> owner_;
  std::vector<size_t> rank_;
  std::unordered_map<NodeId, Fused> fused_kind_;
  std::unordered_set<NodeId> linear_, bias_;
};

}  // namespace

Fusions FindFusions(const OpGraph& g, const std::vector<RTensor>& tensors,
                    const RuntimeOptions& options) {
  return FusionFinder(g, tensors, options).Run();
}

}  // namespace tessera::estimator::internal
