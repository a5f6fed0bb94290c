#ifndef TESSERA_COMMON_STATS_H_
#define TESSERA_COMMON_STATS_H_

// Summaries of samples, one definition for every report: the nearest-rank
// percentile, and the mean with its range.

#include <vector>

namespace tessera {

// The nearest-rank percentile: the smallest sample with at least `q` (0..1)
// of the samples at or below it; 0 for no samples. Sorts a copy.
double Percentile(std::vector<double> samples, double q);
// The same over samples already sorted ascending.
double PercentileOfSorted(const std::vector<double>& sorted, double q);

// Mean, minimum and maximum; all 0 for no samples.
struct MeanRange {
  double mean = 0, min = 0, max = 0;
};
MeanRange MeanRangeOf(const std::vector<double>& samples);

}  // namespace tessera

#endif  // TESSERA_COMMON_STATS_H_
