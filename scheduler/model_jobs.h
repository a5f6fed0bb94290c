#ifndef TESSERA_SCHEDULER_MODEL_JOBS_H_
#define TESSERA_SCHEDULER_MODEL_JOBS_H_

// Jobs that ask by model: the estimator sizes them, and when one fits no
// single GPU's free capacity the placer splits it over the free slivers of
// one node's GPUs, admitted as a gang.

#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "estimator/runtime/runtime.h"
#include "placer/report/plan_report.h"
#include "scheduler/job.h"
#include "scheduler/start_decision.h"
#include "scheduler/topology.h"

// Declared only: the queue's headers do not pull in the graph (and Boost);
// the files that look into a model include graph/graph.h.
namespace tessera::graph {
struct Model;
}  // namespace tessera::graph

namespace tessera::scheduler {

// A GPU with less free compute than this is no sliver worth a part of a
// split model (SplitAcrossSlivers leaves it out).
inline constexpr int kMinSliverMilli = 100;

// A loaded model job: the graph (kept for splitting) and what one GPU would
// have to hold.
struct SizedModel {
  std::shared_ptr<const graph::Model> model;
  // What one GPU must hold: the PyTorch runtime model's reserved peak
  // (docs/estimator.md, "Runtimes").
  int64_t peak_bytes = 0;
  // peak_bytes / what the placer's memory model (the operator roofline's)
  // says one GPU needs: a split's parts are scaled by it, so that a split
  // and a whole GPU are sized by the same runtime model.
  double plan_scale = 1.0;
  bool training = false;
  estimator::Amp amp = estimator::Amp::kNone;  // the request's autocast
  // The PyTorch runtime model's step alone on one whole GPU of the kind,
  // and the fraction of it the GPU is busy (what sharing the GPU costs:
  // estimator::CoLocationSlowdown).
  double step_s = 0;
  double busy_fraction = 0.94;
  // Its speed alone on a share of the GPU's threads (MPS's active thread
  // percentage), relative to the whole GPU: the runtime model's step at
  // share 1 over its step at kSliverShares[i] (estimator::RuntimeOptions::
  // compute_share); SliverSpeed interpolates.
  std::array<double, 4> sliver_speed = {1, 1, 1, 1};
};
inline constexpr std::array<double, 4> kSliverShares = {0.1, 0.25, 0.5, 1.0};

// What `milli` of a GPU's threads buys `sized` alone, relative to the
// whole GPU, in (0, 1]: linear between SizedModel::sliver_speed's shares,
// proportional below the first.
double SliverSpeed(const SizedModel& sized, int milli);
// The speed of `sized` on a fraction of `milli` under `law`, relative to
// the whole GPU: under MPS (the launcher caps the job's threads at the
// fraction) what that share buys it alone, SliverSpeed; time-slicing (or
// a linear law) gives it the whole GPU in turns, 1, and the co-location
// law charges the sharing.
double FractionSpeed(const SizedModel& sized, const InterferenceLaw& law,
                     int milli);

// Loads and sizes `request` (by path; any file this process can read: the
// command line's tools) on the pool's GPU kind `kind`. kBadInput naming the
// field: "model.path: ..." when the model does not load, or its inputs are
// unbound.
Result<SizedModel> SizeModel(const ModelRequest& request,
                             const std::string& kind);
// The two halves of SizeModel(request, kind), for callers that size many
// models on threads of their own (sim/model_workload.cc): loading runs
// ONNX's shape inference in a forked child (common/isolated.h), so call
// LoadRequestedModel where no other thread of the caller is busy; sizing
// forks nothing and may run on any thread.
Result<graph::Model> LoadRequestedModel(const ModelRequest& request);
Result<SizedModel> SizeLoadedModel(graph::Model model,
                                   const ModelRequest& request,
                                   const std::string& kind);

// Which model files the queue service reads for its users
// (docs/serve_config.md, model_roots): regular files under the admin's
// model_roots (symbolic links resolved), and the models users uploaded.
inline constexpr int64_t kDefaultMaxModelBytes = int64_t{512} << 20;
inline constexpr int64_t kDefaultMaxUploadBytes = int64_t{64} << 20;
// A model with more nodes (subgraphs' included) is refused before shape
// inference: the largest exported LLMs have tens of thousands.
inline constexpr int64_t kMaxModelNodes = 100'000;
// Protobuf fields at every depth (the zoo's models have 5 to 12 per node),
// counted before parsing: parsing allocates per field, up to ~200 bytes for
// a field of 2 to 14 bytes (docs/http_api.md#models has the measured bound).
inline constexpr int64_t kMaxModelFields = 1'000'000;
struct ModelFiles {
  // Canonical directories (no symbolic links); empty: no job by path.
  std::vector<std::string> roots;
  int64_t max_model_bytes = kDefaultMaxModelBytes;
  // Where uploaded models are, as <upload_dir>/<sha256>.onnx; "": none.
  std::string upload_dir;
  int64_t max_upload_bytes = kDefaultMaxUploadBytes;
};

// The one answer for a path the service does not read: outside the roots,
// missing, unreadable, not a regular file, too big. It never says which, so
// that nobody can probe the server's files.
std::string NotAModelFileMessage(const ModelFiles& files);

// The bytes of the model `request` names, read under `files`'s rules: by
// path, a regular file of at most max_model_bytes inside one of the roots
// (opened O_NOFOLLOW | O_NONBLOCK on its canonical path, checked and read on
// that one descriptor); by upload id, <upload_dir>/<id>.onnx. kBadInput
// naming model.path or model.upload.
Result<std::string> ReadModelBytes(const ModelRequest& request,
                                   const ModelFiles& files);

// ReadModelBytes, then loads (at most kMaxModelFields fields and
// kMaxModelNodes nodes) and sizes it like
// SizeModel. External-data references are never followed: the weights'
// values are not needed, and no file but the model's is opened.
Result<SizedModel> SizeModel(const ModelRequest& request,
                             const std::string& kind, const ModelFiles& files);

// What a GPU reserves for a predicted reserved peak (bytes): the peak x
// (1 + headroom), and at least the peak + kReserveSlackBytes, in MiB.
// The headroom covers the spread of the prediction (the caching
// allocator's segments, cuDNN's benchmark trials, library workspaces the
// runtime model places differently); the slack covers what a small job's
// first steps take beyond any fraction of it (cuDNN's trial workspaces of
// 100-150 MiB on the H200). On every run of data/gpu-truth, with the
// default model_headroom of 0.28, this covers the allocated peak of all
// and the reserved peak of at least 95%, at a median of 1.28x the reserved
// peak (tests/scheduler/reservation_truth_test.cc; docs/scheduler.md).
inline constexpr int64_t kReserveSlackBytes = int64_t{96} << 20;
inline constexpr double kDefaultModelHeadroom = 0.28;
int64_t ReserveMiB(double peak_bytes, double headroom);
// The largest predicted peak (bytes) a GPU with `mib` free can take: the
// inverse of ReserveMiB.
double UsableBytes(int64_t mib, double headroom);

// The resources a model job reserves on one GPU: ReserveMiB of its peak,
// and the whole GPU's compute (1000 milli).
Resources ModelDemand(const SizedModel& sized, double headroom);

// A gang for `sized` on one node of `pool`: the placer's plan (auto) over
// the free memory and compute of the node's GPUs (those with at least
// kMinSliverMilli free), each GPU the plan uses reserving the plan's peak x
// (1 + headroom) and the free compute it assumed. The node whose plan has
// the shortest step wins. With `multi_node` (a launcher that starts one
// part per node) and no node able to hold it alone, the slivers of the
// kMaxGangNodes nodes with the most free memory together, linked by the
// network (an Allocation with spans_nodes). nullopt when nothing holds it.
struct Gang {
  Allocation allocation;
  nlohmann::json plan;  // plan.json
  // The plan's timeline and graph (placer::RenderPlanPictures), drawn on
  // demand: only for the gang a job starts on, not for every trial split.
  std::function<placer::PlanPictures()> pictures;
};
// A multi-node gang spans at most this many nodes: the placer's time grows
// with the GPUs it considers, and a split over more nodes than this is
// dominated by the network.
inline constexpr size_t kMaxGangNodes = 4;
// A split plan's speed against one whole GPU with co-location left out
// (the split decision charges that separately): the devices' busy time at
// full speed (busy_ms x compute_share) over the plan's step at the largest
// compute share it used (step_time_ms x that share: the step no slower
// stage than the fastest-served one would have, so the speed is a lower
// bound). In (0, 1]; 1 for a plan without devices.
double SplitSpeed(const nlohmann::json& plan);

std::optional<Gang> SplitAcrossSlivers(const ClusterState& state,
                                       std::string_view pool,
                                       const SizedModel& sized, double headroom,
                                       bool multi_node = false);

}  // namespace tessera::scheduler

#endif  // TESSERA_SCHEDULER_MODEL_JOBS_H_
