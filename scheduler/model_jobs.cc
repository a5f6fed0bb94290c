// SizeModel, ModelDemand, SplitAcrossSlivers.
#include "scheduler/model_jobs.h"

#include <cmath>

#include "estimator/estimator.h"
#include "placer/cluster.h"
#include "placer/place.h"
#include "placer/plan_io.h"
#include "placer/problem.h"

namespace tessera::scheduler {
namespace {

constexpr int64_t kMiB = 1024 * 1024;

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

std::optional<Gang> SplitAcrossSlivers(const ClusterState& state,
                                       std::string_view pool,
                                       const SizedModel& sized,
                                       double headroom) {
  const Topology& topo = state.topology();
  const auto catalog = estimator::DeviceCatalog::BuiltIn();
  std::optional<Gang> best;
  double best_step = 0;
  for (size_t n = 0; n < topo.nodes.size(); ++n) {
    const NodeInfo& node = topo.nodes[n];
    if (node.pool != pool || node.drained) continue;
    // The node's residual capacity as a cluster spec for the placer.
    std::vector<int> slivers;
    std::string yaml = "nodes:\n  - name: " + node.name +
                       "\n    interconnect: nvlink\n    gpus:\n";
    for (const int g : node.gpus) {
      const int milli = state.free_milli(g);
      const int64_t mib = state.free_memory_mib(g);
      if (milli < kMinSliverMilli || mib <= 0 || state.exclusive(g)) continue;
      // Headroom comes off the sliver: the plan's peak must fit in it.
      const auto usable =
          static_cast<int64_t>(static_cast<double>(mib) / (1.0 + headroom));
      yaml += "      - {kind: " + topo.gpus[g].kind +
              ", memory_free: " + std::to_string(usable) +
              "MiB, compute_share: " + std::to_string(milli / 1000.0) + "}\n";
      slivers.push_back(g);
    }
    if (slivers.size() < 2) continue;
    auto cluster =
        placer::ParseCluster(yaml, "residual " + node.name, catalog, {});
    if (!cluster) continue;
    placer::ProblemOptions problem_options;
    problem_options.training = sized.training;
    auto problem =
        placer::BuildProblem(*sized.model, *cluster, problem_options);
    if (!problem) continue;
    auto plan = placer::Place(*problem, *cluster, placer::Algorithm::kAuto, {});
    if (!plan || (best && plan->sim.step_s >= best_step)) continue;
    Gang gang;
    gang.allocation.node = static_cast<int>(n);
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
    gang.plan =
        placer::PlanJson(*problem, *cluster, *plan, {sized.model->path, 1});
    best_step = plan->sim.step_s;
    best = std::move(gang);
  }
  return best;
}

}  // namespace tessera::scheduler
