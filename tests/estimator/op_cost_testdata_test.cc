// Every operator of every model of ONNX's own test data (Debian package
// libonnx-testdata, about 1,072 models), subgraphs included, gets a finite,
// non-negative cost; an inexact one says why; and no operator of the
// standard domain falls back for want of a formula. Registered as one CTest
// entry; each model is its own GoogleTest instance.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "estimator/op_cost.h"
#include "graph/graph.h"
#include "tests/testlib/onnx_testdata.h"

namespace tessera::estimator {
namespace {

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

TEST(OpCostTestdata, IsInstalled) { testlib::ExpectTestdataInstalled(); }

class OpCostTestdataModel : public ::testing::TestWithParam<std::string> {};

TEST_P(OpCostTestdataModel, EveryOperatorHasAFiniteNonNegativeCost) {
  auto model = graph::LoadModel(GetParam(), {});
  ASSERT_TRUE(model) << model.error().message;
  ExpectSaneCosts(*model->graph);
}

INSTANTIATE_TEST_SUITE_P(Models, OpCostTestdataModel,
                         ::testing::ValuesIn(testlib::ListTestdataModels()),
                         testlib::TestdataTestName);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(OpCostTestdataModel);

}  // namespace
}  // namespace tessera::estimator
