#include "estimator/runtime.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "estimator/caching_allocator.h"
#include "estimator/runtime_internal.h"

namespace tessera::estimator {
namespace {

using graph::TensorId;
using internal::Exec;
using internal::Lowered;
using internal::ROp;
using internal::Work;

const KernelEfficiency& KernelFor(const EfficiencySurface& s, Work w,
                                  bool tensor_cores) {
  const auto& table = tensor_cores ? s.tensor_cores : s.cuda_cores;
  switch (w) {
    case Work::kConv:
      return table[static_cast<size_t>(KernelKind::kConv)];
    case Work::kSpatialConv:
      return table[static_cast<size_t>(KernelKind::kSpatialConv)];
    case Work::kDepthwise:
      return s.cuda_cores[static_cast<size_t>(KernelKind::kDepthwiseConv)];
    default:
      return table[static_cast<size_t>(KernelKind::kGemm)];
  }
}

double Bandwidth(const EfficiencySurface& s, Work w) {
  switch (w) {
    case Work::kNormalization:
      return s.normalization_bandwidth;
    case Work::kReduction:
      return s.reduction_bandwidth;
    case Work::kDataMovement:
      return s.data_movement_bandwidth;
    default:
      return s.elementwise_bandwidth;
  }
}

KernelKind KindOf(Work w) {
  switch (w) {
    case Work::kConv:
      return KernelKind::kConv;
    case Work::kSpatialConv:
      return KernelKind::kSpatialConv;
    case Work::kDepthwise:
      return KernelKind::kDepthwiseConv;
    default:
      return KernelKind::kGemm;
  }
}

double Curve(const KernelEfficiency& k, double flops) {
  return k.max * flops / (flops + k.half_flops);
}

// ReferenceSweeps, built once.
const EfficiencySurface& Reference() {
  static const EfficiencySurface ref = ReferenceSweeps();
  return ref;
}

// A device's measured sweeps against the reference's at the same size
// (ReferenceSweeps): 1 where either did not measure the kind.
double SweepCorrection(const DeviceSpec& device, Work w, bool tensor_cores,
                       double flops) {
  const EfficiencySurface& d = device.efficiency;
  if (!d.measured) return 1.0;
  const EfficiencySurface& ref = Reference();
  const auto i = static_cast<size_t>(KindOf(w));
  const bool tc = tensor_cores && w != Work::kDepthwise;
  const KernelEfficiency& mine = tc ? d.tensor_cores[i] : d.cuda_cores[i];
  const KernelEfficiency& base = tc ? ref.tensor_cores[i] : ref.cuda_cores[i];
  if (mine.max <= 0 || base.max <= 0) return 1.0;
  return Curve(mine, flops) / std::max(Curve(base, flops), 1e-9);
}

double BandwidthCorrection(const DeviceSpec& device, Work w) {
  if (!device.efficiency.measured) return 1.0;
  const double mine = Bandwidth(device.efficiency, w);
  const double base = Bandwidth(Reference(), w);
  return mine > 0 && base > 0 ? mine / base : 1.0;
}

// GPU time per kernel beyond the roofline: the fitted one, scaled by the
// device's measured empty-kernel time against the reference's.
double KernelSeconds(const EfficiencySurface& fitted, const DeviceSpec& device,
                     const RuntimeCosts& c) {
  const double base = fitted.kernel_s > 0 ? fitted.kernel_s : c.kernel_s;
  if (device.efficiency.measured && device.efficiency.kernel_s > 0) {
    return base * device.efficiency.kernel_s / Reference().kernel_s;
  }
  return base;
}

bool ComputeBound(Work w) {
  return w == Work::kGemm || w == Work::kConv || w == Work::kSpatialConv ||
         w == Work::kDepthwise || w == Work::kAttention;
}

class Estimator {
 public:
  Estimator(const graph::Model& model, const Lowered& low,
            const DeviceSpec& device, const RuntimeOptions& o)
      : model_(model),
        low_(low),
        device_(device),
        o_(o),
        c_(o.costs),
        s_(o.surface),
        peaks_(Achievable(device)),
        kernel_s_(KernelSeconds(o.surface, device, o.costs)) {
    // Host costs are the reference host's; this device's host dispatches
    // eager_op / kReferenceEagerOpS as fast.
    const double eager = device.efficiency.eager_op_s;
    if (eager > 0 && o.runtime == Runtime::kPyTorch) {
      const double scale = eager / kReferenceEagerOpS;
      for (double* host : {&c_.op_s, &c_.view_s, &c_.cast_s, &c_.amp_op_s,
                           &c_.record_s, &c_.backward_op_s, &c_.optimizer_op_s,
                           &c_.optimizer_fixed_s, &c_.step_fixed_s}) {
        *host *= scale;
      }
    }
  }

  RuntimeEstimate Run() {
    RuntimeEstimate e;
    e.node_seconds.assign(model_.graph->num_nodes(), 0.0);
    e.node_forward_seconds.assign(model_.graph->num_nodes(), 0.0);
    e.node_host_seconds.assign(model_.graph->num_nodes(), 0.0);
    Time(e);
    Memory(e);
    return e;
  }

 private:
  // --- time ------------------------------------------------------------------
  double MemorySeconds(double bytes, Work w) const {
    const double bw = peaks_.memory_bandwidth *
                      std::max(Bandwidth(s_, w), 0.05) *
                      BandwidthCorrection(device_, w) * bandwidth_share_;
    return bw > 0 ? bytes / bw : 0.0;
  }

  double Peak(const ROp& op) const {
    if (!op.tensor_cores) return peaks_.fp32;
    if (op.low_precision) {
      return o_.amp == Amp::kFp16 ? peaks_.fp16 : peaks_.bf16;
    }
    return peaks_.tf32;
  }

  // GPU seconds of the op's main kernel(s), forward.
  double ForwardSeconds(const ROp& op) const {
    if (op.exec != Exec::kKernel) return 0.0;
    double t = 0.0;
    if (ComputeBound(op.work)) {
      const KernelEfficiency& k = KernelFor(s_, op.work, op.tensor_cores);
      const double w = std::max(op.flops, 1.0);
      // On a share of the SMs each SM gets w / share of the whole GPU's
      // work: the curve is read there, so a small kernel that could not
      // fill the GPU loses less than the share.
      const double per_sm = w / share_;
      const double eff =
          std::max(Curve(k, per_sm) * SweepCorrection(device_, op.work,
                                                      op.tensor_cores, per_sm),
                   1e-4);
      const double peak = Peak(op);
      const double compute = peak > 0 ? w / (peak * eff * share_) : 0.0;
      t = std::max(compute, MemorySeconds(op.bytes, Work::kElementwise));
    } else {
      t = MemorySeconds(op.bytes, op.work);
    }
    return t + kernel_s_;
  }

  double BackwardFactor(const ROp& op) const {
    switch (op.work) {
      case Work::kGemm:
      case Work::kAttention:
        return c_.backward_gemm;
      case Work::kConv:
        return c_.backward_conv;
      case Work::kSpatialConv:
        return c_.backward_spatial_conv;
      case Work::kDepthwise:
        return c_.backward_depthwise;
      default:
        return c_.backward_memory;
    }
  }

  bool HasGrad(const ROp& op) const {
    for (const TensorId t : op.outputs) {
      if (low_.tensors[t].grad) return true;
    }
    return false;
  }
  bool InputsNeedGrad(const ROp& op) const {
    for (const TensorId t : op.inputs) {
      if (low_.tensors[t].grad) return true;
    }
    return false;
  }

  static double* ByKind(RuntimeEstimate& e, const ROp& op, bool backward) {
    switch (op.work) {
      case Work::kGemm:
      case Work::kAttention:
        return backward ? &e.gemm_backward_s : &e.gemm_forward_s;
      case Work::kConv:
      case Work::kSpatialConv:
      case Work::kDepthwise:
        return backward ? &e.conv_backward_s : &e.conv_forward_s;
      case Work::kNormalization:
        return backward ? &e.norm_backward_s : &e.norm_forward_s;
      default:
        return nullptr;
    }
  }

  struct Clock {
    double host = 0, gpu = 0, busy = 0;
    int kernels = 0;
    void Dispatch(double s) { host += s; }
    void Kernel(double s) {
      gpu = std::max(gpu, host) + s;
      busy += s;
      ++kernels;
    }
  };

  void Time(RuntimeEstimate& e) {
    Clock k;
    k.Dispatch(c_.step_fixed_s);
    // Forward.
    for (const ROp& op : low_.ops) {
      if (op.exec == Exec::kHost || op.free) continue;
      ++e.dispatched_ops;
      const bool grad = o_.training && HasGrad(op);
      HostFor(
          k, e, op,
          (op.exec == Exec::kView ? c_.view_s : c_.op_s) +
              (grad ? c_.record_s : 0.0) +
              (o_.amp != Amp::kNone && op.exec == Exec::kKernel ? c_.amp_op_s
                                                                : 0.0));
      if (op.exec == Exec::kView) continue;
      for (size_t i = 0; i < op.input_copy.size(); ++i) {
        if (op.input_copy[i] == 0) continue;
        HostFor(k, e, op, c_.cast_s);
        ForwardGpuFor(k, e, op,
                      kernel_s_ + MemorySeconds(3.0 * static_cast<double>(
                                                          op.input_copy[i]),
                                                Work::kDataMovement));
      }
      for (const int64_t w : op.weight_cast) {
        if (w == 0) continue;
        HostFor(k, e, op, c_.cast_s);
        ForwardGpuFor(k, e, op,
                      kernel_s_ + MemorySeconds(3.0 * static_cast<double>(w),
                                                Work::kElementwise));
      }
      const double s = ForwardSeconds(op);
      ForwardGpuFor(k, e, op, s);
      if (double* by = ByKind(e, op, false)) *by += s;
    }
    e.forward_s = k.busy;
    if (o_.training) {
      // The loss (`.float().mean()`) and its backward seed: the mean reads
      // the output (in fp32: a cast first when it is not), its backward
      // writes an fp32 gradient of the output's shape (cast back).
      k.Dispatch(2 * c_.op_s);
      const double before = k.busy;
      for (const TensorId t : model_.graph->outputs()) {
        const auto bytes = static_cast<double>(low_.tensors[t].bytes);
        const double fp32 = low_.tensors[t].half ? 2 * bytes : bytes;
        if (low_.tensors[t].half) {
          k.Dispatch(c_.cast_s);
          k.Kernel(kernel_s_ + MemorySeconds(bytes + fp32, Work::kElementwise));
          k.Kernel(kernel_s_ + MemorySeconds(bytes + fp32, Work::kElementwise));
        }
        k.Kernel(kernel_s_ + MemorySeconds(fp32, Work::kReduction));
        k.Kernel(kernel_s_ + MemorySeconds(fp32, Work::kElementwise));
      }
      std::unordered_map<TensorId, int> contributions;
      for (auto it = low_.ops.rbegin(); it != low_.ops.rend(); ++it) {
        const ROp& op = *it;
        if (op.exec == Exec::kHost || op.free || !HasGrad(op)) continue;
        HostFor(
            k, e, op,
            op.exec == Exec::kView ? c_.backward_op_s / 2 : c_.backward_op_s);
        if (op.exec == Exec::kView) continue;
        // Autocast's casts are autograd nodes too (ToCopyBackward): each
        // cast of a weight, and of an input whose gradient flows, casts
        // its gradient back.
        for (size_t i = 0; i < op.weight_cast.size(); ++i) {
          if (op.weight_cast[i] == 0 || !low_.tensors[op.weights[i]].param)
            continue;
          CastBack(k, e, op, op.weight_cast[i]);
        }
        for (size_t i = 0; i < op.input_copy.size(); ++i) {
          if (op.input_copy[i] == 0 || !low_.tensors[op.inputs[i]].grad ||
              !op.low_precision)
            continue;
          CastBack(k, e, op, op.input_copy[i]);
        }
        double s = ForwardSeconds(op) - kernel_s_;
        double factor = BackwardFactor(op);
        int kernels = ComputeBound(op.work) ? 2 : 1;
        if (ComputeBound(op.work) && !InputsNeedGrad(op)) {
          factor /= 2;  // only the weights' gradient
          kernels = 1;
        }
        s *= factor;
        for (int i = 0; i < kernels; ++i) k.Kernel(s / kernels + kernel_s_);
        e.node_seconds[op.nodes.front()] += s + kernels * kernel_s_;
        if (double* by = ByKind(e, op, true)) *by += s + kernels * kernel_s_;
        if (op.has_bias) {
          k.Kernel(kernel_s_ + MemorySeconds(op.bytes / 3, Work::kReduction));
        }
        // Gradients of inputs read by several ops are summed.
        for (const TensorId t : op.inputs) {
          if (!low_.tensors[t].grad) continue;
          if (contributions[t]++ > 0) {
            k.Kernel(kernel_s_ + MemorySeconds(3.0 * static_cast<double>(
                                                         low_.tensors[t].bytes),
                                               Work::kElementwise));
          }
        }
      }
      e.backward_s = k.busy - before;
      // Optimizer.
      const double opt_before = k.busy;
      k.Dispatch(c_.optimizer_fixed_s +
                 c_.optimizer_op_s * static_cast<double>(low_.param_tensors));
      const double traffic = OptimizerTraffic();
      if (traffic > 0) {
        k.Kernel(MemorySeconds(traffic * static_cast<double>(low_.param_bytes),
                               Work::kElementwise) +
                 c_.optimizer_tensor_gpu_s *
                     static_cast<double>(low_.param_tensors));
      }
      e.optimizer_s = k.busy - opt_before;
    }
    e.step_s = std::max(k.gpu, k.host);
    e.host_s = k.host;
    e.gpu_busy_s = k.busy;
    e.kernels = k.kernels;
  }

  // Host dispatch and GPU kernels charged to the op's first ONNX node
  // (RuntimeEstimate::node_host_seconds, node_seconds and, forward,
  // node_forward_seconds).
  static void HostFor(Clock& k, RuntimeEstimate& e, const ROp& op, double s) {
    k.Dispatch(s);
    e.node_host_seconds[op.nodes.front()] += s;
  }
  static void GpuFor(Clock& k, RuntimeEstimate& e, const ROp& op, double s) {
    k.Kernel(s);
    e.node_seconds[op.nodes.front()] += s;
  }
  static void ForwardGpuFor(Clock& k, RuntimeEstimate& e, const ROp& op,
                            double s) {
    GpuFor(k, e, op, s);
    e.node_forward_seconds[op.nodes.front()] += s;
  }

  void CastBack(Clock& k, RuntimeEstimate& e, const ROp& op,
                int64_t bytes) const {
    HostFor(k, e, op, c_.backward_op_s);
    GpuFor(k, e, op,
           kernel_s_ + MemorySeconds(3.0 * static_cast<double>(bytes),
                                     Work::kElementwise));
  }

  double OptimizerTraffic() const {
    switch (o_.optimizer) {
      case Optimizer::kNone:
        return 0.0;
      case Optimizer::kSgd:
        return 3.0;
      case Optimizer::kSgdMomentum:
        return 5.0;
      case Optimizer::kAdam:
        return c_.adam_traffic;
    }
    return 0.0;
  }

  int OptimizerStates() const {
    switch (o_.optimizer) {
      case Optimizer::kSgdMomentum:
        return 1;
      case Optimizer::kAdam:
        return 2;
      default:
        return 0;
    }
  }

  // --- memory ----------------------------------------------------------------
  struct Mem {
    CachingAllocator alloc;
    std::vector<int64_t> buffer_of;  // tensor -> buffer id (-1 none)
    std::unordered_map<int64_t, int64_t> handle;  // buffer -> allocator
    std::unordered_map<int64_t, int> uses, holds;
    std::unordered_map<int64_t, bool> pinned;
    int64_t next_buffer = 1;
    explicit Mem(const AllocatorRules& r) : alloc(r) {}
    int64_t New(int64_t bytes) {
      const int64_t b = next_buffer++;
      handle[b] = alloc.Allocate(std::max<int64_t>(bytes, 1));
      return b;
    }
    void Drop(int64_t b) {
      auto it = handle.find(b);
      if (it == handle.end()) return;
      alloc.Free(it->second);
      handle.erase(it);
    }
    void MaybeFree(int64_t b) {
      if (b <= 0 || pinned[b] || uses[b] > 0 || holds[b] > 0) return;
      Drop(b);
    }
    // Lets go of what an op kept for backward: held buffers (-id) lose a
    // hold, buffers of its own (+id) go.
    void Release(std::vector<int64_t>& kept) {
      for (const int64_t h : kept) {
        if (h < 0) {
          --holds[-h];
          MaybeFree(-h);
        } else {
          Drop(h);
        }
      }
      kept.clear();
    }
  };

  void Memory(RuntimeEstimate& e) {
    AllocatorRules rules{c_.round_bytes, c_.small_limit, c_.small_segment,
                         c_.mid_limit,   c_.mid_segment, c_.large_round};
    Mem m(rules);
    const graph::OpGraph& g = *model_.graph;
    m.buffer_of.assign(g.num_tensors(), -1);
    // Resident: the weights the GPU ops read (a tied copy not: the
    // framework holds the embedding once) and the inputs.
    std::vector<bool> read(g.num_tensors(), false);
    for (const ROp& op : low_.ops) {
      if (op.exec == Exec::kHost) continue;
      for (const TensorId w : op.weights) read[w] = true;
    }
    for (TensorId t = 0; t < g.num_tensors(); ++t) {
      const internal::RTensor& r = low_.tensors[t];
      if (!read[t] || !r.weight || !r.on_device || r.tied || r.bytes <= 0)
        continue;
      const int64_t b = m.New(r.bytes);
      m.pinned[b] = true;
      m.buffer_of[t] = b;
    }
    e.weights = m.alloc.allocated();
    for (const TensorId t : g.inputs()) {
      const int64_t b = m.New(low_.tensors[t].bytes);
      m.pinned[b] = true;
      m.buffer_of[t] = b;
    }
    bool fwd_api[3] = {false, false, false}, bwd_api[3] = {false, false, false};
    auto workspace = [&](bool* apis, int api) {
      if (api <= 0 || apis[api] || c_.blas_workspace_bytes <= 0) return;
      apis[api] = true;
      (void)m.alloc.Allocate(c_.blas_workspace_bytes);  // held for good
      e.workspace += c_.blas_workspace_bytes;
    };
    std::vector<int64_t> grads;  // parameter gradients (allocator handles)
    std::vector<int64_t> state;
    const int steps = 2;
    for (int step = 0; step < steps; ++step) {
      if (step == steps - 1) m.alloc.ResetPeaks();
      benchmarking_ = step == 0;
      for (const int64_t h : grads) m.alloc.Free(h);  // zero_grad(None)
      grads.clear();
      int64_t resident = m.alloc.allocated();
      std::vector<std::vector<int64_t>> held(low_.ops.size());
      Forward(m, held, fwd_api, workspace);
      if (step == steps - 1) {
        e.saved_activations =
            std::max<int64_t>(0, m.alloc.allocated() - resident);
      }
      if (!o_.training) {
        ReleaseOutputs(m);
        continue;
      }
      Backward(m, held, bwd_api, workspace, grads);
      // Optimizer: state on the first step, one temporary per parameter.
      if (state.empty() && OptimizerStates() > 0) {
        for (TensorId t = 0; t < g.num_tensors(); ++t) {
          if (!low_.tensors[t].param || low_.tensors[t].bytes <= 0) continue;
          for (int s = 0; s < OptimizerStates(); ++s)
            state.push_back(m.alloc.Allocate(g.tensor(t).bytes));
        }
      }
      if (o_.optimizer == Optimizer::kAdam) {
        std::vector<int64_t> temps;
        for (TensorId t = 0; t < g.num_tensors(); ++t) {
          if (!low_.tensors[t].param || low_.tensors[t].bytes <= 0) continue;
          temps.push_back(m.alloc.Allocate(g.tensor(t).bytes));
        }
        for (const int64_t h : temps) m.alloc.Free(h);
      }
    }
    e.gradients = o_.training ? low_.param_bytes : 0;
    e.optimizer_state = o_.training ? OptimizerStates() * low_.param_bytes : 0;
    e.live_peak_bytes = m.alloc.peak_allocated();
    e.reserved_peak_bytes = m.alloc.peak_reserved();
  }

  void ReleaseOutputs(Mem& m) {
    for (const TensorId t : model_.graph->outputs()) {
      const int64_t b = m.buffer_of[t];
      if (b <= 0) continue;
      bool input = false;
      for (const TensorId i : model_.graph->inputs()) input |= i == t;
      if (input) continue;
      m.pinned[b] = false;
      m.MaybeFree(b);
    }
  }

  template <typename Workspace>
  void Forward(Mem& m, std::vector<std::vector<int64_t>>& held, bool* apis,
               Workspace&& workspace) {
    const graph::OpGraph& g = *model_.graph;
    // Forward uses of every buffer, per op.
    for (TensorId t = 0; t < g.num_tensors(); ++t) {
      if (!low_.tensors[t].weight)
        m.buffer_of[t] = IsInput(t) ? m.buffer_of[t] : -1;
    }
    std::unordered_map<TensorId, int> uses_of_tensor;
    for (const ROp& op : low_.ops) {
      if (op.exec == Exec::kHost) continue;
      for (const TensorId t : op.inputs) ++uses_of_tensor[t];
    }
    std::vector<int64_t> cached;
    for (size_t i = 0; i < low_.ops.size(); ++i) {
      const ROp& op = low_.ops[i];
      if (op.exec == Exec::kHost) continue;
      const bool grad = o_.training && HasGrad(op);
      // Outputs: views and in-place ops alias input 0.
      const bool alias = (op.exec == Exec::kView || op.in_place) &&
                         !op.inputs.empty() && m.buffer_of[op.inputs[0]] > 0;
      std::vector<int64_t> transient;
      for (size_t j = 0; j < op.input_copy.size(); ++j) {
        if (op.input_copy[j] == 0) continue;
        const int64_t b = m.New(op.input_copy[j]);
        const bool saved =
            grad && std::find(op.saves_inputs.begin(), op.saves_inputs.end(),
                              j) != op.saves_inputs.end();
        if (saved) {
          held[i].push_back(b);
        } else {
          transient.push_back(b);
        }
      }
      for (const int64_t w : op.weight_cast) {
        if (w == 0) continue;
        const int64_t b = m.New(w);
        if (grad && op.saves_weight_casts) {
          held[i].push_back(b);
        } else {
          // autocast caches a parameter's cast until the region ends
          cached.push_back(b);
        }
      }
      workspace(apis, op.blas_api);
      Trial(m, op);
      const int64_t ws = ConvWorkspace(op);
      const int64_t ws_buffer = ws > 0 ? m.New(ws) : 0;
      for (size_t j = 0; j < op.outputs.size(); ++j) {
        const TensorId o = op.outputs[j];
        if (alias && j == 0) {
          m.buffer_of[o] = m.buffer_of[op.inputs[0]];
        } else {
          m.buffer_of[o] = m.New(low_.tensors[o].bytes);
        }
        m.uses[m.buffer_of[o]] += uses_of_tensor[o];
        for (const TensorId go : g.outputs()) {
          if (go == o) m.pinned[m.buffer_of[o]] = true;
        }
      }
      if (ws_buffer > 0) m.Drop(ws_buffer);
      if (grad) {
        for (const size_t j : op.saves_inputs) {
          if (j < op.input_copy.size() && op.input_copy[j] != 0) continue;
          const int64_t b = m.buffer_of[op.inputs[j]];
          if (b > 0) {
            ++m.holds[b];
            held[i].push_back(-b);
          }
        }
        for (const size_t j : op.saves_outputs) {
          const int64_t b = m.buffer_of[op.outputs[j]];
          if (b > 0) {
            ++m.holds[b];
            held[i].push_back(-b);
          }
        }
        if (op.saved_extra_bytes > 0)
          held[i].push_back(m.New(op.saved_extra_bytes));
      }
      for (const int64_t b : transient) m.Drop(b);
      for (const TensorId t : op.inputs) {
        const int64_t b = m.buffer_of[t];
        if (b <= 0) continue;
        --m.uses[b];
        m.MaybeFree(b);
      }
      // Outputs nobody reads (and no save holds) go at once.
      for (const TensorId o : op.outputs) m.MaybeFree(m.buffer_of[o]);
    }
    for (const int64_t b : cached) m.Drop(b);
  }

  // cuDNN's workspace for a spatial convolution (the algorithm benchmark
  // mode picks): a fraction of its larger operand.
  int64_t ConvWorkspace(const ROp& op) const {
    if (op.work != Work::kSpatialConv || op.exec != Exec::kKernel ||
        c_.conv_workspace_fraction <= 0)
      return 0;
    int64_t biggest = 0;
    for (const TensorId t : op.inputs)
      biggest = std::max(biggest, low_.tensors[t].bytes);
    for (const TensorId t : op.outputs)
      biggest = std::max(biggest, low_.tensors[t].bytes);
    double ws = c_.conv_workspace_fraction * static_cast<double>(biggest);
    // In fp32 on CUDA cores the benchmark picks FFT for large filters'
    // planes when it is fastest, and then runs with its workspace.
    if (!op.tensor_cores && !op.low_precision && c_.conv_fft_factor > 0)
      ws = std::max(ws,
                    c_.conv_fft_steady * FftWorkspace(op) / c_.conv_fft_factor);
    return static_cast<int64_t>(ws);
  }

  // The benchmark's trial of a convolution's algorithms, on the first step
  // (RuntimeCosts::conv_trial_bytes, conv_fft_factor): allocated and freed,
  // so only the allocator's cache keeps it.
  void Trial(Mem& m, const ROp& op) const {
    if (!benchmarking_ || op.exec != Exec::kKernel ||
        (op.work != Work::kConv && op.work != Work::kSpatialConv &&
         op.work != Work::kDepthwise))
      return;
    double trial = static_cast<double>(c_.conv_trial_bytes);
    if (op.work == Work::kSpatialConv && !op.low_precision &&
        c_.conv_fft_factor > 0)
      trial = std::max(trial, FftWorkspace(op));
    if (trial >= 1) m.Drop(m.New(static_cast<int64_t>(trial)));
  }

  double FftWorkspace(const ROp& op) const {
    const graph::OpGraph& g = *model_.graph;
    const graph::NodeView n = g.node(op.nodes.front());
    if (n.op_type != "Conv" || n.inputs.size() < 2 || n.outputs.empty())
      return 0.0;
    // cuDNN's FFT algorithms take unit strides and dilations only.
    for (const char* attr : {"strides", "dilations"}) {
      for (const int64_t v : g.GetInts(op.nodes.front(), attr)) {
        if (v != 1) return 0.0;
      }
    }
    const auto dims4 = [&](TensorId t) -> const int64_t* {
      if (t == graph::kNoTensor) return nullptr;
      const auto d = g.tensor(t).dims;
      if (!d || d->size() != 4) return nullptr;
      for (const int64_t v : *d) {
        if (v <= 0) return nullptr;
      }
      return d->data();
    };
    const int64_t* x = dims4(n.inputs[0]);
    const int64_t* w = dims4(n.inputs[1]);
    const int64_t* y = dims4(n.outputs[0]);
    if (!x || !w || !y) return 0.0;
    const double padded = static_cast<double>(x[2] + w[2] - 1) *
                          static_cast<double>(x[3] + w[3] - 1);
    const double planes = static_cast<double>(x[0]) * (x[1] + y[1]);
    return c_.conv_fft_factor * 8.0 * padded * planes;
  }

  bool IsInput(TensorId t) const {
    for (const TensorId i : model_.graph->inputs()) {
      if (i == t) return true;
    }
    return false;
  }

  template <typename Workspace>
  void Backward(Mem& m, std::vector<std::vector<int64_t>>& held, bool* apis,
                Workspace&& workspace, std::vector<int64_t>& grads) {
    const graph::OpGraph& g = *model_.graph;
    // The loss: `.float().mean()` of the outputs. A low-precision output is
    // copied to fp32 first; mean's backward materializes an fp32 gradient of
    // the output's shape, cast back for a low-precision output.
    std::unordered_map<TensorId, int64_t> grad_of;  // tensor -> buffer
    for (const TensorId t : g.outputs()) {
      const int64_t bytes = low_.tensors[t].bytes;
      if (low_.tensors[t].half) {
        m.Drop(m.New(2 * bytes));  // the fp32 copy the mean reads
        const int64_t fp32_grad = m.New(2 * bytes);
        grad_of[t] = m.New(bytes);
        m.Drop(fp32_grad);
      } else {
        grad_of[t] = m.New(bytes);
      }
      const int64_t b = m.buffer_of[t];
      if (b > 0) {
        m.pinned[b] = false;
        m.MaybeFree(b);
      }
    }
    std::unordered_map<TensorId, bool> param_grad;
    for (size_t ri = low_.ops.size(); ri-- > 0;) {
      const ROp& op = low_.ops[ri];
      if (op.exec == Exec::kHost || !HasGrad(op)) continue;
      if (op.exec == Exec::kView) {
        // The gradient of a view is a view of the gradient.
        if (!op.outputs.empty() && !op.inputs.empty() &&
            low_.tensors[op.inputs[0]].grad) {
          auto out = grad_of.find(op.outputs[0]);
          if (out != grad_of.end()) {
            auto in = grad_of.find(op.inputs[0]);
            if (in == grad_of.end()) {
              grad_of[op.inputs[0]] = out->second;
            } else {
              m.Drop(out->second);
            }
            grad_of.erase(op.outputs[0]);
          }
        }
      } else {
        if (ComputeBound(op.work)) workspace(apis, 2);
        Trial(m, op);
        const int64_t ws = ConvWorkspace(op);
        const int64_t ws_buffer = ws > 0 ? m.New(ws) : 0;
        for (const TensorId t : op.inputs) {
          if (!low_.tensors[t].grad) continue;
          const int64_t b = m.New(low_.tensors[t].bytes);
          if (grad_of.count(t)) {
            m.Drop(b);  // summed into the first contribution
          } else {
            grad_of[t] = b;
          }
        }
        for (const TensorId w : op.weights) {
          if (!low_.tensors[w].param || param_grad[w]) continue;
          param_grad[w] = true;
          grads.push_back(m.alloc.Allocate(g.tensor(w).bytes));
        }
        if (ws_buffer > 0) m.Drop(ws_buffer);
      }
      for (const TensorId o : op.outputs) {
        auto it = grad_of.find(o);
        if (it == grad_of.end()) continue;
        m.Drop(it->second);
        grad_of.erase(it);
      }
      m.Release(held[ri]);
    }
    for (auto& [t, b] : grad_of) m.Drop(b);
    // Whatever forward kept that backward did not reach.
    for (auto& kept : held) m.Release(kept);
  }

  const graph::Model& model_;
  const Lowered& low_;
  const DeviceSpec& device_;
  const RuntimeOptions& o_;
  RuntimeCosts c_;
  EfficiencySurface s_;
  AchievablePeaks peaks_;
  double kernel_s_;
  // RuntimeOptions::compute_share: of the SMs, and of the bandwidth.
  double share_ = std::clamp(o_.compute_share, 0.01, 1.0);
  double bandwidth_share_ = std::min(1.0, share_ / kBandwidthShare);
  bool benchmarking_ = false;  // the first simulated step: cuDNN's trials
};

}  // namespace

Result<Runtime> ParseRuntime(std::string_view text) {
  if (text == "none" || text == "roofline") return Runtime::kRoofline;
  if (text == "pytorch") return Runtime::kPyTorch;
  if (text == "onnxruntime" || text == "ort") return Runtime::kOnnxRuntime;
  return BadInput("--runtime '" + std::string(text) +
                  "': expected pytorch, onnxruntime or none");
}

std::string_view RuntimeName(Runtime r) {
  switch (r) {
    case Runtime::kRoofline:
      return "none";
    case Runtime::kPyTorch:
      return "pytorch";
    case Runtime::kOnnxRuntime:
      return "onnxruntime";
  }
  return "none";
}

Result<Amp> ParseAmp(std::string_view text) {
  if (text == "none" || text == "fp32") return Amp::kNone;
  if (text == "bf16") return Amp::kBf16;
  if (text == "fp16") return Amp::kFp16;
  return BadInput("--amp '" + std::string(text) +
                  "': expected bf16, fp16 or none");
}

std::string_view AmpName(Amp a) {
  switch (a) {
    case Amp::kNone:
      return "none";
    case Amp::kBf16:
      return "bf16";
    case Amp::kFp16:
      return "fp16";
  }
  return "none";
}

Result<Attention> ParseAttention(std::string_view text) {
  if (text == "auto") return Attention::kAuto;
  if (text == "fused" || text == "sdpa") return Attention::kFused;
  if (text == "unfused" || text == "math") return Attention::kUnfused;
  return BadInput("--attention '" + std::string(text) +
                  "': expected auto, fused or unfused");
}

std::string_view AttentionName(Attention a) {
  switch (a) {
    case Attention::kAuto:
      return "auto";
    case Attention::kFused:
      return "fused";
    case Attention::kUnfused:
      return "unfused";
  }
  return "auto";
}

RuntimeCosts DefaultCosts(Runtime runtime) {
  RuntimeCosts c;
  switch (runtime) {
    case Runtime::kRoofline:
      return c;
    case Runtime::kPyTorch:
      // Fitted on every run of data/gpu-truth (the zoo on an H100, 17 more
      // architectures on an H200; both precisions, batch 1, batch 32 and
      // training: 138 runs) by bench/estimator/gpu_truth_bench --fit;
      // docs/estimator.md, "Runtimes", has the leave-one-family-out and
      // leave-one-GPU-out errors.
      c.op_s = 29.1e-6;
      c.view_s = 4.31e-6;
      c.cast_s = 8.41e-6;
      c.amp_op_s = 10.1e-6;
      c.record_s = 21.4e-6;
      c.backward_op_s = 12e-6;
      c.optimizer_op_s = 2e-6;
      c.optimizer_fixed_s = 100e-6;
      c.step_fixed_s = 52e-6;
      c.kernel_s = 3.02e-6;
      c.backward_gemm = 2.15;
      c.backward_conv = 3.5;
      c.backward_spatial_conv = 1.47;
      c.backward_depthwise = 4.67;
      c.backward_memory = 2.73;
      c.optimizer_tensor_gpu_s = 7.89e-6;
      c.adam_traffic = 20;
      c.blas_workspace_bytes = int64_t{32} << 20;
      c.conv_workspace_fraction = 2.6;
      c.conv_trial_bytes = int64_t{128} << 20;
      c.conv_fft_factor = 1.4;
      c.conv_fft_steady = 0.3;
      return c;
    case Runtime::kOnnxRuntime:
      c.op_s = 6e-6;
      c.view_s = 2e-6;
      c.cast_s = 4e-6;
      c.step_fixed_s = 30e-6;
      c.kernel_s = 2e-6;
      c.blas_workspace_bytes = int64_t{32} << 20;
      return c;
  }
  return c;
}

AchievablePeaks Achievable(const DeviceSpec& device) {
  if (device.peaks_measured) {
    return {device.fp32_flops, device.tf32_flops, device.fp16_flops,
            device.bf16_flops, device.memory_bandwidth};
  }
  const double* f = kAchievableFraction;
  return {device.fp32_flops * f[0], device.tf32_flops * f[1],
          device.fp16_flops * f[2], device.bf16_flops * f[3],
          device.memory_bandwidth * f[4]};
}

EfficiencySurface DefaultSurface() {
  EfficiencySurface s;
  auto set = [](auto& table, KernelKind k, double max, double half) {
    table[static_cast<size_t>(k)] = KernelEfficiency{max, half};
  };
  // Fractions of the achievable peaks (Achievable), shared by every
  // Hopper GPU: fitted with DefaultCosts (PyTorch 2.11, cuDNN 9.19) on the
  // runs of data/gpu-truth by bench/estimator/gpu_truth_bench --fit.
  set(s.cuda_cores, KernelKind::kGemm, 1.09, 2.47e+09);
  set(s.cuda_cores, KernelKind::kConv, 0.788, 8.83e+08);
  set(s.cuda_cores, KernelKind::kSpatialConv, 1.02, 3.3e+09);
  set(s.cuda_cores, KernelKind::kDepthwiseConv, 0.12, 9.71e+07);
  set(s.tensor_cores, KernelKind::kGemm, 0.898, 2e+10);
  set(s.tensor_cores, KernelKind::kConv, 0.499, 1.8e+10);
  set(s.tensor_cores, KernelKind::kSpatialConv, 0.529, 1.6e+10);
  set(s.tensor_cores, KernelKind::kDepthwiseConv, 0.099 / 0.85, 1.0e8);
  s.elementwise_bandwidth = 0.528;
  s.normalization_bandwidth = 0.605;
  s.reduction_bandwidth = 0.692;
  s.data_movement_bandwidth = 0.643;
  s.kernel_s = 3.02e-6;
  return s;
}

EfficiencySurface ReferenceSweeps() {
  // data/gpu-truth/h200_calibrate.yaml, `efficiency:`.
  EfficiencySurface s;
  s.measured = true;
  auto set = [](auto& table, KernelKind k, double max, double half_gflop) {
    table[static_cast<size_t>(k)] = KernelEfficiency{max, half_gflop * 1e9};
  };
  set(s.cuda_cores, KernelKind::kGemm, 0.9775, 0.477789);
  set(s.cuda_cores, KernelKind::kConv, 0.3759, 0.133765);
  set(s.cuda_cores, KernelKind::kSpatialConv, 1.3401, 1.40299);
  set(s.cuda_cores, KernelKind::kDepthwiseConv, 0.0412, 0.000501934);
  set(s.tensor_cores, KernelKind::kGemm, 1.0117, 2.75805);
  set(s.tensor_cores, KernelKind::kConv, 0.2324, 11.5716);
  set(s.tensor_cores, KernelKind::kSpatialConv, 0.2160, 1.3548);
  s.elementwise_bandwidth = 1.0;
  s.kernel_s = 0.5e-6;
  s.eager_op_s = kReferenceEagerOpS;
  return s;
}

Result<RuntimeEstimate> EstimateRuntime(const graph::Model& model,
                                        std::span<const OpCost> costs,
                                        const DeviceSpec& device,
                                        const RuntimeOptions& options) {
  if (options.runtime == Runtime::kRoofline) {
    return BadInput("runtime 'none' has no runtime model: use ProfileModel");
  }
  if (options.runtime == Runtime::kOnnxRuntime && options.training) {
    return BadInput(
        "--runtime onnxruntime runs inference only: training needs "
        "--runtime pytorch");
  }
  const Lowered low = internal::Lower(model, costs, options);
  return Estimator(model, low, device, options).Run();
}

}  // namespace tessera::estimator
