// The serve config's split-or-wait settings (serve_config.h,
// docs/serve_config.md): `interference:` per GPU kind,
// `calibrate_interference` and `model_default_work_s`.

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <string>
#include <string_view>

#include "server/serve_config_internal.h"

namespace tessera::server::serve_config_internal {
namespace {

constexpr std::string_view kLawKeys[] = {"alpha", "sharing"};
constexpr std::string_view kSharingNames[] = {"timeslice", "mps"};

}  // namespace

// `interference: {KIND: {alpha: F} | {sharing: timeslice|mps}}`, KIND a GPU
// kind of the cluster's nodes (after the nodes).
Status ConfigParser::ParseInterference(const Field& f,
                                       ServeConfig* config) const {
  if (!f.value.IsMap()) {
    return Fail(f, "",
                "expected a map of GPU kind to law ({a100-80gb: {alpha: "
                "0.5}} or {h100: {sharing: mps}}), got " +
                    TypeName(f.value));
  }
  const Topology& t = config->service.topology;
  for (const auto& kv : f.value) {
    const Field entry{kv.first.IsScalar() ? kv.first.Scalar() : "?", kv.first,
                      kv.second};
    const std::string label = "interference." + entry.key;
    const bool known = std::ranges::any_of(
        t.gpus, [&](const GpuInfo& g) { return g.kind == entry.key; });
    if (!known) {
      return BadInput(At(kv.first) + label +
                      ": no node of the configuration has GPUs of this kind");
    }
    Result<Fields> fields = MapFields(entry.value, label, kLawKeys);
    TESSERA_RETURN_IF_ERROR(fields);
    const Field* alpha = Find(*fields, "alpha");
    const Field* sharing = Find(*fields, "sharing");
    if ((alpha == nullptr) == (sharing == nullptr)) {
      return BadInput(At(kv.first) + label +
                      ": give one of alpha (a linear law: step x (1 + alpha "
                      "(k - 1)) with k jobs on a GPU) or sharing (timeslice "
                      "or mps: the law measured on an H100)");
    }
    InterferenceLaw law;
    if (alpha != nullptr) {
      Result<double> a = Number(*alpha, label);
      TESSERA_RETURN_IF_ERROR(a);
      if (!(*a >= 0) || *a > 100) {
        return Fail(*alpha, label, "must be from 0 to 100");
      }
      law = InterferenceLaw::Linear(*a);
    } else {
      Result<std::string> name =
          OneOf(*sharing, label, kSharingNames, "sharing");
      TESSERA_RETURN_IF_ERROR(name);
      law = InterferenceLaw::Measured(*estimator::ParseGpuSharing(*name));
    }
    config->service.interference[entry.key] = law;
  }
  return {};
}

}  // namespace tessera::server::serve_config_internal
