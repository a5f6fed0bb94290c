#include "bench/estimator/gpu_truth.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace tessera::bench {

Result<std::vector<TruthRun>> LoadTruth(const std::string& path, bool sweep) {
  std::ifstream in(path);
  if (!in) return BadInput(path + ": cannot read");
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return BadInput(path + ": not JSON");
  const std::string gpu = j.value("device", "");
  std::string device;
  if (gpu.starts_with("NVIDIA H100")) device = "h100-sxm";
  if (gpu.starts_with("NVIDIA H200")) device = "h200";
  if (device.empty()) {
    return BadInput(path + ": device '" + gpu + "' is not a catalog GPU");
  }
  std::vector<TruthRun> runs;
  for (const char* key : {"runs", "sweep"}) {
    if (std::string(key) == "sweep" && !sweep) continue;
    if (!j.contains(key)) continue;
    for (const auto& r : j[key]) {
      if (!r.contains("median_ms")) continue;
      TruthRun t;
      t.device = device;
      t.model = r.value("model", "");
      t.batch = r.value("batch", 1);
      t.train = r.value("train", false);
      t.precision = r.value("precision", "fp32");
      t.ms = r.value("median_ms", 0.0);
      t.min_ms = r.value("min_ms", 0.0);
      t.allocated = r.value("allocated_peak_bytes", int64_t{0});
      t.reserved = r.value("reserved_peak_bytes", int64_t{0});
      if (r.contains("mps_active_thread_percentage") &&
          r["mps_active_thread_percentage"].is_number()) {
        t.share = r["mps_active_thread_percentage"].get<double>() / 100.0;
      }
      if (r.contains("profile")) {
        auto sum = [&](std::initializer_list<const char*> ops) {
          double us = 0;
          bool any = false;
          for (const auto& o : r["profile"]) {
            const std::string name = o.value("op", "");
            for (const char* want : ops) {
              if (name == want) {
                us += o.value("self_device_us_per_step", 0.0);
                any = true;
              }
            }
          }
          return any ? us / 1e3 : -1.0;
        };
        t.gemm_ms = sum({"aten::addmm", "aten::mm", "aten::bmm"});
        t.conv_fwd_ms =
            sum({"aten::cudnn_convolution", "aten::_conv_depthwise2d"});
        t.conv_bwd_ms = sum({"aten::convolution_backward"});
        t.norm_fwd_ms =
            sum({"aten::cudnn_batch_norm", "aten::native_layer_norm"});
        t.norm_bwd_ms = sum({"aten::cudnn_batch_norm_backward",
                             "aten::native_layer_norm_backward"});
      }
      runs.push_back(t);
    }
  }
  return runs;
}

Result<std::vector<TruthRun>> LoadAllTruth(const std::string& source_dir,
                                           bool sweep) {
  std::vector<TruthRun> all;
  for (const char* file :
       {"h100_pytorch_eager.json", "h200_pytorch_eager_more_models.json"}) {
    auto runs = LoadTruth(source_dir + "/data/gpu-truth/" + file, sweep);
    if (!runs) return runs.error();
    all.insert(all.end(), runs->begin(), runs->end());
  }
  return all;
}

const TruthRun* WholeGpuTwin(const std::vector<TruthRun>& runs,
                             const TruthRun& run) {
  const TruthRun* whole = nullptr;
  for (const TruthRun& o : runs) {
    if (o.model == run.model && o.batch == run.batch && o.train == run.train &&
        o.precision == run.precision && o.share == 1.0)
      whole = &o;
  }
  return whole;
}

std::string TruthModels::Path(const std::string& model) const {
  std::string path;
  for (const std::string& dir : dirs_) {
    path = dir + "/" + model + ".onnx";
    if (std::filesystem::exists(path)) break;
  }
  return path;
}

Result<const graph::Model*> TruthModels::Get(const std::string& model,
                                             int batch) {
  const auto key = std::make_pair(model, batch);
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second.get();
  graph::LoadOptions options;
  options.batch = batch;
  auto m = graph::LoadModel(Path(model), options);
  if (!m) return m.error();
  auto owned = std::make_unique<graph::Model>(std::move(m).value());
  costs_[key] = estimator::CostAll(*owned->graph);
  const graph::Model* raw = owned.get();
  cache_[key] = std::move(owned);
  return raw;
}

Result<Prediction> Predict(TruthModels& models, const TruthRun& run,
                           const estimator::DeviceSpec& device,
                           const estimator::RuntimeCosts& costs,
                           const estimator::EfficiencySurface& surface) {
  auto model = models.Get(run.model, run.batch);
  if (!model) return model.error();
  estimator::RuntimeOptions o;
  o.runtime = estimator::Runtime::kPyTorch;
  o.training = run.train;
  o.costs = costs;
  o.surface = surface;
  o.tf32 = run.precision == "tf32";
  if (run.precision == "bf16") o.amp = estimator::Amp::kBf16;
  o.compute_share = run.share;
  auto e = estimator::EstimateRuntime(
      **model, models.costs_[{run.model, run.batch}], device, o);
  if (!e) return e.error();
  Prediction p;
  p.run = run;
  p.ms = e->step_s * 1e3;
  p.allocated = e->live_peak_bytes;
  p.reserved = e->reserved_peak_bytes;
  p.busy = e->gpu_busy_fraction();
  p.gemm_ms = (e->gemm_forward_s + e->gemm_backward_s) * 1e3;
  p.conv_fwd_ms = e->conv_forward_s * 1e3;
  p.conv_bwd_ms = e->conv_backward_s * 1e3;
  p.norm_fwd_ms = e->norm_forward_s * 1e3;
  p.norm_bwd_ms = e->norm_backward_s * 1e3;
  return p;
}

Errors MeanErrors(const std::vector<Prediction>& p) {
  Errors e;
  int spread_n = 0;
  for (const Prediction& x : p) {
    if (x.run.min_ms > 0 && x.run.ms > 0) {
      e.spread += 1 - x.run.min_ms / x.run.ms;
      ++spread_n;
    }
    e.time += std::abs(x.ms - x.run.ms) / x.run.ms;
    e.memory += std::abs(static_cast<double>(x.allocated - x.run.allocated)) /
                static_cast<double>(x.run.allocated);
    e.reserved += std::abs(static_cast<double>(x.reserved - x.run.reserved)) /
                  static_cast<double>(x.run.reserved);
    ++e.n;
  }
  if (e.n > 0) {
    e.time /= e.n;
    e.memory /= e.n;
    e.reserved /= e.n;
  }
  if (spread_n > 0) e.spread /= spread_n;
  return e;
}

}  // namespace tessera::bench
