// DeviceCatalog::MergeYaml: devices added or overridden from a YAML file.
// The format is documented at MergeYaml in device_catalog.h.

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <exception>
#include <filesystem>
#include <iterator>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "estimator/device_catalog.h"
#include "estimator/device_yaml_internal.h"

namespace tessera::estimator {
namespace {

// The fields of a device entry, as MergeYaml's comment lists them.
constexpr std::string_view kFields[] = {
    "name",           "base",
    "display_name",   "kind",
    "memory",         "memory_bandwidth",
    "fp32_tflops",    "tf32_tflops",
    "fp16_tflops",    "bf16_tflops",
    "int8_tops",      "nvlink_bandwidth",
    "pcie_bandwidth", "launch_overhead",
    "sources",        "efficiency",
    "peaks",
};
constexpr std::string_view kRequiredForNew[] = {
    "memory", "memory_bandwidth", "fp32_tflops", "pcie_bandwidth"};

// Marks a throughput a new device did not give; replaced by fp32_flops.
constexpr double kUnset = -1;

template <typename Range>
std::string JoinQuoted(const Range& items) {
  std::string out;
  for (const auto& item : items) {
    out += (out.empty() ? "'" : ", '") + std::string(item) + "'";
  }
  return out;
}

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

// "FILE:LINE: " for a yaml-cpp mark, or "FILE: " when it has none.
std::string At(const std::string& path, const YAML::Mark& mark) {
  if (mark.is_null() || mark.line < 0) return path + ": ";
  return path + ":" + std::to_string(mark.line + 1) + ": ";
}
std::string At(const std::string& path, const YAML::Node& node) {
  return At(path, node.Mark());
}

bool IsKnownField(std::string_view key) {
  return std::ranges::find(kFields, key) != std::end(kFields);
}

bool IsValidName(std::string_view name) {
  return !name.empty() && std::ranges::all_of(name, [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.';
  });
}

bool IsBlank(std::string_view s) {
  return s.find_first_not_of(" \t") == std::string_view::npos;
}

// A throughput in units of 10^12 per second, as a plain positive number.
Result<double> ParseTera(std::string_view text) {
  size_t begin = text.find_first_not_of(" \t");
  size_t end = text.find_last_not_of(" \t");
  std::string_view t = begin == std::string_view::npos
                           ? ""
                           : text.substr(begin, end - begin + 1);
  double value = 0;
  auto [stop, ec] = std::from_chars(t.data(), t.data() + t.size(), value,
                                    std::chars_format::general);
  if (t.empty() || ec != std::errc() || stop != t.data() + t.size() ||
      !std::isfinite(value)) {
    return BadInput("'" + std::string(text) +
                    "' must be a plain number of 10^12 per second, e.g. 312");
  }
  if (value < 0) {
    return BadInput("'" + std::string(text) + "' must not be negative");
  }
  if (value == 0) return BadInput("must be positive");
  return value * 1e12;
}

Status Positive(Result<double> value, double* out) {
  TESSERA_RETURN_IF_ERROR(value);
  if (*value <= 0) return BadInput("must be positive");
  *out = *value;
  return {};
}

// Sets the field `key` (not name or base) of `spec` from `text`.
Status ApplyField(std::string_view key, const std::string& text,
                  DeviceSpec* spec) {
  if (key == "display_name" || key == "sources") {
    if (IsBlank(text)) return BadInput("must not be empty");
    (key == "sources" ? spec->sources : spec->display_name) = text;
    if (key == "sources" && text.starts_with("measured by tessera calibrate")) {
      spec->peaks_measured = true;
    }
  } else if (key == "peaks") {
    if (text != "measured" && text != "datasheet") {
      return BadInput("'" + text + "': expected measured or datasheet");
    }
    spec->peaks_measured = text == "measured";
  } else if (key == "kind") {
    if (text != "gpu" && text != "cpu") {
      return BadInput("'" + text + "' is not a device kind (use gpu or cpu)");
    }
    spec->kind = text == "cpu" ? DeviceKind::kCpu : DeviceKind::kGpu;
  } else if (key == "memory") {
    Result<int64_t> bytes = ParseBytes(text);
    TESSERA_RETURN_IF_ERROR(bytes);
    if (*bytes <= 0) return BadInput("must be positive");
    spec->memory_bytes = *bytes;
  } else if (key == "memory_bandwidth") {
    return Positive(ParseBandwidth(text), &spec->memory_bandwidth);
  } else if (key == "pcie_bandwidth") {
    return Positive(ParseBandwidth(text), &spec->pcie_bandwidth);
  } else if (key == "nvlink_bandwidth") {
    Result<double> bw = ParseBandwidth(text);
    TESSERA_RETURN_IF_ERROR(bw);
    spec->nvlink_bandwidth = *bw;
  } else if (key == "launch_overhead") {
    Result<double> seconds = ParseSeconds(text);
    TESSERA_RETURN_IF_ERROR(seconds);
    spec->launch_overhead_s = *seconds;
  } else {
    double* target = key == "fp32_tflops"   ? &spec->fp32_flops
                     : key == "tf32_tflops" ? &spec->tf32_flops
                     : key == "fp16_tflops" ? &spec->fp16_flops
                     : key == "bf16_tflops" ? &spec->bf16_flops
                                            : &spec->int8_ops;
    Result<double> flops = ParseTera(text);
    TESSERA_RETURN_IF_ERROR(flops);
    *target = *flops;
  }
  return {};
}

using Fields = std::vector<std::pair<std::string, YAML::Node>>;

// Checks that `entry` is a map of known, distinct, scalar fields.
Result<Fields> CollectFields(const std::string& path, const std::string& label,
                             const YAML::Node& entry) {
  if (!entry.IsMap()) {
    return BadInput(At(path, entry) + label +
                    ": expected a map of fields, e.g. '- name: my-gpu'");
  }
  Fields fields;
  std::set<std::string> keys;
  for (const auto& kv : entry) {
    if (!kv.first.IsScalar()) {
      return BadInput(At(path, kv.first) + label +
                      ": a field name must be a plain word");
    }
    const std::string& key = kv.first.Scalar();
    if (!IsKnownField(key)) {
      return BadInput(At(path, kv.first) + label + ": unknown field '" + key +
                      "' (known: " + JoinQuoted(kFields) + ")");
    }
    if (!keys.insert(key).second) {
      return BadInput(At(path, kv.first) + label + ": field '" + key +
                      "' is given twice");
    }
    // `efficiency` is a map, checked by ApplyEfficiencyYaml.
    if (key != "efficiency" && !kv.second.IsScalar()) {
      return BadInput(
          At(path, kv.first) + label + ": field '" + key + "' " +
          (kv.second.IsNull() ? "has no value" : "must be a single value"));
    }
    fields.emplace_back(key, kv.second);
  }
  return fields;
}

const YAML::Node* FindField(const Fields& fields, std::string_view key) {
  for (const auto& [k, v] : fields) {
    if (k == key) return &v;
  }
  return nullptr;
}

std::string KnownNames(const std::vector<DeviceSpec>& devices) {
  std::vector<std::string> names;
  names.reserve(devices.size());
  for (const DeviceSpec& d : devices) names.push_back(d.name);
  return Join(names);
}

// The device an entry starts from: a copy of its base, the existing device
// of that name, or a new one with unset throughputs.
Result<DeviceSpec> StartingSpec(const std::string& path,
                                const std::string& label,
                                const std::string& name, const Fields& fields,
                                const std::vector<DeviceSpec>& devices) {
  const DeviceSpec* existing = nullptr;
  const DeviceSpec* base = nullptr;
  const YAML::Node* base_node = FindField(fields, "base");
  for (const DeviceSpec& d : devices) {
    if (d.name == name) existing = &d;
    if (base_node != nullptr && d.name == base_node->Scalar()) base = &d;
  }
  if (base_node != nullptr) {
    if (base == nullptr) {
      return BadInput(At(path, *base_node) + label + ": field 'base': " +
                      "unknown device '" + base_node->Scalar() +
                      "' (known: " + KnownNames(devices) + ")");
    }
    DeviceSpec spec = *base;
    spec.name = name;
    spec.display_name = name;
    spec.sources = "copy of " + base->name + " (" + base->sources + ")";
    return spec;
  }
  if (existing != nullptr) return *existing;
  std::vector<std::string> missing;
  for (std::string_view f : kRequiredForNew) {
    if (FindField(fields, f) == nullptr) missing.emplace_back(f);
  }
  if (!missing.empty()) {
    return BadInput(At(path, fields.front().second) + label +
                    ": a new device needs field(s) " + Join(missing) +
                    " (or 'base' to copy another device's figures)");
  }
  DeviceSpec spec;
  spec.name = spec.display_name = name;
  spec.tf32_flops = spec.fp16_flops = spec.bf16_flops = spec.int8_ops = kUnset;
  spec.launch_overhead_s = kUnset;
  spec.sources = "from " + path;
  return spec;
}

// Applies devices[index] of the file to `devices`.
Status ApplyEntry(const std::string& path, size_t index,
                  const YAML::Node& entry, std::vector<DeviceSpec>* devices,
                  std::set<std::string>* seen) {
  // Errors name the entry by its name when it has a usable one.
  std::string label = "devices[" + std::to_string(index) + "]";
  if (entry.IsMap()) {
    const YAML::Node name = entry["name"];
    if (name && name.IsScalar() && IsValidName(name.Scalar())) {
      label = "device '" + name.Scalar() + "'";
    }
  }
  Result<Fields> fields = CollectFields(path, label, entry);
  TESSERA_RETURN_IF_ERROR(fields);
  const YAML::Node* name_node = FindField(*fields, "name");
  if (name_node == nullptr) {
    return BadInput(At(path, entry) + label +
                    ": missing required field 'name'");
  }
  const std::string& name = name_node->Scalar();
  if (!IsValidName(name)) {
    return BadInput(At(path, *name_node) + label + ": field 'name': '" + name +
                    "' may use only a-z, 0-9, '-', '_' and '.'");
  }
  label = "device '" + name + "'";
  if (!seen->insert(name).second) {
    return BadInput(At(path, *name_node) + label +
                    ": appears twice in this file");
  }
  Result<DeviceSpec> spec = StartingSpec(path, label, name, *fields, *devices);
  TESSERA_RETURN_IF_ERROR(spec);
  const bool fresh = spec->tf32_flops == kUnset;  // new, without a base
  std::vector<std::string> changed;
  for (const auto& [key, value] : *fields) {
    if (key == "name" || key == "base") continue;
    if (key == "efficiency") {
      TESSERA_RETURN_IF_ERROR(
          ApplyEfficiencyYaml(path, label, value, &spec->efficiency));
      changed.push_back(key);
      continue;
    }
    Status s = ApplyField(key, value.Scalar(), &*spec);
    if (!s) {
      return BadInput(At(path, value) + label + ": field '" + key +
                      "': " + s.error().message);
    }
    if (key != "sources") changed.push_back(key);
  }
  for (double* f : {&spec->tf32_flops, &spec->fp16_flops, &spec->bf16_flops,
                    &spec->int8_ops}) {
    if (*f == kUnset) *f = spec->fp32_flops;
  }
  if (spec->launch_overhead_s == kUnset) {
    spec->launch_overhead_s = spec->kind == DeviceKind::kCpu
                                  ? kCpuOpOverheadSeconds
                                  : kGpuLaunchOverheadSeconds;
  }
  if (!fresh && !changed.empty() && FindField(*fields, "sources") == nullptr) {
    spec->sources += "; " + Join(changed) + " from " + path;
  }
  for (DeviceSpec& d : *devices) {
    if (d.name == name) {
      d = std::move(*spec);
      return {};
    }
  }
  devices->push_back(std::move(*spec));
  return {};
}

Status ApplyRoot(const std::string& path, const YAML::Node& root,
                 std::vector<DeviceSpec>* devices) {
  if (root.IsNull()) {
    return BadInput(path + ": the file is empty; expected a 'devices:' list");
  }
  if (!root.IsMap()) {
    return BadInput(At(path, root) +
                    "expected a map with a 'devices:' list at the top");
  }
  bool has_devices = false;
  for (const auto& kv : root) {
    if (!kv.first.IsScalar() || kv.first.Scalar() != "devices") {
      return BadInput(At(path, kv.first) + "unknown top-level key '" +
                      (kv.first.IsScalar() ? kv.first.Scalar() : "?") +
                      "' (expected 'devices')");
    }
    if (has_devices) {
      return BadInput(At(path, kv.first) + "'devices' is given twice");
    }
    has_devices = true;
  }
  const YAML::Node list = root["devices"];
  if (!list) return BadInput(path + ": missing the top-level 'devices:' list");
  if (!list.IsSequence()) {
    return BadInput(At(path, list) +
                    "'devices' must be a list of entries ('- name: ...')");
  }
  std::set<std::string> seen;
  for (size_t i = 0; i < list.size(); ++i) {
    TESSERA_RETURN_IF_ERROR(ApplyEntry(path, i, list[i], devices, &seen));
  }
  return {};
}

}  // namespace

Status DeviceCatalog::MergeYaml(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    return BadInput(path + ": no such file");
  }
  if (!std::filesystem::is_regular_file(path, ec)) {
    return BadInput(path + ": not a regular file");
  }
  std::vector<DeviceSpec> devices = devices_;
  try {
    const YAML::Node root = YAML::LoadFile(path);
    TESSERA_RETURN_IF_ERROR(ApplyRoot(path, root, &devices));
  } catch (const YAML::BadFile&) {
    return BadInput(path + ": cannot read the file");
  } catch (const YAML::Exception& e) {
    return BadInput(At(path, e.mark) + "malformed YAML: " + e.msg);
  } catch (const std::exception& e) {
    return Internal(path + ": " + e.what());
  }
  devices_ = std::move(devices);
  return {};
}

}  // namespace tessera::estimator
