// SizeModel, ModelDemand, SplitAcrossSlivers.
#include "scheduler/model_jobs.h"

#include <cmath>

#include "common/units.h"
#include "estimator/estimator.h"
#include "placer/cluster.h"
#include "placer/place.h"
#include "placer/plan_io.h"
#include "placer/problem.h"

namespace tessera::scheduler {
namespace {

int64_t ToMiB(double bytes) {
  return static_cast<int64_t>(std::ceil(bytes / static_cast<double>(kMiB)));
}

}  // namespace

Result<SizedModel> SizeModel(const ModelRequest& request,
                             const std::string& kind) {
  graph::LoadOptions options;
  options.keep_proto = false;
  if (request.batch > 0) options.batch = request.batch;
  for (const auto& [name, dims] : request.inputs) {
    options.inputs.push_back({name, dims});
  }
  if (!request.dtype.empty()) {
    auto type = graph::ParseFloatType(request.dtype);
    if (!type) return type.error().WithContext("model.dtype");
    options.float_type = *type;
  }
  auto model = graph::LoadModel(request.path, options);
  if (!model) return model.error().WithContext("model.path");
  const auto catalog = estimator::DeviceCatalog::BuiltIn();
  const estimator::DeviceSpec* spec = catalog.Find(kind);
  if (!spec) return Internal("GPU kind '" + kind + "' is not in the catalog");
  estimator::ProfileOptions profile_options;
  profile_options.training = request.train;
  auto profile = estimator::ProfileModel(*model, *spec, profile_options);
  if (!profile) return profile.error().WithContext("model");
  SizedModel sized;
  sized.peak_bytes = profile->memory.total();
  sized.training = request.train;
  sized.model = std::make_shared<const graph::Model>(std::move(model).value());
  return sized;
}

Resources ModelDemand(const SizedModel& sized, double headroom) {
  Resources r;
  r.gpu_milli = kFullGpuMilli;
  r.gpu_memory_mib =
      ToMiB(static_cast<double>(sized.peak_bytes) * (1.0 + headroom));
  return r;
}

namespace {

// A gang on the slivers of `nodes`: the placer's plan (auto) over their
// residual capacity, or nullopt when it does not fit or needs fewer than
// two slivers.
std::optional<std::pair<Gang, double>> PlanOn(const ClusterState& state,
                                              const std::vector<int>& nodes,
                                              const SizedModel& sized,
                                              double headroom) {
  const Topology& topo = state.topology();
  // The nodes' residual capacity as a cluster spec for the placer.
  std::vector<int> slivers;
  std::string yaml = "nodes:\n";
  for (const int n : nodes) {
    const NodeInfo& node = topo.nodes[n];
    std::string gpus;
    for (const int g : node.gpus) {
      const int milli = state.free_milli(g);
      const int64_t mib = state.free_memory_mib(g);
      if (milli < kMinSliverMilli || mib <= 0 || state.exclusive(g)) continue;
      // Headroom comes off the sliver: the plan's peak must fit in it.
      const auto usable =
          static_cast<int64_t>(static_cast<double>(mib) / (1.0 + headroom));
      gpus += "      - {kind: " + topo.gpus[g].kind +
              ", memory_free: " + std::to_string(usable) +
              "MiB, compute_share: " + std::to_string(milli / 1000.0) + "}\n";
      slivers.push_back(g);
    }
    if (gpus.empty()) continue;
    yaml += "  - name: " + node.name +
            "\n    interconnect: nvlink\n    gpus:\n" + gpus;
  }
  if (slivers.size() < 2) return std::nullopt;
  const auto catalog = estimator::DeviceCatalog::BuiltIn();
  auto cluster = placer::ParseCluster(yaml, "residual capacity", catalog, {});
  if (!cluster) return std::nullopt;
  placer::ProblemOptions problem_options;
  problem_options.training = sized.training;
  auto problem = placer::BuildProblem(*sized.model, *cluster, problem_options);
  if (!problem) return std::nullopt;
  auto plan = placer::Place(*problem, *cluster, placer::Algorithm::kAuto, {});
  if (!plan) return std::nullopt;
  Gang gang;
  for (size_t d = 0; d < slivers.size(); ++d) {
    const placer::DeviceStats& s = plan->sim.devices.at(d);
    if (s.ops == 0) continue;
    GpuShare share;
    share.gpu = slivers[d];
    share.milli = state.free_milli(slivers[d]);
    share.memory_mib =
        std::min(state.free_memory_mib(slivers[d]),
                 ToMiB(static_cast<double>(s.peak_bytes) * (1.0 + headroom)));
    gang.allocation.gpus.push_back(share);
  }
  gang.allocation.node = topo.gpus[gang.allocation.gpus.front().gpu].node;
  for (const GpuShare& share : gang.allocation.gpus) {
    if (topo.gpus[share.gpu].node != gang.allocation.node) {
      gang.allocation.spans_nodes = true;
    }
  }
  gang.plan =
      placer::PlanJson(*problem, *cluster, *plan, {sized.model->path, 1});
  return std::make_pair(std::move(gang), plan->sim.step_s);
}

// The free memory of a node's slivers, for choosing a multi-node gang's
// nodes.
int64_t SliverMemory(const ClusterState& state, int node) {
  int64_t mib = 0;
  for (const int g : state.topology().nodes[node].gpus) {
    if (state.free_milli(g) >= kMinSliverMilli && !state.exclusive(g)) {
      mib += state.free_memory_mib(g);
    }
  }
  return mib;
}

}  // namespace

std::optional<Gang> SplitAcrossSlivers(const ClusterState& state,
                                       std::string_view pool,
                                       const SizedModel& sized, double headroom,
                                       bool multi_node) {
  const Topology& topo = state.topology();
  std::optional<Gang> best;
  double best_step = 0;
  std::vector<int> usable;  // the pool's nodes with a sliver
  for (size_t n = 0; n < topo.nodes.size(); ++n) {
    const NodeInfo& node = topo.nodes[n];
    if (node.pool != pool || node.drained) continue;
    const int ni = static_cast<int>(n);
    if (SliverMemory(state, ni) > 0) usable.push_back(ni);
    auto gang = PlanOn(state, {ni}, sized, headroom);
    if (!gang || (best && gang->second >= best_step)) continue;
    best_step = gang->second;
    best = std::move(gang->first);
  }
  if (best || !multi_node || usable.size() < 2) return best;
  // No node holds it alone: the slivers of the nodes with the most free
  // memory together.
  std::stable_sort(usable.begin(), usable.end(), [&](int a, int b) {
    return SliverMemory(state, a) > SliverMemory(state, b);
  });
  if (usable.size() > kMaxGangNodes) usable.resize(kMaxGangNodes);
  auto gang = PlanOn(state, usable, sized, headroom);
  if (!gang) return std::nullopt;
  return std::move(gang->first);
}

}  // namespace tessera::scheduler
