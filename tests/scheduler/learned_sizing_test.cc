// Sizing that learns (scheduler/learned_sizing.h): the estimate until
// measurements say more, only raised until there are enough of them, then
// the measured peak plus the headroom; a job that died at its cap keeps
// the size above its cap; step times by their median; fingerprints apart.
#include "scheduler/learned_sizing.h"

#include <gtest/gtest.h>

namespace tessera::scheduler {
namespace {

const ModelFingerprint kVgg{"sha256:vgg16", 32, "fp32", true, "pytorch"};

SizingSample Sample(int64_t peak_mib, bool hit_cap,
                    std::optional<double> step_s, std::string kind = "") {
  SizingSample s;
  s.peak_mib = peak_mib;
  s.hit_cap = hit_cap;
  s.step_s = step_s;
  s.gpu_kind = std::move(kind);
  return s;
}

TEST(SizingBook, TheEstimateUntilMeasured) {
  const SizingBook book;
  const LearnedSize s = book.Size(kVgg, 3000);
  EXPECT_EQ(s.memory_mib, 3000);
  EXPECT_EQ(s.samples, 0);
  EXPECT_EQ(s.source, "estimate");
  EXPECT_FALSE(s.step_s);
}

TEST(SizingBook, FewSamplesOnlyRaise) {
  SizingBook book(0.05);
  // Below the estimate: kept (one sample says little).
  book.Add(kVgg, Sample(2000, false, 0.5));
  LearnedSize s = book.Size(kVgg, 3000);
  EXPECT_EQ(s.memory_mib, 3000);
  EXPECT_EQ(s.source, "estimate");
  EXPECT_EQ(s.samples, 1);
  EXPECT_DOUBLE_EQ(s.step_s.value_or(0), 0.5);
  // Above it (VGG-16 at batch 32 on an H200 used 3.11 GiB live against
  // 2.93 GiB reserved): raised to the peak plus 5%.
  book.Add(kVgg, Sample(3184, false, 0.7));
  s = book.Size(kVgg, 3000);
  EXPECT_EQ(s.memory_mib, 3344);  // ceil(3184 * 1.05)
  EXPECT_EQ(s.source, "estimate, raised by 2 measurements");
  EXPECT_DOUBLE_EQ(s.step_s.value_or(0), 0.6);  // the median of two
}

TEST(SizingBook, EnoughSamplesOverrideBelowTheEstimate) {
  SizingBook book(0.05);
  for (int i = 0; i < SizingBook::kSamplesToOverride; ++i) {
    book.Add(kVgg, Sample(2000 + 10 * i, false, std::nullopt));
  }
  const LearnedSize s = book.Size(kVgg, 3000);
  EXPECT_EQ(s.memory_mib, 2121);  // ceil(2020 * 1.05): waste given back
  EXPECT_EQ(s.source, "measured (3 samples)");
  EXPECT_FALSE(s.step_s);
}

TEST(SizingBook, DiedAtItsCapKeepsTheSizeAboveTheCap) {
  SizingBook book(0.05);
  book.Add(kVgg, Sample(3000, true, std::nullopt));  // OOM at a 3000 MiB cap
  for (int i = 0; i < 4; ++i) book.Add(kVgg, Sample(2500, false, std::nullopt));
  EXPECT_EQ(book.Size(kVgg, 3000).memory_mib, 3150);
  // Only once kWindow later samples have replaced it does it go.
  for (int i = 0; i < SizingBook::kWindow; ++i) {
    book.Add(kVgg, Sample(2500, false, std::nullopt));
  }
  EXPECT_EQ(book.Size(kVgg, 3000).memory_mib, 2625);
}

TEST(SizingBook, FingerprintsAreKeptApart) {
  SizingBook book;
  ModelFingerprint other = kVgg;
  other.batch = 64;
  for (int i = 0; i < 3; ++i)
    book.Add(other, Sample(9000, false, std::nullopt));
  EXPECT_EQ(book.Size(kVgg, 3000).memory_mib, 3000);
  other.batch = 32;
  other.precision = "bf16";
  EXPECT_EQ(book.Size(other, 1500).source, "estimate");
}

TEST(SizingBook, StepTimesAreOfTheGpuKindAsked) {
  SizingBook book;
  book.Add(kVgg, Sample(2000, false, 0.2, "h100"));
  book.Add(kVgg, Sample(2000, false, 0.5, "a100-80gb"));
  EXPECT_DOUBLE_EQ(book.Size(kVgg, 3000, "h100").step_s.value_or(0), 0.2);
  EXPECT_DOUBLE_EQ(book.Size(kVgg, 3000, "a100-80gb").step_s.value_or(0), 0.5);
  EXPECT_FALSE(book.Size(kVgg, 3000, "t4").step_s);
  EXPECT_DOUBLE_EQ(book.Size(kVgg, 3000).step_s.value_or(0), 0.35);
}

}  // namespace
}  // namespace tessera::scheduler
