#ifndef TESSERA_TESTS_TESTLIB_SANITIZED_H_
#define TESSERA_TESTS_TESTLIB_SANITIZED_H_

// Whether this test binary runs under AddressSanitizer or ThreadSanitizer
// (scripts/test.sh builds build-asan/ and build-tsan/). Under them a CPU-
// bound case costs 5-10x and forking a process with their shadow memory
// more still, so the long randomized sweeps run fewer cases there: the
// plain build's full sweep is the regression test, the sanitized builds'
// smaller one walks the same code paths for memory and thread errors.

#include "common/sanitizers.h"

namespace tessera::testlib {

inline constexpr bool kSanitized = kAddressSanitizer || kThreadSanitizer;

// `full` cases in a plain build, `full / divisor` (at least 1) under a
// sanitizer.
constexpr int SweepSize(int full, int divisor) {
  return kSanitized ? (full / divisor > 0 ? full / divisor : 1) : full;
}

}  // namespace tessera::testlib

#endif  // TESSERA_TESTS_TESTLIB_SANITIZED_H_
