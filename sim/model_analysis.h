#ifndef TESSERA_SIM_MODEL_ANALYSIS_H_
#define TESSERA_SIM_MODEL_ANALYSIS_H_

// What `tessera simulate --mode models` reports: its runs averaged per
// (admission, interference), and where splitting stops paying off.
// docs/simulate_models.md.

#include <optional>
#include <vector>

#include "sim/model_workload.h"

namespace tessera::sim {

// The runs of one (admission, interference law) over the seeds, averaged.
struct ModelSummary {
  Admission admission = Admission::kWhole;
  InterferenceLaw interference;
  int runs = 0;
  double jobs = 0, completed = 0, never_ran = 0, split_jobs = 0;
  double jct = 0, jct_min = 0, jct_max = 0;
  // Over the jobs that completed under all three admissions (per seed).
  double jct_common = 0, common_min = 0, common_max = 0;
  double split_speed = 0;  // mean over the runs with split jobs
  double split_shared_speed = 0;
  double delay_mean = 0, delay_p50 = 0, delay_p95 = 0;
  double stretch = 0, makespan = 0, gpu_util = 0, memory_util = 0;
  double max_running = 0;
};

// One summary per (law, admission), laws in the order given and
// admissions in kAdmissions' order.
std::vector<ModelSummary> Summarize(const std::vector<ModelSimResult>& results,
                                    const std::vector<InterferenceLaw>& laws);

// The summary of `a` under `law`; it must be among `all`.
const ModelSummary& FindSummary(const std::vector<ModelSummary>& all,
                                Admission a, const InterferenceLaw& law);

// Where `a`'s mean JCT over whole's crosses 1 as alpha grows (linear
// between swept values); nullopt when it stays on one side, or when a law
// is not linear (no alpha to interpolate).
std::optional<double> Crossover(const std::vector<ModelSummary>& all,
                                Admission a,
                                const std::vector<InterferenceLaw>& laws);

// Seed by seed, `a`'s mean JCT over `b`'s under `law` (over the jobs every
// admission completed on that seed): the mean of the ratios and its
// standard error (0 with one seed).
struct PairedRatio {
  double mean = 1, standard_error = 0;
  int seeds = 0;
};
PairedRatio CompareSeedBySeed(const std::vector<ModelSimResult>& results,
                              Admission a, Admission b,
                              const InterferenceLaw& law);

}  // namespace tessera::sim

#endif  // TESSERA_SIM_MODEL_ANALYSIS_H_
