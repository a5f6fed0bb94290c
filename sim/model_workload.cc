// The model-job workload: duration distributions, sizing the (model, batch)
// kinds, the Poisson generator, and what a job asks for under each
// admission. model_sim.cc replays the jobs.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <thread>

#include "common/strings.h"
#include "estimator/estimator.h"
#include "graph/graph.h"
#include "scheduler/parallel.h"
#include "sim/model_workload.h"

namespace tessera::sim {

// What this file uses of scheduler/, beyond what its headers name.
using scheduler::kFullGpuMilli;
using scheduler::LoadRequestedModel;
using scheduler::ModelDemand;
using scheduler::ModelRequest;
using scheduler::NodeInfo;
using scheduler::ParallelFor;
using scheduler::SizeLoadedModel;

namespace {

// A finite number, the whole of `text`.
std::optional<double> ParseNumber(std::string_view text) {
  const std::string s(text);
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

ModelRequest TrainingRequest(const std::string& path, int batch) {
  ModelRequest request;
  request.path = path;
  request.batch = batch;
  request.train = true;
  return request;
}

Result<ModelJobKind> SizeKind(graph::Model model, const std::string& path,
                              int batch, const std::string& kind,
                              double headroom) {
  auto sized =
      SizeLoadedModel(std::move(model), TrainingRequest(path, batch), kind);
  if (!sized) return sized.error().WithContext("paths");
  ModelJobKind k;
  k.path = path;
  k.name = std::filesystem::path(path).stem().string() + "/b" +
           std::to_string(batch);
  k.batch = batch;
  k.demand_mib = ModelDemand(*sized, headroom).gpu_memory_mib;
  // Its step alone on one whole GPU and how busy the GPU is, from the
  // PyTorch runtime model (SizeModel's), which also prices the placer's
  // splits: SplitCache's speed is a ratio of the two.
  k.step_s = sized->step_s;
  k.busy_fraction = sized->busy_fraction;
  k.sized = std::move(sized).value();
  return k;
}

}  // namespace

double DurationDistribution::Sample(std::mt19937_64& rng) const {
  switch (kind) {
    case Kind::kFixed:
      return a;
    case Kind::kExponential:
      return std::exponential_distribution<double>(1.0 / a)(rng);
    case Kind::kUniform:
      return std::uniform_real_distribution<double>(a, b)(rng);
    case Kind::kLognormal:
      return std::lognormal_distribution<double>(a, b)(rng);
  }
  return a;
}

double DurationDistribution::Mean() const {
  switch (kind) {
    case Kind::kFixed:
    case Kind::kExponential:
      return a;
    case Kind::kUniform:
      return (a + b) / 2;
    case Kind::kLognormal:
      return std::exp(a + b * b / 2);
  }
  return a;
}

Result<DurationDistribution> ParseDurationDistribution(std::string_view spec,
                                                       std::string_view field) {
  const std::string prefix =
      std::string(field) + ": '" + std::string(spec) + "': ";
  const size_t colon = spec.find(':');
  if (colon == std::string_view::npos) {
    return BadInput(prefix +
                    "expected DIST:PARAMS, one of fixed:S, exp:MEAN, "
                    "uniform:LO,HI, lognormal:MU,SIGMA (seconds)");
  }
  const std::string_view name = spec.substr(0, colon);
  std::vector<double> params;
  for (const std::string_view p : Split(spec.substr(colon + 1), ',')) {
    const auto v = ParseNumber(p);
    if (!v) return BadInput(prefix + "'" + std::string(p) + "' is no number");
    params.push_back(*v);
  }
  using Kind = DurationDistribution::Kind;
  struct Known {
    std::string_view name;
    Kind kind;
    size_t params;
    std::string_view usage;
  };
  static constexpr Known kKnown[] = {
      {"fixed", Kind::kFixed, 1, "fixed:S"},
      {"exp", Kind::kExponential, 1, "exp:MEAN"},
      {"uniform", Kind::kUniform, 2, "uniform:LO,HI"},
      {"lognormal", Kind::kLognormal, 2, "lognormal:MU,SIGMA"}};
  const auto* known =
      std::find_if(std::begin(kKnown), std::end(kKnown),
                   [&](const Known& k) { return k.name == name; });
  if (known == std::end(kKnown)) {
    return BadInput(prefix + "unknown distribution '" + std::string(name) +
                    "' (fixed, exp, uniform, lognormal)");
  }
  if (params.size() != known->params) {
    return BadInput(prefix + "expected " + std::string(known->usage));
  }
  DurationDistribution d;
  d.kind = known->kind;
  d.a = params[0];
  d.b = params.size() > 1 ? params[1] : 0;
  switch (d.kind) {
    case Kind::kFixed:
    case Kind::kExponential:
      if (d.a <= 0) return BadInput(prefix + "the seconds must be > 0");
      break;
    case Kind::kUniform:
      if (d.a <= 0 || d.b < d.a) {
        return BadInput(prefix + "expected 0 < LO <= HI");
      }
      break;
    case Kind::kLognormal:
      if (d.b < 0) return BadInput(prefix + "SIGMA must be >= 0");
      if (d.a + d.b * d.b / 2 > 30) {
        return BadInput(prefix + "the mean duration exp(MU + SIGMA^2/2) " +
                        "is over 10^13 s");
      }
      break;
  }
  return d;
}

Result<std::vector<ModelJobKind>> SizeModelJobKinds(
    const std::vector<std::string>& paths, const std::vector<int>& batches,
    const std::string& kind, double headroom, int threads,
    const std::function<void(int done, int total)>& progress) {
  if (paths.empty()) return BadInput("paths: no model files");
  if (batches.empty()) return BadInput("batches: no batch sizes");
  for (const int b : batches) {
    if (b < 1) {
      return BadInput("batches: " + std::to_string(b) +
                      " is not a positive batch size");
    }
  }
  const int total = static_cast<int>(paths.size() * batches.size());
  // Loaded here, one after another, and sized on the threads: loading forks
  // ONNX's shape inference, which must not happen beside busy threads
  // (common/isolated.h).
  std::vector<std::optional<Result<graph::Model>>> loaded(total);
  for (int i = 0; i < total; ++i) {
    const size_t p = static_cast<size_t>(i) / batches.size();
    const size_t b = static_cast<size_t>(i) % batches.size();
    loaded[i] = LoadRequestedModel(TrainingRequest(paths[p], batches[b]));
    if (!*loaded[i]) return loaded[i]->error().WithContext("paths");
  }
  std::vector<std::optional<Result<ModelJobKind>>> out(total);
  std::mutex mu;
  int done = 0;
  ParallelFor(total, threads, [&](int i) {
    const size_t p = static_cast<size_t>(i) / batches.size();
    const size_t b = static_cast<size_t>(i) % batches.size();
    out[i] = SizeKind(std::move(*loaded[i]).value(), paths[p], batches[b], kind,
                      headroom);
    std::lock_guard lock(mu);
    ++done;
    if (progress) progress(done, total);
  });
  std::vector<ModelJobKind> kinds;
  kinds.reserve(total);
  for (auto& k : out) {
    if (!*k) return k->error();
    kinds.push_back(std::move(*k).value());
  }
  return kinds;
}

std::vector<ModelJob> GenerateModelJobs(int num_kinds,
                                        const ModelWorkloadOptions& options,
                                        uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> gap(options.arrival_per_hour / 3600.0);
  std::uniform_int_distribution<int> kind(0, num_kinds - 1);
  std::vector<ModelJob> jobs(std::max(0, options.jobs));
  double t = 0;
  for (ModelJob& job : jobs) {
    t += gap(rng);
    job.arrival_s = t;
    job.kind = kind(rng);
    job.duration_s = options.duration.Sample(rng);
  }
  return jobs;
}

std::string_view AdmissionName(Admission a) {
  switch (a) {
    case Admission::kWhole:
      return "whole";
    case Admission::kFraction:
      return "fraction";
    case Admission::kSplit:
      return "split";
    case Admission::kTessera:
      return "tessera";
  }
  return "?";
}

Resources FractionDemand(const ModelJobKind& kind, int64_t gpu_memory_mib) {
  Resources r;
  r.gpu_memory_mib = kind.demand_mib;
  const double share = std::ceil(static_cast<double>(kFullGpuMilli) *
                                 static_cast<double>(kind.demand_mib) /
                                 static_cast<double>(gpu_memory_mib));
  r.gpu_milli = static_cast<int>(
      std::clamp<double>(share, kMinShareMilli, kFullGpuMilli));
  return r;
}

Resources WholeDemand(const ModelJobKind& kind, int64_t gpu_memory_mib) {
  Resources r;
  r.gpus = static_cast<int>(std::max<int64_t>(
      1, (kind.demand_mib + gpu_memory_mib - 1) / gpu_memory_mib));
  return r;
}

Result<std::string> ResolveModelPool(const Topology& topology,
                                     std::string_view pool) {
  if (pool.empty()) {
    if (topology.pools.empty()) return BadInput("the cluster has no pools");
    return topology.pools[0];
  }
  if (!topology.HasPool(pool)) {
    std::string known;
    for (const std::string& p : topology.pools) {
      known += (known.empty() ? "" : ", ") + p;
    }
    return BadInput("pool: unknown pool '" + std::string(pool) +
                    "' (the config has " + known + ")");
  }
  return std::string(pool);
}

const GpuInfo* PoolGpu(const Topology& topology, std::string_view pool) {
  for (const NodeInfo& n : topology.nodes) {
    if (n.pool == pool && !n.gpus.empty()) return &topology.gpus[n.gpus[0]];
  }
  return nullptr;
}

}  // namespace tessera::sim
