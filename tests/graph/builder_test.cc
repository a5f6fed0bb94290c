// OpGraphBuilder used directly: building, validation errors, symbols.
#include "graph/builder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tessera::graph {
namespace {

using ::testing::HasSubstr;

// Adds a float32 tensor of shape [1, 4].
TensorId Add(OpGraphBuilder& b, std::string_view name, TensorKind kind) {
  const int64_t dims[] = {1, 4};
  return b.AddTensor(name, DataType::kFloat32, dims, kind);
}

// Adds a one-input, one-output node.
NodeId Unary(OpGraphBuilder& b, std::string_view name, TensorId in,
             TensorId out) {
  const TensorId ins[] = {in};
  const TensorId outs[] = {out};
  return b.AddNode(name, "Relu", "", ins, outs);
}

std::string BuildError(OpGraphBuilder&& b) {
  auto g = std::move(b).Build();
  if (g) return "(built)";
  EXPECT_EQ(g.error().code, ErrorCode::kBadInput);
  return g.error().message;
}

TEST(OpGraphBuilder, BuildsChain) {
  OpGraphBuilder b("chain");
  const TensorId x = Add(b, "x", TensorKind::kInput);
  const TensorId y = Add(b, "y", TensorKind::kActivation);
  b.MarkInput(x);
  Unary(b, "relu", x, y);
  b.MarkOutput(y);
  auto g = std::move(b).Build();
  ASSERT_TRUE(g.has_value()) << g.error().message;
  EXPECT_EQ((*g)->name(), "chain");
  EXPECT_EQ((*g)->num_nodes(), 1u);
  EXPECT_EQ((*g)->tensor(y).bytes, 16);
  EXPECT_EQ((*g)->tensor(y).producer, 0u);
  EXPECT_EQ((*g)->num_edges(), 0u);  // x is an input, not produced
}

TEST(OpGraphBuilder, ReturnsExistingIdForRedeclaredTensor) {
  OpGraphBuilder b("g");
  const TensorId x = Add(b, "x", TensorKind::kInput);
  EXPECT_EQ(
      b.AddTensor("x", DataType::kInt64, std::nullopt, TensorKind::kActivation),
      x);
  EXPECT_EQ(b.Find("x"), x);
  EXPECT_FALSE(b.Find("y"));
}

TEST(OpGraphBuilder, ComputesBytesOnlyForKnownShapes) {
  OpGraphBuilder b("g");
  const int64_t known[] = {2, 3};
  const int64_t symbolic[] = {b.Symbol("batch"), 3};
  const TensorId k =
      b.AddTensor("k", DataType::kFloat16, known, TensorKind::kInitializer);
  const TensorId s =
      b.AddTensor("s", DataType::kFloat32, symbolic, TensorKind::kInput);
  const TensorId r =
      b.AddTensor("r", DataType::kFloat32, std::nullopt, TensorKind::kInput);
  const TensorId str =
      b.AddTensor("str", DataType::kString, known, TensorKind::kInitializer);
  const TensorId bits =
      b.AddTensor("bits", DataType::kBool, known, TensorKind::kInitializer);
  auto g = std::move(b).Build();
  ASSERT_TRUE(g) << g.error().message;
  EXPECT_EQ((*g)->tensor(k).bytes, 12);
  EXPECT_EQ((*g)->tensor(s).elements, -1);
  EXPECT_EQ((*g)->tensor(s).bytes, -1);
  EXPECT_EQ((*g)->symbol((*(*g)->tensor(s).dims)[0]), "batch");
  EXPECT_FALSE((*g)->tensor(r).dims);
  EXPECT_EQ((*g)->tensor(r).bytes, -1);
  EXPECT_EQ((*g)->tensor(str).elements, 6);
  EXPECT_EQ((*g)->tensor(str).bytes, -1);  // strings have no fixed size
  EXPECT_EQ((*g)->tensor(bits).bytes, 6);
  EXPECT_EQ((*g)->weights().size(), 3u);
}

// A size that overflows int64 stays unknown instead of wrapping around.
TEST(OpGraphBuilder, OverflowingShapeIsNotCountedAsWrapped) {
  OpGraphBuilder b("g");
  const int64_t elements_overflow[] = {int64_t{1} << 40, int64_t{1} << 40};
  const int64_t bytes_overflow[] = {int64_t{1} << 62};
  const TensorId e = b.AddTensor("e", DataType::kFloat32, elements_overflow,
                                 TensorKind::kInitializer);
  const TensorId by = b.AddTensor("by", DataType::kFloat32, bytes_overflow,
                                  TensorKind::kInitializer);
  auto g = std::move(b).Build();
  ASSERT_TRUE(g) << g.error().message;
  EXPECT_EQ((*g)->tensor(e).elements, -1);
  EXPECT_EQ((*g)->tensor(e).bytes, -1);
  EXPECT_EQ((*g)->tensor(by).elements, int64_t{1} << 62);
  EXPECT_EQ((*g)->tensor(by).bytes, -1);
}

TEST(OpGraphBuilder, SymbolsAreSharedByName) {
  OpGraphBuilder b("g");
  const int64_t batch = b.Symbol("batch");
  EXPECT_LT(batch, 0);
  EXPECT_EQ(b.Symbol("batch"), batch);
  EXPECT_NE(b.Symbol("seq"), batch);
  EXPECT_EQ(b.Symbol(""), kUnknownDim);
}

TEST(OpGraphBuilder, DetectsCycleAndNamesItsNodes) {
  OpGraphBuilder b("loopy");
  const TensorId x = Add(b, "x", TensorKind::kInput);
  const TensorId t1 = Add(b, "t1", TensorKind::kActivation);
  const TensorId t2 = Add(b, "t2", TensorKind::kActivation);
  const TensorId t3 = Add(b, "t3", TensorKind::kActivation);
  b.MarkInput(x);
  Unary(b, "start", x, t3);  // outside the cycle
  const TensorId ab[] = {t3, t2};
  const TensorId a_out[] = {t1};
  b.AddNode("a", "Add", "", ab, a_out);
  Unary(b, "b", t1, t2);
  const std::string message = BuildError(std::move(b));
  EXPECT_THAT(message, HasSubstr("graph 'loopy' has a cycle"));
  EXPECT_THAT(message, HasSubstr("'a' (Add)"));
  EXPECT_THAT(message, HasSubstr("'b' (Relu)"));
  EXPECT_THAT(message, ::testing::Not(HasSubstr("'start'")));
}

TEST(OpGraphBuilder, ShortensLongCycleDescriptions) {
  OpGraphBuilder b("ring");
  constexpr int kNodes = 20;
  std::vector<TensorId> t;
  for (int i = 0; i < kNodes; ++i) {
    t.push_back(Add(b, "t" + std::to_string(i), TensorKind::kActivation));
  }
  for (int i = 0; i < kNodes; ++i) {
    Unary(b, "n" + std::to_string(i), t[i], t[(i + 1) % kNodes]);
  }
  const std::string message = BuildError(std::move(b));
  EXPECT_THAT(message, HasSubstr("has a cycle"));
  EXPECT_THAT(message, HasSubstr("... (20 nodes)"));
}

TEST(OpGraphBuilder, RejectsDanglingTensor) {
  OpGraphBuilder b("g");
  const TensorId ghost = Add(b, "ghost", TensorKind::kActivation);
  const TensorId y = Add(b, "y", TensorKind::kActivation);
  Unary(b, "consumer", ghost, y);
  const std::string message = BuildError(std::move(b));
  EXPECT_THAT(message, HasSubstr("graph 'g'"));
  EXPECT_THAT(message, HasSubstr("'consumer' (Relu) consumes tensor 'ghost'"));
}

TEST(OpGraphBuilder, RejectsOutputNeverProduced) {
  OpGraphBuilder b("g");
  b.MarkOutput(Add(b, "orphan", TensorKind::kActivation));
  EXPECT_THAT(BuildError(std::move(b)),
              HasSubstr("graph output 'orphan' is never produced"));
}

TEST(OpGraphBuilder, RejectsDoubleProducer) {
  OpGraphBuilder b("g");
  const TensorId x = Add(b, "x", TensorKind::kInput);
  const TensorId y = Add(b, "y", TensorKind::kActivation);
  Unary(b, "first", x, y);
  Unary(b, "second", x, y);
  EXPECT_THAT(BuildError(std::move(b)),
              HasSubstr("tensor 'y' is defined twice (again as an output of "
                        "node 'second' (Relu))"));
}

TEST(OpGraphBuilder, RejectsNodeProducingAnInitializer) {
  OpGraphBuilder b("g");
  const TensorId x = Add(b, "x", TensorKind::kInput);
  const TensorId w = Add(b, "w", TensorKind::kInitializer);
  Unary(b, "overwrite", x, w);
  EXPECT_THAT(BuildError(std::move(b)),
              HasSubstr("tensor 'w' is defined twice"));
}

TEST(OpGraphBuilder, KeepsAttributesPerNode) {
  OpGraphBuilder b("g");
  const TensorId x = Add(b, "x", TensorKind::kInput);
  const TensorId y = Add(b, "y", TensorKind::kActivation);
  const TensorId z = Add(b, "z", TensorKind::kActivation);
  const NodeId n0 = Unary(b, "n0", x, y);
  b.AddInt("axis", -1);
  const int64_t perm[] = {1, 0};
  b.AddInts("perm", perm);
  const NodeId n1 = Unary(b, "n1", y, z);
  b.AddFloat("alpha", 0.5);
  b.AddString("mode", "linear");
  const float scales[] = {1.0f, 2.0f};
  b.AddFloats("scales", scales);
  const std::string names[] = {"a", "b"};
  b.AddStrings("names", names);
  auto built = std::move(b).Build();
  ASSERT_TRUE(built) << built.error().message;
  const OpGraph& g = **built;
  EXPECT_EQ(g.GetInt(n0, "axis"), -1);
  EXPECT_THAT(g.GetInts(n0, "perm"), ::testing::ElementsAre(1, 0));
  EXPECT_FALSE(g.GetFloat(n0, "alpha"));
  EXPECT_EQ(g.GetFloat(n1, "alpha"), 0.5);
  EXPECT_EQ(g.GetString(n1, "mode"), "linear");
  EXPECT_THAT(g.GetFloats(n1, "scales"), ::testing::ElementsAre(1.0f, 2.0f));
  EXPECT_FALSE(g.GetInt(n1, "axis"));
  EXPECT_EQ(g.num_edges(), 1u);
}

TEST(OpGraphBuilder, NestsSubgraphs) {
  OpGraphBuilder inner("inner");
  const TensorId a = Add(inner, "a", TensorKind::kOuterScope);
  const TensorId c = Add(inner, "c", TensorKind::kActivation);
  Unary(inner, "inner_relu", a, c);
  inner.MarkOutput(c);
  auto sub = std::move(inner).Build();
  ASSERT_TRUE(sub) << sub.error().message;

  OpGraphBuilder b("outer");
  const TensorId x = Add(b, "x", TensorKind::kInput);
  const TensorId ax = Add(b, "a", TensorKind::kActivation);
  const TensorId out = Add(b, "out", TensorKind::kActivation);
  Unary(b, "make_a", x, ax);
  const TensorId implicit[] = {ax};
  const TensorId outs[] = {out};
  const NodeId loop = b.AddNode("loop", "Loop", "", {}, outs, implicit);
  b.AddSubgraph(std::move(sub).value());
  auto g = std::move(b).Build();
  ASSERT_TRUE(g) << g.error().message;
  EXPECT_EQ((*g)->num_subgraphs(), 1u);
  EXPECT_EQ((*g)->num_nodes_with_subgraphs(), 3u);
  EXPECT_THAT((*g)->node(loop).subgraphs, ::testing::ElementsAre(0u));
  EXPECT_EQ((*g)->subgraph(0).name(), "inner");
  EXPECT_EQ((*g)->num_edges(), 1u);  // make_a -> loop, through a
  EXPECT_THAT((*g)->consumers(ax), ::testing::ElementsAre(loop));
}

}  // namespace
}  // namespace tessera::graph
