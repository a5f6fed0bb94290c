#ifndef TESSERA_TESTS_TESTLIB_REPO_PATHS_H_
#define TESSERA_TESTS_TESTLIB_REPO_PATHS_H_

// Where the tests and benchmarks find the data the repository carries. The
// including target defines TESSERA_SOURCE_DIR (the repository's root).
// Data that is missing fails the test that needs it; nothing skips.

#include <string>

namespace tessera::testing {

// Alibaba's openb GPU-sharing trace (data/openb/SOURCE.md).
inline std::string OpenbDir() {
  return std::string(TESSERA_SOURCE_DIR) + "/data/openb";
}

// Measurements on a real H100 the estimator is fitted on and tested against
// (data/gpu-truth/README.md).
inline std::string GpuTruthDir() {
  return std::string(TESSERA_SOURCE_DIR) + "/data/gpu-truth";
}

}  // namespace tessera::testing

#endif  // TESSERA_TESTS_TESTLIB_REPO_PATHS_H_
