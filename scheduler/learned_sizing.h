#ifndef TESSERA_SCHEDULER_LEARNED_SIZING_H_
#define TESSERA_SCHEDULER_LEARNED_SIZING_H_

// Sizing that learns (issue 31): per model fingerprint, what jobs measured
// (their memory peak, their step time), and the size of the next job of
// the same fingerprint, with the estimate as the prior.
//
// The rule (docs/operations.md will quote it):
// - No sample: the estimate.
// - Fewer than kSamplesToOverride samples: the estimate, raised to the
//   largest peak seen plus the headroom when that is more. A measurement
//   can only raise the size until there are enough of them.
// - kSamplesToOverride or more: the largest peak of the last kWindow
//   samples plus the headroom, below the estimate too (the waste it
//   reserved is given back).
// - A job that died at its cap (out of memory) measured only a lower
//   bound: its sample counts as its cap plus the headroom, and the size
//   never drops below it until kWindow later samples have replaced it.
// - Step time: the median of the measured ones, once there is one.

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace tessera::scheduler {

// What makes two jobs' models size alike: the graph (its hash), the batch,
// the precision, training or inference, the runtime.
struct ModelFingerprint {
  std::string graph_hash;
  int64_t batch = 0;
  std::string precision;  // "fp32", "bf16", ...
  bool training = false;
  std::string runtime;  // "pytorch", ...
  auto operator<=>(const ModelFingerprint&) const = default;
};

// The headroom over a measured need (a peak, an out-of-memory's need): a
// measurement is nearer the truth than an estimate, which keeps
// kDefaultModelHeadroom.
inline constexpr double kMeasuredHeadroom = 0.05;

struct SizingSample {
  int64_t peak_mib = 0;
  bool hit_cap = false;  // died at its cap: the peak is a lower bound
  // Its step alone on one whole GPU of `gpu_kind` (progress reports), if
  // it ran so.
  std::optional<double> step_s;
  std::string gpu_kind;
  double at = 0;  // Unix seconds
};

struct LearnedSize {
  int64_t memory_mib = 0;
  std::optional<double> step_s;  // measured; none: the estimate's
  int samples = 0;
  // "estimate", "estimate, raised by N measurement(s)", or "measured (N
  // samples)": what `tessera job` shows as what sized it.
  std::string source;
};

class SizingBook {
 public:
  static constexpr int kSamplesToOverride = 3;
  static constexpr int kWindow = 8;

  explicit SizingBook(double headroom = kMeasuredHeadroom)
      : headroom_(headroom) {}

  void Add(const ModelFingerprint& fp, const SizingSample& s);
  // The size of the next job of `fp`, whose estimate is `estimate_mib`;
  // its step time from the samples of GPU kind `kind` ("" = any).
  LearnedSize Size(const ModelFingerprint& fp, int64_t estimate_mib,
                   std::string_view kind = "") const;
  const std::map<ModelFingerprint, std::deque<SizingSample>>& samples() const {
    return samples_;
  }
  // Forgets `fp` (a bound on how many the book keeps is its owner's).
  void Erase(const ModelFingerprint& fp) { samples_.erase(fp); }

 private:
  double headroom_;
  std::map<ModelFingerprint, std::deque<SizingSample>> samples_;
};

}  // namespace tessera::scheduler

#endif  // TESSERA_SCHEDULER_LEARNED_SIZING_H_
