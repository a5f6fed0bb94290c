// Every model.onnx of ONNX's own test data (Debian package libonnx-testdata,
// about 1,072 models) loads, with as many top-level nodes as the file has.
// Registered as one CTest entry; each model is its own GoogleTest instance.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <fstream>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "tests/testlib/onnx_testdata.h"

namespace tessera::graph {
namespace {

int NodeCountInFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  onnx::ModelProto proto;
  if (!proto.ParseFromIstream(&in)) return -1;
  return proto.graph().node_size();
}

TEST(OnnxTestdata, IsInstalled) { testlib::ExpectTestdataInstalled(); }

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
                         ::testing::ValuesIn(testlib::ListTestdataModels()),
                         testlib::TestdataTestName);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(OnnxTestdataModel);

}  // namespace
}  // namespace tessera::graph
