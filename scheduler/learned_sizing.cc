// SizingBook (learned_sizing.h): the rule, over each fingerprint's last
// kWindow samples.
#include "scheduler/learned_sizing.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace tessera::scheduler {

void SizingBook::Add(const ModelFingerprint& fp, const SizingSample& s) {
  std::deque<SizingSample>& q = samples_[fp];
  q.push_back(s);
  while (q.size() > static_cast<size_t>(kWindow)) q.pop_front();
}

LearnedSize SizingBook::Size(const ModelFingerprint& fp, int64_t estimate_mib,
                             std::string_view kind) const {
  LearnedSize out{estimate_mib, std::nullopt, 0, "estimate"};
  auto it = samples_.find(fp);
  if (it == samples_.end() || it->second.empty()) return out;
  const std::deque<SizingSample>& q = it->second;
  out.samples = static_cast<int>(q.size());
  int64_t most = 0;
  std::vector<double> steps;
  for (const SizingSample& s : q) {
    most = std::max(most, s.peak_mib);
    if (s.step_s && *s.step_s > 0 && (kind.empty() || s.gpu_kind == kind)) {
      steps.push_back(*s.step_s);
    }
  }
  const auto with_headroom = static_cast<int64_t>(
      std::ceil(static_cast<double>(most) * (1 + headroom_)));
  if (out.samples < kSamplesToOverride) {
    if (with_headroom > estimate_mib) {
      out.memory_mib = with_headroom;
      out.source = "estimate, raised by " + std::to_string(out.samples) +
                   (out.samples == 1 ? " measurement" : " measurements");
    }
  } else {
    out.memory_mib = with_headroom;
    out.source = "measured (" + std::to_string(out.samples) + " samples)";
  }
  if (!steps.empty()) {
    std::sort(steps.begin(), steps.end());
    const size_t n = steps.size();
    out.step_s = n % 2 ? steps[n / 2] : (steps[n / 2 - 1] + steps[n / 2]) / 2;
  }
  return out;
}

}  // namespace tessera::scheduler
