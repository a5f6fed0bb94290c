#include "common/stats.h"

#include <algorithm>
#include <cmath>

namespace tessera {

double PercentileOfSorted(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const auto rank =
      static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

double Percentile(std::vector<double> samples, double q) {
  std::sort(samples.begin(), samples.end());
  return PercentileOfSorted(samples, q);
}

MeanRange MeanRangeOf(const std::vector<double>& samples) {
  if (samples.empty()) return {};
  MeanRange r{0, samples.front(), samples.front()};
  for (const double v : samples) {
    r.mean += v;
    r.min = std::min(r.min, v);
    r.max = std::max(r.max, v);
  }
  r.mean /= static_cast<double>(samples.size());
  return r;
}

}  // namespace tessera
