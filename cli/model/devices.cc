// `tessera devices`: the catalog, with the datasheets its figures come from.
#include <array>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "cli/model/profile.h"
#include "cli/output.h"
#include "common/strings.h"
#include "estimator/estimator.h"

namespace tessera::cli {
namespace {

std::string Tera(double per_second) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", per_second / 1e12);
  return buf;
}

std::string GigaPerSecond(double bytes_per_second) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.0f", bytes_per_second / 1e9);
  return buf;
}

// The measured efficiency surface (device YAML `efficiency:`); kinds that
// were not measured (max 0) are left out.
nlohmann::ordered_json EfficiencyJson(const estimator::EfficiencySurface& e) {
  const auto cores = [](const std::array<estimator::KernelEfficiency,
                                         estimator::kNumKernelKinds>& curves) {
    nlohmann::ordered_json out = nlohmann::ordered_json::object();
    for (size_t k = 0; k < curves.size(); ++k) {
      if (curves[k].max <= 0) continue;
      out[std::string(
          estimator::KernelKindName(static_cast<estimator::KernelKind>(k)))] = {
          {"max", curves[k].max}, {"half_flops", curves[k].half_flops}};
    }
    return out;
  };
  return {{"kernel_s", e.kernel_s},
          {"eager_op_s", e.eager_op_s},
          {"bandwidth",
           {{"elementwise", e.elementwise_bandwidth},
            {"normalization", e.normalization_bandwidth},
            {"reduction", e.reduction_bandwidth},
            {"data_movement", e.data_movement_bandwidth}}},
          {"cuda_cores", cores(e.cuda_cores)},
          {"tensor_cores", cores(e.tensor_cores)}};
}

// One line of the text output's "measured efficiency" section.
std::string EfficiencyText(const estimator::EfficiencySurface& e) {
  std::string out;
  char buf[96];
  const auto add = [&](const std::string& part) {
    out += (out.empty() ? "" : "; ") + part;
  };
  if (e.kernel_s > 0) {
    std::snprintf(buf, sizeof(buf), "kernel %.2f us", e.kernel_s * 1e6);
    add(buf);
  }
  if (e.eager_op_s > 0) {
    std::snprintf(buf, sizeof(buf), "eager op %.1f us", e.eager_op_s * 1e6);
    add(buf);
  }
  const std::pair<const char*, double> bandwidths[] = {
      {"elementwise", e.elementwise_bandwidth},
      {"normalization", e.normalization_bandwidth},
      {"reduction", e.reduction_bandwidth},
      {"data movement", e.data_movement_bandwidth}};
  for (const auto& [name, fraction] : bandwidths) {
    if (fraction <= 0) continue;
    std::snprintf(buf, sizeof(buf), "%s %.2f of bandwidth", name, fraction);
    add(buf);
  }
  for (const bool tensor : {false, true}) {
    const auto& curves = tensor ? e.tensor_cores : e.cuda_cores;
    for (size_t k = 0; k < curves.size(); ++k) {
      if (curves[k].max <= 0) continue;
      std::snprintf(buf, sizeof(buf), "%s %s %.2f (half at %.3g GFLOP)",
                    std::string(estimator::KernelKindName(
                                    static_cast<estimator::KernelKind>(k)))
                        .c_str(),
                    tensor ? "tensor cores" : "CUDA cores", curves[k].max,
                    curves[k].half_flops / 1e9);
      add(buf);
    }
  }
  return out;
}

}  // namespace

int RunDevices(const DevicesArgs& args) {
  auto loaded = estimator::DeviceCatalog::BuiltInWith(args.devices_yaml);
  if (!loaded) return ReportError(loaded.error());
  const estimator::DeviceCatalog& catalog = *loaded;
  if (args.json) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const auto& d : catalog.devices()) {
      out.push_back(
          {{"name", d.name},
           {"display_name", d.display_name},
           {"kind", d.kind == estimator::DeviceKind::kGpu ? "gpu" : "cpu"},
           {"memory_bytes", d.memory_bytes},
           {"fp32_flops", d.fp32_flops},
           {"tf32_flops", d.tf32_flops},
           {"fp16_flops", d.fp16_flops},
           {"bf16_flops", d.bf16_flops},
           {"int8_ops", d.int8_ops},
           {"memory_bandwidth", d.memory_bandwidth},
           {"nvlink_bandwidth", d.nvlink_bandwidth},
           {"pcie_bandwidth", d.pcie_bandwidth},
           {"launch_overhead_s", d.launch_overhead_s},
           {"sources", d.sources}});
      if (d.efficiency.measured) {
        out.back()["efficiency"] = EfficiencyJson(d.efficiency);
      }
    }
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  TextTable table(
      {"name", "device", "memory", "FP32", "TF32", "FP16", "BF16", "INT8",
       "mem GB/s", "NVLink GB/s", "PCIe GB/s"},
      {false, false, true, true, true, true, true, true, true, true, true});
  for (const auto& d : catalog.devices()) {
    table.AddRow(
        {d.name, d.display_name, HumanBytes(d.memory_bytes), Tera(d.fp32_flops),
         Tera(d.tf32_flops), Tera(d.fp16_flops), Tera(d.bf16_flops),
         Tera(d.int8_ops), GigaPerSecond(d.memory_bandwidth),
         GigaPerSecond(d.nvlink_bandwidth), GigaPerSecond(d.pcie_bandwidth)});
  }
  std::cout << "dense peak throughput in TFLOP/s (INT8: TOPS); links per "
               "direction\n\n"
            << table.Render() << "\nsources\n";
  for (const auto& d : catalog.devices()) {
    std::cout << "  " << d.name << ": " << d.sources << "\n";
  }
  bool any_measured = false;
  for (const auto& d : catalog.devices()) {
    if (!d.efficiency.measured) continue;
    if (!any_measured) std::cout << "\nmeasured efficiency\n";
    any_measured = true;
    std::cout << "  " << d.name << ": " << EfficiencyText(d.efficiency) << "\n";
  }
  return 0;
}

}  // namespace tessera::cli
