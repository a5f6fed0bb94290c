#ifndef TESSERA_TESTS_TESTLIB_SANITIZED_H_
#define TESSERA_TESTS_TESTLIB_SANITIZED_H_

// Whether this test binary runs under AddressSanitizer or ThreadSanitizer
// (scripts/test.sh builds build-asan/ and build-tsan/). Under them a CPU-
// bound case costs 5-10x and forking a process with their shadow memory
// more still, so the long randomized sweeps run fewer cases there: the
// plain build's full sweep is the regression test, the sanitized builds'
// smaller one walks the same code paths for memory and thread errors.

namespace tessera::testlib {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
#else
inline constexpr bool kSanitized = false;
#endif

// `full` cases in a plain build, `full / divisor` (at least 1) under a
// sanitizer.
constexpr int SweepSize(int full, int divisor) {
  return kSanitized ? (full / divisor > 0 ? full / divisor : 1) : full;
}

}  // namespace tessera::testlib

#endif  // TESSERA_TESTS_TESTLIB_SANITIZED_H_
