#ifndef TESSERA_TESTS_TESTLIB_ONNX_TESTDATA_H_
#define TESSERA_TESTS_TESTLIB_ONNX_TESTDATA_H_

// ONNX's own test data (Debian package libonnx-testdata, about 1,072
// models), for the sweeps that run every model through a component: one
// GoogleTest instance per model, named after its folder.

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace tessera::testlib {

// TESSERA_ONNX_TESTDATA overrides the directory (to test the sweeps).
inline std::string TestdataDir() {
  const char* dir = std::getenv("TESSERA_ONNX_TESTDATA");
  return dir ? dir : "/usr/share/libonnx-testdata/data";
}

// The package holds 1,072 models; fewer means a broken or partial install.
inline constexpr size_t kMinTestdataModels = 1000;

// Every model.onnx under TestdataDir(), sorted.
inline std::vector<std::string> ListTestdataModels() {
  namespace fs = std::filesystem;
  std::vector<std::string> paths;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(TestdataDir(), ec), end;
       !ec && it != end; it.increment(ec)) {
    if (it->is_regular_file() && it->path().filename() == "model.onnx") {
      paths.push_back(it->path().string());
    }
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

// "node/test_abs/model.onnx" -> "node_test_abs".
inline std::string TestdataTestName(
    const ::testing::TestParamInfo<std::string>& info) {
  std::string rel = std::filesystem::path(info.param)
                        .lexically_relative(TestdataDir())
                        .parent_path();
  for (char& c : rel) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return rel;
}

// Fails (never skips) when the test data is missing or partial.
inline void ExpectTestdataInstalled() {
  const size_t found = ListTestdataModels().size();
  EXPECT_GE(found, kMinTestdataModels)
      << TestdataDir() << " holds " << found << " model.onnx files; install "
      << "the Debian package libonnx-testdata (scripts/setup.sh does)";
}

}  // namespace tessera::testlib

#endif  // TESSERA_TESTS_TESTLIB_ONNX_TESTDATA_H_
