// IdleReserve: the idle GPUs a whole-GPU pod could still use, counted per
// node and kept up to date after each reservation.
#include "sim/replay_reserve_internal.h"

namespace tessera::sim {

using scheduler::Allocation;
using scheduler::ClusterState;
using scheduler::kFullGpuMilli;

IdleReserve::IdleReserve(const ClusterState& state, Need per_gpu, double keep)
    : need_(per_gpu), keep_(keep), on_node_(state.topology().nodes.size(), 0) {
  for (size_t n = 0; n < on_node_.size(); ++n) {
    on_node_[n] = CountOn(state, static_cast<int>(n));
    idle_ += on_node_[n];
  }
}

bool IdleReserve::Counts(const ClusterState& state, int gpu) const {
  const int node = state.topology().gpus[gpu].node;
  return state.holders_on(gpu) == 0 &&
         static_cast<double>(state.free_cpu_milli(node)) >= need_.cpu_milli &&
         static_cast<double>(state.free_memory_mib_on_node(node)) >=
             need_.memory_mib;
}

int IdleReserve::CountOn(const ClusterState& state, int node) const {
  int n = 0;
  for (const int g : state.topology().nodes[node].gpus) n += Counts(state, g);
  return n;
}

bool IdleReserve::Refuses(const ClusterState& state, const TracePod& pod,
                          const Allocation& a) const {
  if (pod.num_gpu != 1 || pod.gpu_milli >= kFullGpuMilli) return false;
  if (a.gpus.size() != 1 || !Counts(state, a.gpus[0].gpu)) return false;
  return static_cast<double>(idle_) < keep_;
}

void IdleReserve::Update(const ClusterState& state, const Allocation& a) {
  const auto redo = [&](int node) {
    if (node < 0) return;
    idle_ -= on_node_[node];
    on_node_[node] = CountOn(state, node);
    idle_ += on_node_[node];
  };
  redo(a.node);
  const auto& gpus = state.topology().gpus;
  for (const scheduler::GpuShare& s : a.gpus) {
    if (gpus[s.gpu].node != a.node) redo(gpus[s.gpu].node);
  }
}

double ReserveGpus(const std::vector<TracePod>& pods, double share,
                   size_t gpus) {
  double whole = 0, all = 0;
  for (const TracePod& p : pods) {
    const double milli = static_cast<double>(p.num_gpu) * p.gpu_milli;
    all += milli;
    if (p.num_gpu == 1 && p.gpu_milli >= kFullGpuMilli) whole += milli;
  }
  if (all <= 0) return 0;
  return share * (whole / all) * static_cast<double>(gpus);
}

}  // namespace tessera::sim
