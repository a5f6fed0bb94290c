#include "estimator/device_catalog.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tessera::estimator {

std::string_view DeviceKindName(DeviceKind kind) {
  return kind == DeviceKind::kCpu ? "cpu" : "gpu";
}

std::string_view KernelKindName(KernelKind kind) {
  switch (kind) {
    case KernelKind::kGemm:
      return "gemm";
    case KernelKind::kConv:
      return "conv";
    case KernelKind::kSpatialConv:
      return "spatial_conv";
    case KernelKind::kDepthwiseConv:
      return "depthwise_conv";
  }
  return "gemm";
}

double PeakFlops(const DeviceSpec& device, graph::DataType dtype,
                 bool tensor_cores) {
  using graph::DataType;
  switch (dtype) {
    case DataType::kFloat32:
      return tensor_cores ? device.tf32_flops : device.fp32_flops;
    case DataType::kFloat16:
      return tensor_cores ? device.fp16_flops : device.fp32_flops;
    case DataType::kBfloat16:
      return tensor_cores ? device.bf16_flops : device.fp32_flops;
    case DataType::kInt8:
    case DataType::kUint8:
      return tensor_cores ? device.int8_ops : device.fp32_flops;
    case DataType::kFloat64:
    case DataType::kComplex128:
      return device.fp32_flops / kFp64SlowdownFallback;
    default:
      return device.fp32_flops;
  }
}

Result<DeviceCatalog> DeviceCatalog::BuiltInWith(const std::string& path) {
  DeviceCatalog catalog = BuiltIn();
  if (!path.empty()) TESSERA_RETURN_IF_ERROR(catalog.MergeYaml(path));
  return catalog;
}

const DeviceSpec* DeviceCatalog::Find(std::string_view name) const {
  for (const DeviceSpec& d : devices_) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

DeviceSpec* DeviceCatalog::FindMutable(std::string_view name) {
  return const_cast<DeviceSpec*>(std::as_const(*this).Find(name));
}

std::vector<std::string> DeviceCatalog::Names() const {
  std::vector<std::string> names;
  names.reserve(devices_.size());
  for (const DeviceSpec& d : devices_) names.push_back(d.name);
  return names;
}

Result<const DeviceSpec*> DeviceCatalog::Get(std::string_view name) const {
  if (const DeviceSpec* d = Find(name)) return d;
  std::string known;
  for (const DeviceSpec& d : devices_) {
    known += (known.empty() ? "" : ", ") + d.name;
  }
  return BadInput("unknown device '" + std::string(name) +
                  "' (known: " + known + ")");
}

}  // namespace tessera::estimator
