// The co-location slowdown of estimator/interference.h.
#include "estimator/interference.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace tessera::estimator {

Result<GpuSharing> ParseGpuSharing(std::string_view text) {
  if (text == "timeslice") return GpuSharing::kTimeslice;
  if (text == "mps") return GpuSharing::kMps;
  return BadInput("sharing '" + std::string(text) +
                  "': expected timeslice or mps");
}

std::string_view GpuSharingName(GpuSharing s) {
  switch (s) {
    case GpuSharing::kTimeslice:
      return "timeslice";
    case GpuSharing::kMps:
      return "mps";
  }
  return "?";
}

double CoLocationSlowdown(GpuSharing sharing, double busy_fraction, int k) {
  if (k <= 1) return 1;
  // NaN counts as idle: no slowdown is the answer that cannot overcharge.
  const double u =
      std::isnan(busy_fraction) ? 0.0 : std::clamp(busy_fraction, 0.0, 1.0);
  const auto jobs = static_cast<double>(k);
  switch (sharing) {
    case GpuSharing::kTimeslice:
      return 1 + u * (kTimesliceCost * jobs - 1);
    case GpuSharing::kMps:
      return 1 + kMpsOverlapCost * (jobs - 1) * u;
  }
  return 1;
}

}  // namespace tessera::estimator
