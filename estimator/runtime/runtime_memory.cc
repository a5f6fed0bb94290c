// The memory of a step under a runtime (docs/estimator.md, "Runtimes", 3):
// the lowered graph's buffers through the caching allocator's simulation.
// Forward allocates each output when its operator runs and frees a buffer
// after its last reader unless autograd holds it for backward; backward
// allocates the gradients and lets the saved buffers go; the optimizer
// keeps its state from the first step on.

#include <algorithm>
#include <unordered_map>
#include <vector>

#include "estimator/runtime/caching_allocator.h"
#include "estimator/runtime/runtime_internal.h"

namespace tessera::estimator::internal {
namespace {

using graph::TensorId;

class StepMemory {
 public:
  StepMemory(const graph::Model& model, const Lowered& low,
             const RuntimeOptions& o)
      : model_(model), low_(low), o_(o), c_(o.costs) {}

  // Two steps (the first creates the optimizer state and runs cuDNN's
  // benchmark, as the measurements' warm-ups do); the peaks are the second's.
  void Run(RuntimeEstimate& e) {
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

 private:
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
      const bool grad = o_.training && HasGrad(low_, op);
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
    if (!op.fft.valid()) return 0.0;
    const double padded = static_cast<double>(op.fft.padded_h) *
                          static_cast<double>(op.fft.padded_w);
    const double planes =
        op.fft.batch * (op.fft.in_channels + op.fft.out_channels);
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
      if (op.exec == Exec::kHost || !HasGrad(low_, op)) continue;
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
  const RuntimeOptions& o_;
  // Memory reads only the allocator's and the workspaces' costs, which the
  // device's host speed does not scale.
  const RuntimeCosts& c_;
  bool benchmarking_ = false;  // the first simulated step: cuDNN's trials
};

}  // namespace

void FollowMemory(const graph::Model& model, const Lowered& low,
                  const RuntimeOptions& options, RuntimeEstimate& e) {
  StepMemory(model, low, options).Run(e);
}

}  // namespace tessera::estimator::internal
