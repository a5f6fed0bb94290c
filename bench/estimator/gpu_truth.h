#ifndef TESSERA_BENCH_ESTIMATOR_GPU_TRUTH_H_
#define TESSERA_BENCH_ESTIMATOR_GPU_TRUTH_H_

// The estimator against measurements on real GPUs (data/gpu-truth): reads
// the PyTorch eager runs of an H100 (h100_pytorch_eager.json, the zoo) and
// of an H200 (h200_pytorch_eager_more_models.json, models/archs/), predicts
// every run with the PyTorch runtime model on the GPU it ran on and reports
// the errors; fits the runtime's constants (leave-one-architecture-out and
// leave-one-GPU-out for honest held-out errors). Shared by
// bench/estimator/gpu_truth_main.cc and tests/estimator/.

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "estimator/runtime/runtime.h"
#include "graph/graph.h"

namespace tessera::bench {

struct TruthRun {
  std::string device;  // the catalog's name: h100-sxm, h200
  std::string model;
  int batch = 1;
  bool train = false;
  std::string precision;  // fp32, tf32, bf16
  double ms = 0;          // the median step
  // The fastest of the measured steps (0: not recorded). 1 - min_ms / ms is
  // the measurement's own spread: how far the median sits above what the
  // same step can take on a quiet host.
  double min_ms = 0;
  int64_t allocated = 0, reserved = 0;
  // The share of the GPU's threads it ran on (MPS's active thread
  // percentage / 100; 1: the whole GPU).
  double share = 1.0;
  // From the run's per-operator profile (ms per step; < 0: not measured):
  // matrix products forward plus backward, convolutions forward and
  // backward, normalizations forward and backward.
  double gemm_ms = -1, conv_fwd_ms = -1, conv_bwd_ms = -1;
  double norm_fwd_ms = -1, norm_bwd_ms = -1;
};

// Runs of `path` (the "runs" array; the sweep's too when `sweep`). The
// file's "device" names the GPU ("NVIDIA H100 80GB HBM3" -> h100-sxm,
// "NVIDIA H200" -> h200; kBadInput for another).
Result<std::vector<TruthRun>> LoadTruth(const std::string& path, bool sweep);

// Every run of the repository's measurements: the H100's and the H200's
// (and the H100's batch sweep too when `sweep`).
Result<std::vector<TruthRun>> LoadAllTruth(const std::string& source_dir,
                                           bool sweep = false);

// The run of `runs` that is `run` on the whole GPU (share 1: same model,
// batch, mode and precision), or null.
const TruthRun* WholeGpuTwin(const std::vector<TruthRun>& runs,
                             const TruthRun& run);

struct Prediction {
  TruthRun run;
  double ms = 0;
  int64_t allocated = 0, reserved = 0;
  double busy = 0;
  double gemm_ms = 0, conv_fwd_ms = 0, conv_bwd_ms = 0;
  double norm_fwd_ms = 0, norm_bwd_ms = 0;
};

// Loads the models the runs name, once per batch, from the first of `dirs`
// that has NAME.onnx (models/zoo, models/archs).
class TruthModels {
 public:
  explicit TruthModels(std::vector<std::string> dirs)
      : dirs_(std::move(dirs)) {}
  Result<const graph::Model*> Get(const std::string& model, int batch);
  // The file Get loads for `model`: NAME.onnx in the first of the
  // directories that has it (the last one's when none does).
  std::string Path(const std::string& model) const;

 private:
  std::vector<std::string> dirs_;
  std::map<std::pair<std::string, int>, std::unique_ptr<graph::Model>> cache_;
  std::map<std::pair<std::string, int>, std::vector<estimator::OpCost>> costs_;
  friend Result<Prediction> Predict(TruthModels&, const TruthRun&,
                                    const estimator::DeviceSpec&,
                                    const estimator::RuntimeCosts&,
                                    const estimator::EfficiencySurface&);
};

// `device`: the spec of run.device (its efficiency surface decides kernel
// times).
Result<Prediction> Predict(
    TruthModels& models, const TruthRun& run,
    const estimator::DeviceSpec& device, const estimator::RuntimeCosts& costs,
    const estimator::EfficiencySurface& surface = estimator::DefaultSurface());

// Mean absolute relative error (fraction) of time and allocated memory,
// and the mean spread of the runs' own steps (1 - min_ms / ms, over the
// runs that recorded min_ms): an error of the same size as the spread is
// at the measurement's noise floor.
struct Errors {
  double time = 0, memory = 0, reserved = 0;
  double spread = 0;
  int n = 0;
};
Errors MeanErrors(const std::vector<Prediction>& p);

}  // namespace tessera::bench

#endif  // TESSERA_BENCH_ESTIMATOR_GPU_TRUTH_H_
