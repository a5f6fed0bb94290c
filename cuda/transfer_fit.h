#ifndef TESSERA_CUDA_TRANSFER_FIT_H_
#define TESSERA_CUDA_TRANSFER_FIT_H_

// Fits a transfer's time as latency + bytes / bandwidth from measured
// (bytes, seconds) points. Plain C++17 so it is testable without a GPU.

#include <vector>

#include "common/result.h"

namespace tessera::cuda {

struct TransferSample {
  double bytes = 0;
  double seconds = 0;
};

struct TransferFit {
  double latency_s = 0;         // fixed cost of one transfer
  double bytes_per_second = 0;  // asymptotic bandwidth
  int points = 0;               // samples the fit used
  // Largest |measured - fitted| / measured over the samples.
  double max_relative_error = 0;
};

// Weighted least squares of seconds = latency + bytes / bandwidth with
// weights 1 / seconds^2, i.e. minimizing the RELATIVE residuals: otherwise
// the largest transfers decide everything and the latency, which only the
// small ones show, comes out as noise. A negative fitted latency (noise on
// a link whose latency is tiny) is clamped to 0 and the bandwidth refitted
// through the origin. Errors (kBadInput): fewer than two distinct sizes, a
// non-positive or non-finite sample, or a fit without a positive bandwidth.
Result<TransferFit> FitTransfer(const std::vector<TransferSample>& samples);

}  // namespace tessera::cuda

#endif  // TESSERA_CUDA_TRANSFER_FIT_H_
