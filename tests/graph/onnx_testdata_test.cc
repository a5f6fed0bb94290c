// Every model.onnx of ONNX's own test data (Debian package libonnx-testdata,
// about 1,072 models) loads, with as many top-level nodes as the file has.
// Registered as one CTest entry; each model is its own GoogleTest instance.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace tessera::graph {
namespace {

namespace fs = std::filesystem;

// TESSERA_ONNX_TESTDATA overrides the directory (to test this test).
std::string TestdataDir() {
  const char* dir = std::getenv("TESSERA_ONNX_TESTDATA");
  return dir ? dir : "/usr/share/libonnx-testdata/data";
}
// The package holds 1,072 models; fewer means a broken or partial install.
constexpr size_t kMinModels = 1000;

std::vector<std::string> ListModels() {
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
std::string TestName(const ::testing::TestParamInfo<std::string>& info) {
  std::string rel =
      fs::path(info.param).lexically_relative(TestdataDir()).parent_path();
  for (char& c : rel) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return rel;
}

int NodeCountInFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  onnx::ModelProto proto;
  if (!proto.ParseFromIstream(&in)) return -1;
  return proto.graph().node_size();
}

TEST(OnnxTestdata, IsInstalled) {
  const size_t found = ListModels().size();
  EXPECT_GE(found, kMinModels)
      << TestdataDir() << " holds " << found << " model.onnx files; install "
      << "the Debian package libonnx-testdata (scripts/setup.sh does)";
}

class OnnxTestdataModel : public ::testing::TestWithParam<std::string> {};

TEST_P(OnnxTestdataModel, LoadsWithEveryTopLevelNode) {
  const std::string& path = GetParam();
  const int expected = NodeCountInFile(path);
  ASSERT_GE(expected, 0) << path << " does not parse with protobuf";
  auto model = LoadModel(path, {});
  ASSERT_TRUE(model) << model.error().message;
  EXPECT_EQ(model->graph->num_nodes(), static_cast<size_t>(expected));
}

INSTANTIATE_TEST_SUITE_P(Models, OnnxTestdataModel,
                         ::testing::ValuesIn(ListModels()), TestName);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(OnnxTestdataModel);

}  // namespace
}  // namespace tessera::graph
