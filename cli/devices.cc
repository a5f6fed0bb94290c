// `tessera devices`: the catalog, with the datasheets its figures come from.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/output.h"
#include "cli/profile.h"
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
  return 0;
}

}  // namespace tessera::cli
