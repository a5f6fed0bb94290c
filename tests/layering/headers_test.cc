// A component's public header is self-contained and exposes the layers its
// interface needs (placer -> estimator -> graph).
#include <gtest/gtest.h>

#include "graph/builder.h"
#include "placer/placer.h"  // includes estimator and graph

namespace tessera {
namespace {

TEST(ComponentHeaders, PlacerHeaderReachesTheGraphLayer) {
  EXPECT_EQ(graph::DataTypeBits(graph::DataType::kBfloat16), 16);
  graph::OpGraphBuilder b("g");
  const int64_t dims[] = {2};
  const graph::TensorId x = b.AddTensor("x", graph::DataType::kFloat32, dims,
                                        graph::TensorKind::kInput);
  b.MarkInput(x);
  auto g = std::move(b).Build();
  ASSERT_TRUE(g) << g.error().message;
  EXPECT_EQ((*g)->inputs().size(), 1u);
}

}  // namespace
}  // namespace tessera
