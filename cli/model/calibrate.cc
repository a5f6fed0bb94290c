// `tessera calibrate`: micro-benchmarks of one GPU, written as a device YAML
// that `--devices` (estimator::DeviceCatalog::MergeYaml) reads.
#include "cli/model/calibrate.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/output.h"
#include "cuda/calibrate.h"
#include "cuda/calibration_yaml.h"
#include "estimator/estimator.h"

namespace tessera::cli {
namespace {

bool IsValidName(const std::string& name) {
  return !name.empty() && std::ranges::all_of(name, [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.';
  });
}

nlohmann::ordered_json FitJson(const cuda::TransferFit& fit) {
  return {{"latency_s", fit.latency_s},
          {"bytes_per_second", fit.bytes_per_second},
          {"points", fit.points},
          {"max_relative_error", fit.max_relative_error}};
}

nlohmann::ordered_json EfficiencyJson(const cuda::EfficiencyCalibration& e) {
  if (!e.ran) return nullptr;
  nlohmann::ordered_json sweeps = nlohmann::ordered_json::array();
  for (const cuda::KernelSweep& s : e.sweeps) {
    nlohmann::ordered_json samples = nlohmann::ordered_json::array();
    for (const cuda::KernelSample& k : s.samples) {
      samples.push_back(
          {{"shape", k.shape}, {"flops", k.flops}, {"seconds", k.seconds}});
    }
    nlohmann::ordered_json fit = nullptr;
    if (s.fit.points > 0) {
      fit = {{"max", s.fit.max},
             {"half_flops", s.fit.half_flops},
             {"points", s.fit.points},
             {"rms_error", s.fit.rms_error},
             {"max_abs_error", s.fit.max_abs_error}};
    }
    sweeps.push_back({{"kind", s.kind},
                      {"tensor_cores", s.tensor_cores},
                      {"dtype", s.dtype},
                      {"peak_flops", s.peak_flops},
                      {"fit", fit},
                      {"dropped", s.dropped},
                      {"samples", samples}});
  }
  return {{"kernel_s", e.kernel_s},
          {"elementwise", e.elementwise.points > 0
                              ? FitJson(e.elementwise)
                              : nlohmann::ordered_json(nullptr)},
          {"elementwise_bandwidth", e.elementwise_bandwidth},
          {"eager_op_s", e.eager_op_s},
          {"sweeps", sweeps}};
}

nlohmann::ordered_json ResultJson(const cuda::CalibrationResult& r,
                                  const std::string& name,
                                  const std::string& yaml) {
  nlohmann::ordered_json out = {
      {"name", name},
      {"gpu", r.gpu_index},
      {"gpu_name", r.gpu_name},
      {"compute_capability",
       std::to_string(r.compute_major) + "." + std::to_string(r.compute_minor)},
      {"date", r.date},
      {"memory_bytes", r.memory_bytes},
      {"gemm_size", r.gemm_size},
      {"fp32_flops", r.fp32_flops},
      {"tf32_flops", r.tf32_flops},
      {"fp16_flops", r.fp16_flops},
      {"bf16_flops", r.bf16_flops},
      {"int8_ops", r.int8_ops},
      {"memory_bandwidth", r.memory_bandwidth},
      {"memory_test_bytes", r.memory_test_bytes},
      {"host_to_device", FitJson(r.host_to_device)},
      {"device_to_host", FitJson(r.device_to_host)},
      {"peer_to_peer", r.p2p_peer >= 0 ? FitJson(r.peer_to_peer)
                                       : nlohmann::ordered_json(nullptr)},
      {"p2p_peer", r.p2p_peer},
      {"launch_overhead_s", r.launch_overhead_s},
      {"efficiency", EfficiencyJson(r.efficiency)},
      {"notes", r.notes},
      {"yaml", yaml}};
  return out;
}

}  // namespace

int RunCalibrate(const CalibrateArgs& args) {
  if (args.gpu < 0) {
    return ReportError(BadInput("--gpu " + std::to_string(args.gpu) +
                                ": a CUDA device index is 0 or more"));
  }
  const std::string name = args.name.empty()
                               ? "calibrated-gpu" + std::to_string(args.gpu)
                               : args.name;
  if (!IsValidName(name)) {
    return ReportError(BadInput("--name '" + name +
                                "' may use only a-z, 0-9, '-', '_' and '.'"));
  }
  if (!args.base.empty()) {
    const estimator::DeviceCatalog catalog =
        estimator::DeviceCatalog::BuiltIn();
    if (Result<const estimator::DeviceSpec*> base = catalog.Get(args.base);
        !base) {
      return ReportError(base.error().WithContext("--base"));
    }
  }
  cuda::CalibrateOptions options;
  options.gpu = args.gpu;
  options.quick = args.quick;
  options.efficiency = !args.skip_efficiency;
  const bool tty = isatty(fileno(stderr)) != 0;
  options.progress = [tty](const std::string& what) {
    if (tty) std::cerr << "calibrate: " << what << "\n";
  };
  Result<cuda::CalibrationResult> result = cuda::Calibrate(options);
  if (!result) return ReportError(result.error());
  const std::string yaml = cuda::CalibrationYaml(*result, name, args.base);

  const bool to_stdout = args.output.empty() || args.output == "-";
  if (!to_stdout) {
    std::ofstream out(args.output);
    out << yaml;
    out.close();
    if (!out) {
      return ReportError(
          BadInput("-o " + args.output + ": cannot write the file"));
    }
  }
  if (args.json) {
    std::cout << ResultJson(*result, name, yaml).dump(2) << "\n";
  } else if (to_stdout) {
    std::cout << yaml;
  } else {
    std::cerr << "wrote " << args.output << " (device '" << name
              << "'); use it with --devices " << args.output << " --device "
              << name << "\n";
  }
  for (const std::string& note : result->notes) Warn(note);
  return 0;
}

}  // namespace tessera::cli
