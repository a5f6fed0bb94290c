// The `efficiency:` block of a device entry (DeviceCatalog::MergeYaml):
// nested maps, every key optional, every value checked against its range.

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iterator>
#include <set>
#include <span>
#include <string>
#include <string_view>

#include "estimator/device_yaml_internal.h"
#include "estimator/efficiency_fit.h"

namespace tessera::estimator {
namespace {

constexpr std::string_view kTopKeys[] = {"kernel_time", "eager_op", "bandwidth",
                                         "cuda_cores", "tensor_cores"};
constexpr std::string_view kBandwidthKeys[] = {"elementwise", "normalization",
                                               "reduction", "data_movement"};
constexpr std::string_view kCurveKeys[] = {"max", "half_gflop"};

// Where errors point: the file and the entry.
struct Context {
  const std::string& path;
  const std::string& label;
};

Error FieldError(const Context& ctx, const YAML::Node& node,
                 const std::string& field, const std::string& message) {
  const YAML::Mark mark = node.Mark();
  const std::string at =
      mark.is_null() || mark.line < 0
          ? ctx.path + ": "
          : ctx.path + ":" + std::to_string(mark.line + 1) + ": ";
  return BadInput(at + ctx.label + ": field '" + field + "': " + message);
}

std::string JoinQuoted(std::span<const std::string_view> items) {
  std::string out;
  for (std::string_view item : items) {
    out += (out.empty() ? "'" : ", '") + std::string(item) + "'";
  }
  return out;
}

// Calls visit(key, value, "field.key") for every entry of the map `node`,
// after checking that it is a map of known, distinct keys.
Status ForEachKey(
    const Context& ctx, const YAML::Node& node, const std::string& field,
    std::span<const std::string_view> known,
    const std::function<Status(std::string_view, const YAML::Node&,
                               const std::string&)>& visit) {
  if (!node.IsMap()) {
    return FieldError(ctx, node, field,
                      node.IsNull() ? "has no value"
                                    : "must be a map of " + JoinQuoted(known));
  }
  std::set<std::string> seen;
  for (const auto& kv : node) {
    const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "?";
    if (!kv.first.IsScalar() ||
        std::ranges::find(known, key) == std::end(known)) {
      return FieldError(
          ctx, kv.first, field,
          "unknown key '" + key + "' (known: " + JoinQuoted(known) + ")");
    }
    if (!seen.insert(key).second) {
      return FieldError(ctx, kv.first, field,
                        "key '" + key + "' is given twice");
    }
    TESSERA_RETURN_IF_ERROR(visit(key, kv.second, field + "." + key));
  }
  return {};
}

// The scalar text of `node`, or an error when it is a map, list or empty.
Result<std::string> ScalarText(const Context& ctx, const YAML::Node& node,
                               const std::string& field) {
  if (!node.IsScalar()) {
    return FieldError(
        ctx, node, field,
        node.IsNull() ? "has no value" : "must be a single value");
  }
  return node.Scalar();
}

// A plain number in (low, high] (low_inclusive: [low, high]).
Result<double> Number(const Context& ctx, const YAML::Node& node,
                      const std::string& field, double low, double high,
                      bool low_inclusive) {
  Result<std::string> text = ScalarText(ctx, node, field);
  TESSERA_RETURN_IF_ERROR(text);
  const std::string& t = *text;
  double value = 0;
  auto [stop, ec] = std::from_chars(t.data(), t.data() + t.size(), value,
                                    std::chars_format::general);
  if (t.empty() || ec != std::errc() || stop != t.data() + t.size() ||
      !std::isfinite(value)) {
    return FieldError(ctx, node, field, "'" + t + "' must be a plain number");
  }
  const bool above = low_inclusive ? value >= low : value > low;
  if (!above || value > high) {
    char range[64];
    std::snprintf(range, sizeof(range), "%s%g, %g]", low_inclusive ? "[" : "(",
                  low, high);
    return FieldError(ctx, node, field,
                      "'" + t + "' must be in " + std::string(range));
  }
  return value;
}

// A positive duration ("2.5us").
Result<double> Duration(const Context& ctx, const YAML::Node& node,
                        const std::string& field) {
  Result<std::string> text = ScalarText(ctx, node, field);
  TESSERA_RETURN_IF_ERROR(text);
  Result<double> seconds = ParseSeconds(*text);
  if (!seconds) return FieldError(ctx, node, field, seconds.error().message);
  if (*seconds <= 0) return FieldError(ctx, node, field, "must be positive");
  return *seconds;
}

// {max: 0.8, half_gflop: 2} for one kernel kind.
Status ApplyCurve(const Context& ctx, const YAML::Node& node,
                  const std::string& field, KernelEfficiency* curve) {
  KernelEfficiency next = *curve;
  const Status status = ForEachKey(
      ctx, node, field, kCurveKeys,
      [&](std::string_view key, const YAML::Node& value,
          const std::string& name) -> Status {
        if (key == "max") {
          Result<double> max =
              Number(ctx, value, name, 0, kMaxKernelEfficiency, false);
          TESSERA_RETURN_IF_ERROR(max);
          next.max = *max;
        } else {
          Result<double> half = Number(ctx, value, name, 0, 1e9, true);
          TESSERA_RETURN_IF_ERROR(half);
          next.half_flops = *half * 1e9;
        }
        return {};
      });
  TESSERA_RETURN_IF_ERROR(status);
  if (next.max <= 0) {
    return FieldError(ctx, node, field,
                      "'half_gflop' without 'max' (the device has no "
                      "efficiency for this kind to keep)");
  }
  *curve = next;
  return {};
}

// cuda_cores / tensor_cores: one curve per kernel kind.
Status ApplyCores(const Context& ctx, const YAML::Node& node,
                  const std::string& field,
                  std::array<KernelEfficiency, kNumKernelKinds>* cores,
                  bool* any) {
  static constexpr std::string_view kKinds[] = {"gemm", "conv", "spatial_conv",
                                                "depthwise_conv"};
  static_assert(std::size(kKinds) == kNumKernelKinds);
  return ForEachKey(ctx, node, field, kKinds,
                    [&](std::string_view key, const YAML::Node& value,
                        const std::string& name) -> Status {
                      for (size_t k = 0; k < kNumKernelKinds; ++k) {
                        if (KernelKindName(static_cast<KernelKind>(k)) == key) {
                          *any = true;
                          return ApplyCurve(ctx, value, name, &(*cores)[k]);
                        }
                      }
                      return Internal("unhandled kernel kind");
                    });
}

}  // namespace

Status ApplyEfficiencyYaml(const std::string& path, const std::string& label,
                           const YAML::Node& node, EfficiencySurface* surface) {
  const Context ctx{path, label};
  EfficiencySurface next = *surface;
  bool any = false;
  const Status status = ForEachKey(
      ctx, node, "efficiency", kTopKeys,
      [&](std::string_view key, const YAML::Node& value,
          const std::string& name) -> Status {
        if (key == "kernel_time" || key == "eager_op") {
          Result<double> seconds = Duration(ctx, value, name);
          TESSERA_RETURN_IF_ERROR(seconds);
          (key == "kernel_time" ? next.kernel_s : next.eager_op_s) = *seconds;
          any = true;
          return {};
        }
        if (key == "bandwidth") {
          return ForEachKey(
              ctx, value, name, kBandwidthKeys,
              [&](std::string_view bkey, const YAML::Node& bvalue,
                  const std::string& bname) -> Status {
                Result<double> fraction =
                    Number(ctx, bvalue, bname, 0, 1, false);
                TESSERA_RETURN_IF_ERROR(fraction);
                double* target =
                    bkey == "elementwise"     ? &next.elementwise_bandwidth
                    : bkey == "normalization" ? &next.normalization_bandwidth
                    : bkey == "reduction"     ? &next.reduction_bandwidth
                                              : &next.data_movement_bandwidth;
                *target = *fraction;
                any = true;
                return {};
              });
        }
        return ApplyCores(
            ctx, value, name,
            key == "cuda_cores" ? &next.cuda_cores : &next.tensor_cores, &any);
      });
  TESSERA_RETURN_IF_ERROR(status);
  if (any) next.measured = true;
  *surface = next;
  return {};
}

}  // namespace tessera::estimator
