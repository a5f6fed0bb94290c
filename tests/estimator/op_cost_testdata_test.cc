// Every operator of every model of ONNX's own test data (Debian package
// libonnx-testdata, about 1,072 models), subgraphs included, gets a finite,
// non-negative cost; an inexact one says why; and no operator of the
// standard domain falls back for want of a formula. Registered as one CTest
// entry; each model is its own GoogleTest instance.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "estimator/op_cost.h"
#include "graph/graph.h"

namespace tessera::estimator {
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

// Checks the cost of every node of `g` and, recursively, its subgraphs.
void ExpectSaneCosts(const graph::OpGraph& g) {
  const std::vector<OpCost> costs = CostAll(g);
  ASSERT_EQ(costs.size(), g.num_nodes());
  for (graph::NodeId n = 0; n < g.num_nodes(); ++n) {
    const OpCost& c = costs[n];
    const std::string what = graph::DescribeNode(g, n);
    for (const int64_t v :
         {c.macs, c.flops, c.bytes_read, c.bytes_written, c.weight_bytes,
          c.output_bytes, c.workspace_bytes}) {
      EXPECT_GE(v, 0) << what;
    }
    EXPECT_GE(c.flops, c.macs) << what;
    EXPECT_GE(c.bytes_read, c.weight_bytes) << what;
    EXPECT_EQ(c.exact, c.note.empty()) << what << ": " << c.note;
    EXPECT_EQ(c.note.find("unknown operator"), std::string::npos)
        << what << ": " << c.note;
    EXPECT_FALSE(OpClassName(c.op_class).empty());
    for (const uint32_t s : g.node(n).subgraphs) {
      ExpectSaneCosts(g.subgraph(s));
    }
  }
}

TEST(OpCostTestdata, IsInstalled) {
  const size_t found = ListModels().size();
  EXPECT_GE(found, kMinModels)
      << TestdataDir() << " holds " << found << " model.onnx files; install "
      << "the Debian package libonnx-testdata (scripts/setup.sh does)";
}

class OpCostTestdataModel : public ::testing::TestWithParam<std::string> {};

TEST_P(OpCostTestdataModel, EveryOperatorHasAFiniteNonNegativeCost) {
  auto model = graph::LoadModel(GetParam(), {});
  ASSERT_TRUE(model) << model.error().message;
  ExpectSaneCosts(*model->graph);
}

INSTANTIATE_TEST_SUITE_P(Models, OpCostTestdataModel,
                         ::testing::ValuesIn(ListModels()), TestName);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(OpCostTestdataModel);

}  // namespace
}  // namespace tessera::estimator
