#ifndef TESSERA_SERVICE_MEASURE_LEARNED_PART_INTERNAL_H_
#define TESSERA_SERVICE_MEASURE_LEARNED_PART_INTERNAL_H_

// What the service learns from the jobs it runs (issue 31, "Sizing that
// learns"; docs/operations.md, "Sizing that learns"), kept in one place
// and stored as one record of the job store (Store::PutRecord, key
// "learned"), so that a restart keeps it:
// - per model fingerprint, what its jobs measured (scheduler::SizingBook):
//   the memory peak of each single-GPU run that succeeded or ran out of
//   memory, and the step time alone on a whole GPU from progress reports;
//   the next job of the fingerprint is sized from them;
// - per GPU kind, the interference fitted from progress reports (how much
//   co-located jobs slow each other: the split-or-wait decision's law).
// One member of Service::Impl, guarded by its `mu`. Internal to service/.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "scheduler/job.h"
#include "scheduler/learned_sizing.h"
#include "scheduler/model_jobs.h"

namespace tessera::service::service_internal {

// The interference factor fitted for one GPU kind: least squares of
// slowdown - 1 = alpha (k - 1) through the origin.
struct InterferenceFit {
  double xy = 0, xx = 0;
  int samples = 0;
  double alpha() const { return xx > 0 ? std::max(0.0, xy / xx) : 0; }
};
// A calibrated factor replaces the configured law after this many
// intervals measured beside other jobs.
inline constexpr int kMinCalibrationSamples = 3;

// The fingerprint of a model job: the graph (an upload's SHA-256; a file
// by path: its canonical path, size and modification time, so that a
// changed file is another model), the batch, the precision (dtype, or
// "amp-" and the autocast type; "as exported"), training or inference,
// and the runtime tessera sizes it for ("pytorch").
scheduler::ModelFingerprint FingerprintOf(const scheduler::ModelRequest& m);

class LearnedPart {
 public:
  // The most fingerprints kept: past it, the one measured longest ago is
  // forgotten (its record is a few hundred bytes).
  static constexpr size_t kMaxFingerprints = 2000;
  // Interference fits are stored at most this often (and with every
  // sizing sample).
  static constexpr double kStoreFitsEveryS = 30;

  // Takes the stored record back; kBadInput naming what is wrong in it.
  Status Load(std::string_view json);
  std::string Json() const;

  // A measurement of a model job's run.
  void AddSample(const scheduler::ModelFingerprint& fp,
                 const scheduler::SizingSample& s);
  scheduler::LearnedSize Size(const scheduler::ModelFingerprint& fp,
                              int64_t estimate_mib,
                              std::string_view kind = "") const {
    return book_.Size(fp, estimate_mib, kind);
  }
  // Per GPU kind; mutable_fits marks them to be stored.
  const std::map<std::string, InterferenceFit>& fits() const { return fits_; }
  std::map<std::string, InterferenceFit>& mutable_fits() {
    fits_dirty_ = true;
    return fits_;
  }

  // Whether the record is due to be stored at `now` (a sample came, or
  // fits changed kStoreFitsEveryS ago); Stored says it was.
  bool Due(double now) const;
  void Stored(double now);

 private:
  scheduler::SizingBook book_;
  std::map<std::string, InterferenceFit> fits_;
  bool samples_dirty_ = false;
  bool fits_dirty_ = false;
  double stored_at_ = 0;
};

}  // namespace tessera::service::service_internal

#endif  // TESSERA_SERVICE_MEASURE_LEARNED_PART_INTERNAL_H_
