#ifndef TESSERA_TESTS_TESTLIB_REPO_PATHS_H_
#define TESSERA_TESTS_TESTLIB_REPO_PATHS_H_

// Where the tests and benchmarks find the repository, the built `tessera`
// binary and the build tree. The paths are compiled into one generated file
// (tessera_repo_paths, cmake/TesseraRepoPaths.cmake), never into the test
// files themselves: a compile definition holding an absolute path made every
// clone at a new path recompile every test object, since ccache's base_dir
// rewrites paths in arguments but not inside -D values.
// Data that is missing fails the test that needs it; nothing skips.

#include <string>

namespace tessera::repo {

// The repository's root (the source tree CMake was configured from).
const char* SourceDir();
// The built `tessera` executable (only targets that depend on it use it).
const char* TesseraBin();
// Where tests/slurm/slurm_up.sh keeps its Slurm cluster (in the build tree).
const char* SlurmDir();

// Alibaba's openb GPU-sharing trace (data/openb/SOURCE.md).
inline std::string OpenbDir() {
  return std::string(SourceDir()) + "/data/openb";
}

// Measurements on real GPUs the estimator is fitted on and tested against
// (data/gpu-truth/README.md).
inline std::string GpuTruthDir() {
  return std::string(SourceDir()) + "/data/gpu-truth";
}

}  // namespace tessera::repo

// Shorthands the tests use (const char*, not string literals).
#define TESSERA_SOURCE_DIR (::tessera::repo::SourceDir())
#define TESSERA_BIN (::tessera::repo::TesseraBin())
#define TESSERA_SLURM_DIR (::tessera::repo::SlurmDir())

#endif  // TESSERA_TESTS_TESTLIB_REPO_PATHS_H_
