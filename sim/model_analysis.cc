#include "sim/model_analysis.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

namespace tessera::sim {
namespace {

// Each run's mean JCT over the jobs every admission completed on its
// seed and interference law, by position in `results`.
std::vector<double> CommonJct(const std::vector<ModelSimResult>& results) {
  std::map<std::pair<uint64_t, InterferenceLaw>, std::vector<size_t>> groups;
  for (size_t i = 0; i < results.size(); ++i) {
    groups[{results[i].seed, results[i].interference}].push_back(i);
  }
  std::vector<double> out(results.size(), 0);
  for (const auto& [key, members] : groups) {
    std::vector<const ModelSimResult*> runs;
    for (const size_t i : members) runs.push_back(&results[i]);
    const std::vector<double> jct = MeanJctOfCommonJobs(runs);
    for (size_t k = 0; k < members.size(); ++k) out[members[k]] = jct[k];
  }
  return out;
}

}  // namespace

std::vector<ModelSummary> Summarize(const std::vector<ModelSimResult>& results,
                                    const std::vector<InterferenceLaw>& laws) {
  const std::vector<double> common = CommonJct(results);
  std::vector<ModelSummary> out;
  for (const InterferenceLaw& law : laws) {
    for (const Admission a : kAdmissions) {
      ModelSummary s{a, law};
      s.jct_min = s.common_min = 1e300;
      s.jct_max = s.common_max = -1e300;
      int split_runs = 0;
      for (size_t i = 0; i < results.size(); ++i) {
        const ModelSimResult& r = results[i];
        if (r.admission != a || r.interference != law) continue;
        ++s.runs;
        s.jct_common += common[i];
        s.common_min = std::min(s.common_min, common[i]);
        s.common_max = std::max(s.common_max, common[i]);
        if (r.split_jobs > 0) {
          ++split_runs;
          s.split_speed += r.mean_split_speed;
          s.split_shared_speed += r.mean_split_shared_speed;
        }
        s.jobs += double(r.jobs);
        s.completed += double(r.completed);
        s.never_ran += double(r.never_ran);
        s.split_jobs += double(r.split_jobs);
        s.jct += r.mean_jct_s;
        s.jct_min = std::min(s.jct_min, r.mean_jct_s);
        s.jct_max = std::max(s.jct_max, r.mean_jct_s);
        s.delay_mean += r.delay_mean_s;
        s.delay_p50 += r.delay_p50_s;
        s.delay_p95 += r.delay_p95_s;
        s.stretch += r.mean_stretch;
        s.makespan += r.makespan_s;
        s.gpu_util += r.gpu_util_pct;
        s.memory_util += r.memory_util_pct;
        s.max_running += r.max_running;
      }
      s.split_speed /= std::max(1, split_runs);
      s.split_shared_speed /= std::max(1, split_runs);
      const double n = std::max(1, s.runs);
      for (double* v : {&s.jobs, &s.completed, &s.never_ran, &s.split_jobs,
                        &s.jct, &s.jct_common, &s.delay_mean, &s.delay_p50,
                        &s.delay_p95, &s.stretch, &s.makespan, &s.gpu_util,
                        &s.memory_util, &s.max_running}) {
        *v /= n;
      }
      out.push_back(s);
    }
  }
  return out;
}

PairedRatio CompareSeedBySeed(const std::vector<ModelSimResult>& results,
                              Admission a, Admission b,
                              const InterferenceLaw& law) {
  const std::vector<double> common = CommonJct(results);
  std::map<uint64_t, std::pair<double, double>> by_seed;  // (a, b)
  for (size_t i = 0; i < results.size(); ++i) {
    const ModelSimResult& r = results[i];
    if (r.interference != law) continue;
    if (r.admission == a) by_seed[r.seed].first = common[i];
    if (r.admission == b) by_seed[r.seed].second = common[i];
  }
  std::vector<double> ratios;
  for (const auto& [seed, jct] : by_seed) {
    if (jct.first > 0 && jct.second > 0) {
      ratios.push_back(jct.first / jct.second);
    }
  }
  PairedRatio out;
  out.seeds = static_cast<int>(ratios.size());
  if (ratios.empty()) return out;
  double sum = 0;
  for (const double x : ratios) sum += x;
  out.mean = sum / static_cast<double>(ratios.size());
  if (ratios.size() > 1) {
    double squares = 0;
    for (const double x : ratios) squares += (x - out.mean) * (x - out.mean);
    const auto n = static_cast<double>(ratios.size());
    out.standard_error = std::sqrt(squares / (n - 1) / n);
  }
  return out;
}

const ModelSummary& FindSummary(const std::vector<ModelSummary>& all,
                                Admission a, const InterferenceLaw& law) {
  return *std::find_if(all.begin(), all.end(), [&](const ModelSummary& s) {
    return s.admission == a && s.interference == law;
  });
}

std::optional<double> Crossover(const std::vector<ModelSummary>& all,
                                Admission a,
                                const std::vector<InterferenceLaw>& laws) {
  auto ratio = [&](const InterferenceLaw& law) {
    const double whole = FindSummary(all, Admission::kWhole, law).jct_common;
    return whole > 0 ? FindSummary(all, a, law).jct_common / whole : 1.0;
  };
  for (const InterferenceLaw& law : laws) {
    if (!law.alpha) return std::nullopt;
  }
  for (size_t i = 1; i < laws.size(); ++i) {
    const double r0 = ratio(laws[i - 1]) - 1, r1 = ratio(laws[i]) - 1;
    const double a0 = *laws[i - 1].alpha, a1 = *laws[i].alpha;
    if ((r0 < 0) != (r1 < 0)) return a0 + (a1 - a0) * r0 / (r0 - r1);
  }
  return std::nullopt;
}

}  // namespace tessera::sim
