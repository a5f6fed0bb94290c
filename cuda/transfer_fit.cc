#include "cuda/transfer_fit.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace tessera::cuda {
namespace {

Error FitError(const std::string& message) {
  return Error{ErrorCode::kBadInput, "transfer fit: " + message};
}

}  // namespace

Result<TransferFit> FitTransfer(const std::vector<TransferSample>& samples) {
  double min_bytes = 0;
  double max_bytes = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    const TransferSample& s = samples[i];
    if (!std::isfinite(s.bytes) || !std::isfinite(s.seconds) || s.bytes <= 0 ||
        s.seconds <= 0) {
      return FitError("sample " + std::to_string(i) +
                      " must have positive, finite bytes and seconds");
    }
    min_bytes = i == 0 ? s.bytes : std::min(min_bytes, s.bytes);
    max_bytes = i == 0 ? s.bytes : std::max(max_bytes, s.bytes);
  }
  if (samples.size() < 2 || min_bytes == max_bytes) {
    return FitError("needs samples of at least two different sizes");
  }
  // Normal equations of min sum w (a + b x - t)^2 with w = 1 / t^2. Sizes
  // are scaled to max_bytes to keep the sums well conditioned.
  double sw = 0;
  double swx = 0;
  double swxx = 0;
  double swt = 0;
  double swxt = 0;
  for (const TransferSample& s : samples) {
    const double w = 1.0 / (s.seconds * s.seconds);
    const double x = s.bytes / max_bytes;
    sw += w;
    swx += w * x;
    swxx += w * x * x;
    swt += w * s.seconds;
    swxt += w * x * s.seconds;
  }
  const double det = sw * swxx - swx * swx;
  double latency = 0;
  double slope = 0;  // slope: seconds per max_bytes
  if (det > 0) {
    latency = (swxx * swt - swx * swxt) / det;
    slope = (sw * swxt - swx * swt) / det;
  }
  if (det <= 0 || latency < 0) {
    latency = 0;
    slope = swxt / swxx;
  }
  if (!(slope > 0) || !std::isfinite(slope)) {
    return FitError("the time does not grow with the size (no bandwidth)");
  }
  TransferFit fit;
  fit.latency_s = latency;
  fit.bytes_per_second = max_bytes / slope;
  fit.points = static_cast<int>(samples.size());
  for (const TransferSample& s : samples) {
    const double predicted = latency + s.bytes / fit.bytes_per_second;
    fit.max_relative_error = std::max(
        fit.max_relative_error, std::abs(predicted - s.seconds) / s.seconds);
  }
  return fit;
}

}  // namespace tessera::cuda
