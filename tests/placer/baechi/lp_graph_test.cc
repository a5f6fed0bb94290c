// m-SCT's LP graph of the groups of a problem, built from the problem
// alone, against the same graph read off the contracted problem
// (reductions' Contract): equal to the bit, so that the LP, and the
// favourites, are the same as when m-SCT contracted the problem first.

#include "placer/baechi/lp_graph_internal.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "placer/baechi/reductions_internal.h"
#include "tests/placer/test_problems.h"

namespace tessera::placer {
namespace {

using testing::RandomDagOptions;
using testing::RandomProblem;
using testing::UniformCluster;

void ExpectSameGraph(const LpGraph& got, const LpGraph& want,
                     const std::string& tag) {
  EXPECT_EQ(got.succ_begin, want.succ_begin) << tag;
  EXPECT_EQ(got.succ, want.succ) << tag;
  EXPECT_EQ(got.bytes, want.bytes) << tag;
  EXPECT_EQ(got.mean.seconds, want.mean.seconds) << tag;  // to the bit
  EXPECT_EQ(got.mean.latency, want.mean.latency) << tag;
  EXPECT_EQ(got.mean.inverse_bandwidth, want.mean.inverse_bandwidth) << tag;
}

// The graph of g's groups both ways.
void Check(const Problem& p, const Grouping& g, const Cluster& c,
           const std::string& tag) {
  auto contracted = Contract(p, g);
  ASSERT_TRUE(contracted) << tag << ": " << contracted.error().message;
  ExpectSameGraph(LpGraphOfGroups(p, g, c),
                  LpGraphOfOps(*contracted, c, SuccessorBytes(*contracted)),
                  tag);
}

TEST(LpGraph, OfTheGroupsIsTheContractedProblemsOnRandomDags) {
  int edges = 0;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    RandomDagOptions o;
    o.ops = 40 + static_cast<int>(seed % 5) * 30;
    o.devices = 1 + static_cast<int>(seed % 4);
    o.profiles = seed % 3 == 0 ? 2 : 1;
    o.training = seed % 2 == 0;
    o.window = seed % 4 == 0 ? 30 : 5;
    o.edge_probability = seed % 3 == 1 ? 0.4 : 0.15;
    const Problem p = RandomProblem(seed, o);
    std::vector<double> shares;
    for (int d = 0; d < o.devices; ++d) shares.push_back(d % 2 ? 0.5 : 1.0);
    const Cluster c =
        UniformCluster(o.devices, int64_t{1} << 30, 2e9, 3e-6, shares);
    const Grouping co = CoPlace(p, IdentityGrouping(p));
    for (uint32_t k : {2U, 7U, 25U}) {
      const Grouping g = Coarsen(p, co, k);
      Check(p, g, c,
            "seed " + std::to_string(seed) + " k " + std::to_string(k));
      edges += static_cast<int>(LpGraphOfGroups(p, g, c).succ.size());
    }
    Check(p, co, c, "seed " + std::to_string(seed) + " co-placed");
  }
  EXPECT_GT(edges, 1000);  // the groups had edges to compare
}

// A weight made by an op (a Constant): read inside its group and outside,
// only outside, only inside; and a graph output read by another group.
TEST(LpGraph, OfTheGroupsCountsConstantsAndOutputsAsContractDoes) {
  ProblemBuilder b(1, {0, 0}, /*training=*/true);
  const uint32_t in = b.AddTensor("in", 100, TensorRole::kInput);
  const uint32_t w1 = b.AddTensor("w1", 5000, TensorRole::kWeight);
  const uint32_t w2 = b.AddTensor("w2", 7000, TensorRole::kWeight);
  const uint32_t w3 = b.AddTensor("w3", 9000, TensorRole::kWeight);
  const uint32_t a = b.AddTensor("a", 300, TensorRole::kActivation, true);
  const uint32_t x = b.AddTensor("x", 400, TensorRole::kActivation);
  const uint32_t y = b.AddTensor("y", 500, TensorRole::kActivation);
  const uint32_t z = b.AddTensor("z", 600, TensorRole::kActivation, true);
  const double f[] = {1e-3}, bw[] = {2e-3};
  auto op = [&](const char* name, std::vector<uint32_t> ins,
                std::vector<uint32_t> outs) {
    return b.AddOp(name, "Op", f, bw, ins, outs);
  };
  op("const", {}, {w1, w2, w3});
  op("first", {in, w1, w3}, {a});
  op("second", {a, w1}, {x});
  op("third", {a, x, w2}, {y});
  op("fourth", {y, x, w3}, {z});
  auto p = std::move(b).Build();
  ASSERT_TRUE(p) << p.error().message;
  const Cluster c = UniformCluster(2, int64_t{1} << 30, 1e9, 1e-6);
  // {const, first} {second} {third, fourth}; and every split of the chain.
  Check(*p, Grouping{{0, 0, 1, 2, 2}, 3}, c, "three groups");
  Check(*p, Grouping{{0, 1, 1, 1, 1}, 2}, c, "const alone");
  Check(*p, Grouping{{0, 0, 0, 1, 1}, 2}, c, "two halves");
}

}  // namespace
}  // namespace tessera::placer
