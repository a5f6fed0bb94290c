// SizeModel, ModelDemand, SplitAcrossSlivers.
#include "scheduler/model_jobs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <optional>

#include "common/units.h"
#include "estimator/estimator.h"
#include "placer/core/cluster.h"
#include "placer/core/place.h"
#include "placer/core/problem.h"
#include "placer/core/simulator.h"
#include "placer/report/plan_io.h"

namespace tessera::scheduler {
namespace {

// The most pairs of ideals the queue's exact contiguous split tries (the
// placer's default is 50 million, seconds on GPT-2 priced by the runtime).
constexpr int64_t kQueueExactBlocks = 500'000;

int64_t ToMiB(double bytes) {
  return static_cast<int64_t>(std::ceil(bytes / static_cast<double>(kMiB)));
}

// The bytes of the file open on `fd` (a regular file of `size` bytes), at
// most `max` bytes; nullopt when it is larger or a read fails.
std::optional<std::string> ReadAll(int fd, int64_t size, int64_t max) {
  std::string bytes;
  bytes.resize(static_cast<size_t>(std::min(size, max) + 1));
  size_t got = 0;
  while (got < bytes.size()) {
    const ssize_t n = read(fd, bytes.data() + got, bytes.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  if (static_cast<int64_t>(got) > max) return std::nullopt;  // it grew
  bytes.resize(got);
  return bytes;
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// `path` (canonical) is `root` (canonical) or below it, by whole components.
bool Inside(const std::filesystem::path& path,
            const std::filesystem::path& root) {
  auto p = path.begin();
  for (auto r = root.begin(); r != root.end(); ++r, ++p) {
    if (r->empty()) continue;  // a trailing separator
    if (p == path.end() || *p != *r) return false;
  }
  return p != path.end();
}

bool InsideAny(const std::string& path, const std::vector<std::string>& roots) {
  return std::any_of(roots.begin(), roots.end(), [&](const std::string& r) {
    return Inside(std::filesystem::path(path), std::filesystem::path(r));
  });
}

// Opens `path` (no symbolic link as its last component, never blocking on a
// FIFO or a device), and reads it if it is a regular file of at most `max`
// bytes and, with `roots`, the file opened really is inside one of them (so
// a directory swapped for a link between the check and the open is caught).
std::optional<std::string> ReadRegularFile(
    const std::string& path, int64_t max,
    const std::vector<std::string>* roots) {
  Fd fd(open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) return std::nullopt;
  struct stat st {};
  if (fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > max) {
    return std::nullopt;
  }
  if (roots != nullptr) {
    std::error_code ec;
    const auto opened = std::filesystem::read_symlink(
        "/proc/self/fd/" + std::to_string(fd.get()), ec);
    if (!ec && !InsideAny(opened.string(), *roots)) return std::nullopt;
    if (ec) {
      // No /proc: the file opened must at least be the one checked.
      struct stat checked {};
      if (lstat(path.c_str(), &checked) != 0 || checked.st_dev != st.st_dev ||
          checked.st_ino != st.st_ino) {
        return std::nullopt;
      }
    }
  }
  return ReadAll(fd.get(), st.st_size, max);
}

}  // namespace

std::string NotAModelFileMessage(const ModelFiles& files) {
  return "model.path: not a readable model file under the service's "
         "model_roots (a regular file of at most " +
         std::to_string(files.max_model_bytes) +
         " bytes inside one of the directories the admin lists; or upload "
         "the model: tessera submit --model FILE)";
}

Result<std::string> ReadModelBytes(const ModelRequest& request,
                                   const ModelFiles& files) {
  if (!request.upload.empty()) {
    const std::string unknown =
        "model.upload: no uploaded model '" + request.upload +
        "' on this service (upload it first: POST /v1/models, or tessera "
        "submit --model FILE)";
    if (!IsUploadId(request.upload) || files.upload_dir.empty()) {
      return BadInput(unknown);
    }
    std::optional<std::string> bytes =
        ReadRegularFile(files.upload_dir + "/" + request.upload + ".onnx",
                        files.max_upload_bytes, nullptr);
    if (!bytes) return BadInput(unknown);
    return std::move(*bytes);
  }
  if (files.roots.empty()) {
    return BadInput(
        "model.path: this service reads no model files by path (its admin "
        "enables it by listing directories as model_roots in the serve "
        "config); upload the model instead: tessera submit --model FILE, or "
        "POST /v1/models and \"model\": {\"upload\": ID}");
  }
  const std::string refused = NotAModelFileMessage(files);
  if (request.path.empty() || request.path[0] != '/' ||
      request.path.find('\0') != std::string::npos) {
    return BadInput(refused);
  }
  // Resolves every symbolic link; fails for a missing file.
  char* resolved = realpath(request.path.c_str(), nullptr);
  if (resolved == nullptr) return BadInput(refused);
  const std::string canonical(resolved);
  free(resolved);  // NOLINT(cppcoreguidelines-no-malloc): realpath's
  if (!InsideAny(canonical, files.roots)) return BadInput(refused);
  std::optional<std::string> bytes =
      ReadRegularFile(canonical, files.max_model_bytes, &files.roots);
  if (!bytes) return BadInput(refused);
  return std::move(*bytes);
}

namespace {

Result<graph::LoadOptions> LoadOptionsOf(const ModelRequest& request) {
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
  return options;
}

Result<SizedModel> Size(graph::Model model, const ModelRequest& request,
                        const std::string& kind) {
  const auto catalog = estimator::DeviceCatalog::BuiltIn();
  const estimator::DeviceSpec* spec = catalog.Find(kind);
  if (!spec) return Internal("GPU kind '" + kind + "' is not in the catalog");
  estimator::ProfileOptions profile_options;
  profile_options.training = request.train;
  // Jobs run as PyTorch eager jobs do (docs/estimator.md, "Runtimes"): the
  // queue reserves what the caching allocator holds at its peak.
  profile_options.runtime.runtime = estimator::Runtime::kPyTorch;
  if (!request.amp.empty()) {
    auto amp = estimator::ParseAmp(request.amp);
    if (!amp) return amp.error().WithContext("model.amp");
    profile_options.runtime.amp = *amp;
  }
  auto profile = estimator::ProfileModel(model, *spec, profile_options);
  if (!profile) return profile.error().WithContext("model");
  SizedModel sized;
  sized.peak_bytes =
      std::max(profile->runtime->reserved_peak_bytes, profile->memory.total());
  const int64_t roofline = profile->roofline_memory.total();
  if (roofline > 0) {
    sized.plan_scale =
        static_cast<double>(sized.peak_bytes) / static_cast<double>(roofline);
  }
  sized.training = request.train;
  sized.amp = profile_options.runtime.amp;
  if (profile->runtime) {
    sized.step_s = profile->runtime->step_s;
    sized.busy_fraction = profile->runtime->gpu_busy_fraction();
    const std::vector<estimator::OpCost> costs =
        estimator::CostAll(*model.graph);
    estimator::RuntimeOptions ro = profile_options.runtime;
    ro.training = request.train;
    for (size_t i = 0; i + 1 < kSliverShares.size(); ++i) {
      ro.compute_share = kSliverShares[i];
      auto e = estimator::EstimateRuntime(model, costs, *spec, ro);
      if (e && e->step_s > 0)
        sized.sliver_speed[i] = std::min(1.0, sized.step_s / e->step_s);
    }
  }
  sized.model = std::make_shared<const graph::Model>(std::move(model));
  return sized;
}

}  // namespace

Result<SizedModel> SizeModel(const ModelRequest& request,
                             const std::string& kind, const ModelFiles& files) {
  Result<std::string> bytes = ReadModelBytes(request, files);
  if (!bytes) return bytes.error();
  Result<graph::LoadOptions> options = LoadOptionsOf(request);
  if (!options) return options.error();
  options->max_nodes = kMaxModelNodes;
  options->max_fields = kMaxModelFields;
  const bool upload = !request.upload.empty();
  auto model = graph::LoadModelFromBytes(std::move(bytes).value(),
                                         upload ? request.upload : request.path,
                                         *options);
  if (!model) {
    return model.error().WithContext(upload ? "model.upload" : "model.path");
  }
  return Size(std::move(model).value(), request, kind);
}

Result<graph::Model> LoadRequestedModel(const ModelRequest& request) {
  Result<graph::LoadOptions> options = LoadOptionsOf(request);
  if (!options) return options.error();
  auto model = graph::LoadModel(request.path, *options);
  if (!model) return model.error().WithContext("model.path");
  return model;
}

Result<SizedModel> SizeLoadedModel(graph::Model model,
                                   const ModelRequest& request,
                                   const std::string& kind) {
  return Size(std::move(model), request, kind);
}

Result<SizedModel> SizeModel(const ModelRequest& request,
                             const std::string& kind) {
  auto model = LoadRequestedModel(request);
  if (!model) return model.error();
  return Size(std::move(model).value(), request, kind);
}

double SliverSpeed(const SizedModel& sized, int milli) {
  const double share = std::clamp(milli / 1000.0, 0.001, 1.0);
  const auto& x = kSliverShares;
  const auto& y = sized.sliver_speed;
  if (share <= x[0]) return y[0] * share / x[0];
  for (size_t i = 1; i < x.size(); ++i) {
    if (share <= x[i]) {
      const double f = (share - x[i - 1]) / (x[i] - x[i - 1]);
      return y[i - 1] + f * (y[i] - y[i - 1]);
    }
  }
  return y.back();
}

double FractionSpeed(const SizedModel& sized, const InterferenceLaw& law,
                     int milli) {
  return law.sharing == estimator::GpuSharing::kMps && !law.alpha
             ? SliverSpeed(sized, milli)
             : 1.0;
}

int64_t ReserveMiB(double peak_bytes, double headroom) {
  return ToMiB(std::max(peak_bytes * (1.0 + headroom),
                        peak_bytes + static_cast<double>(kReserveSlackBytes)));
}

double UsableBytes(int64_t mib, double headroom) {
  const double bytes = static_cast<double>(mib) * static_cast<double>(kMiB);
  return std::max(0.0,
                  std::min(bytes / (1.0 + headroom),
                           bytes - static_cast<double>(kReserveSlackBytes)));
}

Resources ModelDemand(const SizedModel& sized, double headroom) {
  Resources r;
  r.gpu_milli = kFullGpuMilli;
  r.gpu_memory_mib =
      ReserveMiB(static_cast<double>(sized.peak_bytes), headroom);
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
      // The placer sizes parts with its own memory model: give it the
      // sliver in those terms (SizedModel::plan_scale).
      const auto usable =
          static_cast<int64_t>(UsableBytes(mib, headroom) /
                               static_cast<double>(kMiB) / sized.plan_scale);
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
  // Priced as `tessera plan` prices it by default.
  problem_options.runtime = placer::DefaultRuntime(*cluster);
  problem_options.amp = sized.amp;
  auto problem = placer::BuildProblem(*sized.model, *cluster, problem_options);
  if (!problem) return std::nullopt;
  // The exact contiguous search (run when no split of the topological
  // order fits) stops after kQueueExactBlocks: a round must stay short, and
  // a count, unlike a time limit, decides alike on every machine.
  placer::PlaceOptions place_options;
  place_options.pipeline_exact_max_blocks = kQueueExactBlocks;
  auto plan = placer::Place(*problem, *cluster, placer::Algorithm::kAuto,
                            place_options);
  if (!plan) return std::nullopt;
  Gang gang;
  for (size_t d = 0; d < slivers.size(); ++d) {
    const placer::DeviceStats& s = plan->sim.devices.at(d);
    if (s.ops == 0) continue;
    GpuShare share;
    share.gpu = slivers[d];
    share.milli = state.free_milli(slivers[d]);
    share.memory_mib = std::min(
        state.free_memory_mib(slivers[d]),
        ReserveMiB(static_cast<double>(s.peak_bytes) * sized.plan_scale,
                   headroom));
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
  const double step_s = plan->sim.step_s;
  struct Drawn {
    placer::Problem problem;
    placer::Cluster cluster;
    placer::Plan plan;
    std::shared_ptr<const graph::Model> model;  // what the problem names
  };
  auto drawn = std::make_shared<const Drawn>(Drawn{
      std::move(*problem), std::move(*cluster), std::move(*plan), sized.model});
  gang.pictures = [drawn] {
    placer::Plan recorded = drawn->plan;
    placer::SimOptions sim;
    sim.microbatches = recorded.microbatches;
    sim.record_ops = true;
    recorded.sim = placer::Simulate(drawn->problem, drawn->cluster,
                                    recorded.placement, sim);
    return placer::RenderPlanPictures(drawn->problem, drawn->cluster, recorded);
  };
  return std::make_pair(std::move(gang), step_s);
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

double SplitSpeed(const nlohmann::json& plan) {
  double full = 0, largest = 0;
  for (const nlohmann::json& d :
       plan.value("devices", nlohmann::json::array())) {
    if (d.value("ops", 0) == 0) continue;
    const double share = d.value("compute_share", 1.0);
    full += d.value("busy_ms", 0.0) * share;
    largest = std::max(largest, share);
  }
  const double step = plan.value("step_time_ms", 0.0) * largest;
  if (!(full > 0) || !(step > 0)) return 1;
  return std::clamp(full / step, 0.01, 1.0);
}

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
