// FitEfficiencyCurve: a one-dimensional search over half_flops with the
// best `max` for each in closed form (the model is linear in max).

#include "estimator/efficiency_fit.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace tessera::estimator {
namespace {

// Grid points per decade of half_flops before the golden-section refinement;
// the curve's error changes slowly in log(half), so 8 brackets the minimum.
constexpr int kGridPerDecade = 8;
constexpr int kGoldenIterations = 80;

struct Trial {
  double half = 0;
  double max = 0;
  double sse = 0;
};

// The best max for `half` and the sum of squared errors it leaves.
Trial Evaluate(const std::vector<EfficiencySample>& samples, double half) {
  double seg = 0, sgg = 0;
  for (const EfficiencySample& s : samples) {
    const double g = s.flops / (s.flops + half);
    seg += s.efficiency * g;
    sgg += g * g;
  }
  Trial t;
  t.half = half;
  t.max = std::clamp(seg / sgg, 1e-9, kMaxKernelEfficiency);
  for (const EfficiencySample& s : samples) {
    const double r = s.efficiency - t.max * s.flops / (s.flops + half);
    t.sse += r * r;
  }
  return t;
}

}  // namespace

Result<EfficiencyFit> FitEfficiencyCurve(
    const std::vector<EfficiencySample>& samples) {
  double min_w = 0, max_w = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    const EfficiencySample& s = samples[i];
    if (!std::isfinite(s.flops) || !std::isfinite(s.efficiency) ||
        s.flops <= 0 || s.efficiency <= 0) {
      return BadInput("efficiency fit: sample " + std::to_string(i) +
                      " must have positive, finite flops and efficiency");
    }
    min_w = i == 0 ? s.flops : std::min(min_w, s.flops);
    max_w = i == 0 ? s.flops : std::max(max_w, s.flops);
  }
  if (samples.size() < 2 || min_w == max_w) {
    return BadInput(
        "efficiency fit: needs samples of at least two different sizes");
  }
  // Log grid of half in [1e-3 min_w, 1e3 max_w], and half = 0.
  const double lo = std::log10(min_w) - 3, hi = std::log10(max_w) + 3;
  const int steps = static_cast<int>(std::ceil((hi - lo) * kGridPerDecade));
  Trial best = Evaluate(samples, 0);
  int best_step = -1;
  for (int i = 0; i <= steps; ++i) {
    const Trial t =
        Evaluate(samples, std::pow(10.0, lo + (hi - lo) * i / steps));
    if (t.sse < best.sse) {
      best = t;
      best_step = i;
    }
  }
  // Golden section in log10(half) between the best grid point's neighbours.
  if (best_step >= 0) {
    double a = lo + (hi - lo) * std::max(best_step - 1, 0) / steps;
    double b = lo + (hi - lo) * std::min(best_step + 1, steps) / steps;
    const double ratio = (std::sqrt(5.0) - 1) / 2;
    double c = b - ratio * (b - a), d = a + ratio * (b - a);
    Trial tc = Evaluate(samples, std::pow(10.0, c));
    Trial td = Evaluate(samples, std::pow(10.0, d));
    for (int i = 0; i < kGoldenIterations; ++i) {
      if (tc.sse < td.sse) {
        b = d;
        d = c;
        td = tc;
        c = b - ratio * (b - a);
        tc = Evaluate(samples, std::pow(10.0, c));
      } else {
        a = c;
        c = d;
        tc = td;
        d = a + ratio * (b - a);
        td = Evaluate(samples, std::pow(10.0, d));
      }
    }
    for (const Trial& t : {tc, td}) {
      if (t.sse < best.sse) best = t;
    }
  }
  EfficiencyFit fit;
  fit.max = best.max;
  fit.half_flops = best.half;
  fit.points = static_cast<int>(samples.size());
  fit.rms_error = std::sqrt(best.sse / static_cast<double>(samples.size()));
  for (const EfficiencySample& s : samples) {
    fit.max_abs_error =
        std::max(fit.max_abs_error,
                 std::abs(s.efficiency -
                          fit.max * s.flops / (s.flops + fit.half_flops)));
  }
  return fit;
}

}  // namespace tessera::estimator
