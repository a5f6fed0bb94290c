// Golden placements of the model zoo: each model x each cluster of
// models/clusters/ x {inference at batch 1, training at batch 8}: whether
// the whole model fits one device (`single`), whether m-etf finds a plan and
// on how many devices, whether m-topo finds one, checked against
// tests/placer/zoo_golden.json. Regenerate after an intended change with
//   TESSERA_UPDATE_GOLDEN=1 build/tests/placer/placer_zoo_test
// and review the diff.

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "placer/core/place.h"
#include "tests/placer/test_problems.h"
#include "tests/placer/zoo_problems.h"
#include "tests/testlib/repo_paths.h"

namespace tessera::placer {
namespace {

const std::string kRoot = TESSERA_SOURCE_DIR;
const std::string kGolden = kRoot + "/tests/placer/zoo_golden.json";

const std::vector<std::string> kClusters = {"default", "slivers", "crumbs",
                                            "hetero", "two_nodes"};

nlohmann::json Outcome(const Problem& p, const Cluster& c) {
  nlohmann::json j;
  auto single = Place(p, c, Algorithm::kSingle, {});
  j["single_fits"] = single.has_value();
  auto etf = Place(p, c, Algorithm::kMEtf, {});
  j["m_etf_feasible"] = etf.has_value();
  int used = 0;
  if (etf) {
    for (const DeviceStats& d : etf->sim.devices) used += d.ops > 0;
    EXPECT_TRUE(etf->sim.fits);
    EXPECT_GE(etf->sim.step_s, etf->lower_bound_s * (1 - 1e-9));
  } else {
    EXPECT_EQ(etf.error().code, ErrorCode::kInfeasible);
  }
  j["m_etf_devices"] = used;
  auto topo = Place(p, c, Algorithm::kMTopo, {});
  j["m_topo_feasible"] = topo.has_value();
  if (topo) {
    EXPECT_TRUE(topo->sim.fits);
  }
  return j;
}

TEST(ZooGolden, FeasibilityAndDeviceCounts) {
  const std::vector<testing::ZooProblem> zoo =
      testing::LoadZooProblems(kClusters);
  ASSERT_FALSE(::testing::Test::HasFailure());
  nlohmann::json actual;
  for (const testing::ZooProblem& z : zoo) {
    actual[z.mode()][z.model][z.cluster_name] = Outcome(z.problem, z.cluster);
  }
  if (std::getenv("TESSERA_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(kGolden) << actual.dump(2) << "\n";
    GTEST_SKIP() << "rewrote " << kGolden;
  }
  std::ifstream in(kGolden);
  ASSERT_TRUE(in) << "missing " << kGolden;
  const nlohmann::json expected = nlohmann::json::parse(in);
  for (const testing::ZooProblem& z : zoo) {
    EXPECT_EQ(actual[z.mode()][z.model][z.cluster_name],
              expected[z.mode()][z.model][z.cluster_name])
        << z.mode() << " " << z.model << " on " << z.cluster_name;
  }
}

}  // namespace
}  // namespace tessera::placer

namespace tessera::placer {
namespace {

// The case the greedy algorithms cannot solve: VGG-16 on four nearly full
// GPUs (models/clusters/crumbs.yaml). Every list scheduler fills the devices
// before the 392 MiB classifier layer arrives; auto's exact ILP on the
// 38-op graph finds the split.
TEST(ZooAuto, IlpRescuesVgg16OnCrumbs) {
  const auto catalog = estimator::DeviceCatalog::BuiltIn();
  graph::LoadOptions load;
  load.batch = 1;
  auto model = graph::LoadModel(kRoot + "/models/zoo/vgg16.onnx", load);
  ASSERT_TRUE(model) << model.error().message;
  auto cluster =
      LoadCluster(kRoot + "/models/clusters/crumbs.yaml", catalog, {});
  ASSERT_TRUE(cluster) << cluster.error().message;
  auto problem = BuildProblem(*model, *cluster, {});
  ASSERT_TRUE(problem) << problem.error().message;
  EXPECT_FALSE(Place(*problem, *cluster, Algorithm::kMEtf, {}));
  PlaceOptions o;
  o.ilp_time_limit_s = testing::kProofLimitS;  // not the default 10 s
  auto plan = Place(*problem, *cluster, Algorithm::kAuto, o);
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->algorithm, Algorithm::kIlp);
  EXPECT_TRUE(plan->sim.fits);
  int used = 0;
  for (const DeviceStats& d : plan->sim.devices) used += d.ops > 0;
  EXPECT_GE(used, 2);
}

}  // namespace
}  // namespace tessera::placer
