#ifndef TESSERA_BENCH_ESTIMATOR_GPU_TRUTH_H_
#define TESSERA_BENCH_ESTIMATOR_GPU_TRUTH_H_

// The estimator against measurements on a real GPU (data/gpu-truth): reads
// h100_pytorch_eager.json, predicts every run with the PyTorch runtime model
// and reports the errors; fits the runtime's constants (leave-one-model-out
// for honest held-out errors). Shared by bench/estimator/gpu_truth_main.cc
// and tests/estimator/runtime_truth_test.cc.

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "estimator/runtime.h"
#include "graph/graph.h"

namespace tessera::bench {

struct TruthRun {
  std::string model;
  int batch = 1;
  bool train = false;
  std::string precision;  // fp32, tf32, bf16
  double ms = 0;
  int64_t allocated = 0, reserved = 0;
  // From the run's per-operator profile (ms per step; < 0: not measured):
  // matrix products forward plus backward, convolutions forward and
  // backward, normalizations forward and backward.
  double gemm_ms = -1, conv_fwd_ms = -1, conv_bwd_ms = -1;
  double norm_fwd_ms = -1, norm_bwd_ms = -1;
};

// Runs of `path` (the "runs" array; the sweep's too when `sweep`).
Result<std::vector<TruthRun>> LoadTruth(const std::string& path, bool sweep);

struct Prediction {
  TruthRun run;
  double ms = 0;
  int64_t allocated = 0, reserved = 0;
  double busy = 0;
  double gemm_ms = 0, conv_fwd_ms = 0, conv_bwd_ms = 0;
  double norm_fwd_ms = 0, norm_bwd_ms = 0;
};

// Loads the zoo models the runs name from `zoo_dir` once per batch.
class TruthModels {
 public:
  explicit TruthModels(std::string zoo_dir) : dir_(std::move(zoo_dir)) {}
  Result<const graph::Model*> Get(const std::string& model, int batch);

 private:
  std::string dir_;
  std::map<std::pair<std::string, int>, std::unique_ptr<graph::Model>> cache_;
  std::map<std::pair<std::string, int>, std::vector<estimator::OpCost>> costs_;
  friend Result<Prediction> Predict(TruthModels&, const TruthRun&,
                                    const estimator::DeviceSpec&,
                                    const estimator::RuntimeCosts&);
};

Result<Prediction> Predict(TruthModels& models, const TruthRun& run,
                           const estimator::DeviceSpec& device,
                           const estimator::RuntimeCosts& costs);

// Mean absolute relative error (fraction) of time and allocated memory.
struct Errors {
  double time = 0, memory = 0, reserved = 0;
  int n = 0;
};
Errors MeanErrors(const std::vector<Prediction>& p);

}  // namespace tessera::bench

#endif  // TESSERA_BENCH_ESTIMATOR_GPU_TRUTH_H_
