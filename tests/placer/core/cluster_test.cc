#include "placer/core/cluster.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "tests/testlib/repo_paths.h"

namespace tessera::placer {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr int64_t kGiB = int64_t{1} << 30;
constexpr double kGBps = 1e9;
constexpr double kInf = std::numeric_limits<double>::infinity();

const estimator::DeviceCatalog& Catalog() {
  static const estimator::DeviceCatalog catalog =
      estimator::DeviceCatalog::BuiltIn();
  return catalog;
}

// Joins lines with '\n', so that line numbers in expectations are indexes + 1.
std::string Lines(std::initializer_list<std::string_view> lines) {
  std::string out;
  for (std::string_view line : lines) out += std::string(line) + "\n";
  return out;
}

Result<Cluster> Parse(const std::string& yaml, ClusterOptions options = {}) {
  return ParseCluster(yaml, "cluster.yaml", Catalog(), options);
}

// The usable memory of an idle a100-80gb with the default headroom.
int64_t WholeA100Usable() {
  return 80 * kGiB -
         WholeGpuHeadroom(80 * kGiB, estimator::kDefaultFragmentation);
}

void ExpectLink(const Cluster& c, size_t a, size_t b, LinkKind kind,
                double bandwidth, double latency) {
  for (auto [from, to] : {std::pair{a, b}, std::pair{b, a}}) {
    const Link& l = c.link(from, to);
    EXPECT_EQ(l.kind, kind)
        << from << "->" << to << " is " << LinkKindName(l.kind);
    EXPECT_DOUBLE_EQ(l.bandwidth, bandwidth) << from << "->" << to;
    EXPECT_DOUBLE_EQ(l.latency, latency) << from << "->" << to;
  }
}

// Every device's link to itself is local, infinitely fast and free.
void ExpectLocalDiagonal(const Cluster& c) {
  ASSERT_EQ(c.links.size(), c.size() * c.size());
  for (size_t i = 0; i < c.size(); ++i) {
    EXPECT_EQ(c.link(i, i).kind, LinkKind::kLocal);
    EXPECT_EQ(c.link(i, i).bandwidth, kInf);
    EXPECT_EQ(c.link(i, i).latency, 0.0);
  }
}

const std::string kIssueExample = Lines({
    "nodes:",
    "  - name: node0",
    "    interconnect: nvlink",
    "    gpus:",
    "      - kind: a100-80gb",
    "        count: 2",
    "      - kind: a100-80gb",
    "        count: 2",
    "        memory_free: 24GiB",
    "        compute_share: 0.5",
    "network: {bandwidth: 25GB/s, latency: 5us}",
    "links:",
    "  - between: [node0/gpu0, node0/gpu3]",
    "    bandwidth: 32GB/s",
    "    latency: 10us",
});

// ---- Basics ----------------------------------------------------------------

TEST(ClusterBasics, LinkKindNames) {
  EXPECT_EQ(LinkKindName(LinkKind::kLocal), "local");
  EXPECT_EQ(LinkKindName(LinkKind::kNvlink), "nvlink");
  EXPECT_EQ(LinkKindName(LinkKind::kPcie), "pcie");
  EXPECT_EQ(LinkKindName(LinkKind::kNetwork), "network");
  EXPECT_EQ(LinkKindName(LinkKind::kCustom), "custom");
}

TEST(ClusterBasics, WholeGpuHeadroomIsContextPlusFragmentation) {
  EXPECT_EQ(WholeGpuHeadroom(80 * kGiB, 0.08),
            estimator::kCudaContextBytes + std::llround(0.08 * 80 * kGiB));
  EXPECT_EQ(WholeGpuHeadroom(80 * kGiB, 0.0), estimator::kCudaContextBytes);
  EXPECT_EQ(WholeGpuHeadroom(1000, 0.5), estimator::kCudaContextBytes + 500);
}

// ---- The issue's example ---------------------------------------------------

TEST(ClusterSpec, IssueExampleHasFourDevicesInOrder) {
  Result<Cluster> c = Parse(kIssueExample);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->source, "cluster.yaml");
  ASSERT_EQ(c->size(), 4U);
  for (size_t i = 0; i < 4; ++i) {
    const ClusterDevice& d = c->devices[i];
    EXPECT_EQ(d.id, "node0/gpu" + std::to_string(i));
    EXPECT_EQ(d.node, "node0");
    EXPECT_EQ(d.spec.name, "a100-80gb");
    EXPECT_EQ(d.memory_total, 80 * kGiB);
  }
}

TEST(ClusterSpec, HeadroomComesOffWholeGpusOnly) {
  Result<Cluster> c = Parse(kIssueExample);
  ASSERT_TRUE(c) << c.error().message;
  for (size_t i : {0U, 1U}) {
    EXPECT_FALSE(c->devices[i].memory_given);
    EXPECT_EQ(c->devices[i].memory_usable, WholeA100Usable());
    EXPECT_DOUBLE_EQ(c->devices[i].compute_share, 1.0);
  }
  for (size_t i : {2U, 3U}) {
    EXPECT_TRUE(c->devices[i].memory_given);
    EXPECT_EQ(c->devices[i].memory_usable, 24 * kGiB);
    EXPECT_DOUBLE_EQ(c->devices[i].compute_share, 0.5);
  }
}

TEST(ClusterSpec, IssueExampleLinksAreNvlinkWithASymmetricOverride) {
  Result<Cluster> c = Parse(kIssueExample);
  ASSERT_TRUE(c) << c.error().message;
  ExpectLocalDiagonal(*c);
  const double nvlink = Catalog().Find("a100-80gb")->nvlink_bandwidth;
  EXPECT_DOUBLE_EQ(nvlink, 300 * kGBps);
  ExpectLink(*c, 0, 1, LinkKind::kNvlink, nvlink, kNvlinkLatencySeconds);
  ExpectLink(*c, 0, 2, LinkKind::kNvlink, nvlink, kNvlinkLatencySeconds);
  ExpectLink(*c, 1, 2, LinkKind::kNvlink, nvlink, kNvlinkLatencySeconds);
  ExpectLink(*c, 1, 3, LinkKind::kNvlink, nvlink, kNvlinkLatencySeconds);
  ExpectLink(*c, 2, 3, LinkKind::kNvlink, nvlink, kNvlinkLatencySeconds);
  ExpectLink(*c, 0, 3, LinkKind::kCustom, 32 * kGBps, 10e-6);
}

TEST(ClusterSpec, FragmentationOptionChangesTheHeadroomOfWholeGpus) {
  ClusterOptions options;
  options.fragmentation = 0.0;
  Result<Cluster> c = Parse(kIssueExample, options);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->devices[0].memory_usable,
            80 * kGiB - estimator::kCudaContextBytes);
  EXPECT_EQ(c->devices[3].memory_usable, 24 * kGiB);  // as given
}

TEST(ClusterSpec, TheCommentedExampleFileIsTheIssueExample) {
  Result<Cluster> file = LoadCluster(
      std::string(TESSERA_SOURCE_DIR) + "/models/clusters/example.yaml",
      Catalog(), {});
  ASSERT_TRUE(file) << file.error().message;
  Result<Cluster> inline_spec = Parse(kIssueExample);
  ASSERT_TRUE(inline_spec);
  ASSERT_EQ(file->size(), inline_spec->size());
  for (size_t i = 0; i < file->size(); ++i) {
    EXPECT_EQ(file->devices[i].id, inline_spec->devices[i].id);
    EXPECT_EQ(file->devices[i].memory_usable,
              inline_spec->devices[i].memory_usable);
    EXPECT_EQ(file->devices[i].compute_share,
              inline_spec->devices[i].compute_share);
    for (size_t j = 0; j < file->size(); ++j) {
      EXPECT_EQ(file->link(i, j).kind, inline_spec->link(i, j).kind);
      EXPECT_EQ(file->link(i, j).bandwidth, inline_spec->link(i, j).bandwidth);
      EXPECT_EQ(file->link(i, j).latency, inline_spec->link(i, j).latency);
    }
  }
}

// ---- Derived links ---------------------------------------------------------

TEST(ClusterSpec, HeterogeneousNvlinkUsesTheSlowerGpusFigure) {
  Result<Cluster> c = Parse(Lines({
      "nodes:",
      "  - name: box",
      "    gpus:",
      "      - kind: h100-sxm",
      "      - kind: v100-32gb",
  }));
  ASSERT_TRUE(c) << c.error().message;
  ASSERT_EQ(c->size(), 2U);
  EXPECT_EQ(c->devices[0].id, "box/gpu0");
  EXPECT_EQ(c->devices[1].id, "box/gpu1");
  EXPECT_EQ(c->devices[0].spec.name, "h100-sxm");
  EXPECT_EQ(c->devices[1].spec.name, "v100-32gb");
  EXPECT_EQ(c->devices[1].memory_total, 32 * kGiB);
  ExpectLink(*c, 0, 1, LinkKind::kNvlink,
             Catalog().Find("v100-32gb")->nvlink_bandwidth,
             kNvlinkLatencySeconds);
}

TEST(ClusterSpec, NvlinkNodeFallsBackToPcieForAGpuWithoutNvlink) {
  Result<Cluster> c = Parse(Lines({
      "nodes:",
      "  - name: node0",
      "    interconnect: nvlink",
      "    gpus: [{kind: a100-80gb, count: 2}, {kind: t4}]",
  }));
  ASSERT_TRUE(c) << c.error().message;
  ASSERT_EQ(c->size(), 3U);
  EXPECT_EQ(Catalog().Find("t4")->nvlink_bandwidth, 0.0);
  ExpectLink(*c, 0, 1, LinkKind::kNvlink, 300 * kGBps, kNvlinkLatencySeconds);
  const double pcie = std::min(Catalog().Find("a100-80gb")->pcie_bandwidth,
                               Catalog().Find("t4")->pcie_bandwidth);
  ExpectLink(*c, 0, 2, LinkKind::kPcie, pcie, kPcieLatencySeconds);
  ExpectLink(*c, 1, 2, LinkKind::kPcie, pcie, kPcieLatencySeconds);
}

TEST(ClusterSpec, PcieNodeUsesTheSlowerPcieLink) {
  Result<Cluster> c = LoadCluster(
      std::string(TESSERA_SOURCE_DIR) + "/models/clusters/hetero.yaml",
      Catalog(), {});
  ASSERT_TRUE(c) << c.error().message;
  ASSERT_EQ(c->size(), 4U);
  const double fast = Catalog().Find("h100-pcie")->pcie_bandwidth;
  const double slow = Catalog().Find("v100-32gb")->pcie_bandwidth;
  ASSERT_LT(slow, fast);
  ExpectLink(*c, 0, 1, LinkKind::kPcie, fast, kPcieLatencySeconds);
  ExpectLink(*c, 0, 2, LinkKind::kPcie, slow, kPcieLatencySeconds);
  ExpectLink(*c, 2, 3, LinkKind::kPcie, slow, kPcieLatencySeconds);
  EXPECT_EQ(c->devices[0].spec.name, "h100-pcie");
  EXPECT_EQ(c->devices[3].spec.name, "v100-32gb");
  EXPECT_EQ(c->devices[3].id, "node0/gpu3");
}

TEST(ClusterSpec, TwoNodesAreJoinedByTheNetwork) {
  Result<Cluster> c = LoadCluster(
      std::string(TESSERA_SOURCE_DIR) + "/models/clusters/two_nodes.yaml",
      Catalog(), {});
  ASSERT_TRUE(c) << c.error().message;
  ASSERT_EQ(c->size(), 4U);
  EXPECT_EQ(c->devices[2].id, "node1/gpu0");
  EXPECT_EQ(c->devices[2].node, "node1");
  ExpectLocalDiagonal(*c);
  ExpectLink(*c, 0, 1, LinkKind::kNvlink, 300 * kGBps, kNvlinkLatencySeconds);
  ExpectLink(*c, 2, 3, LinkKind::kNvlink, 300 * kGBps, kNvlinkLatencySeconds);
  for (size_t a : {0U, 1U}) {
    for (size_t b : {2U, 3U}) {
      ExpectLink(*c, a, b, LinkKind::kNetwork, 3 * kGBps, 20e-6);
    }
  }
}

TEST(ClusterSpec, NetworkDefaultsWhenNotGiven) {
  Result<Cluster> c = Parse(Lines({
      "nodes:",
      "  - {name: a, gpus: [{kind: a100-80gb}]}",
      "  - {name: b, gpus: [{kind: a100-80gb}]}",
  }));
  ASSERT_TRUE(c) << c.error().message;
  ExpectLink(*c, 0, 1, LinkKind::kNetwork, kDefaultNetworkBandwidth,
             kDefaultNetworkLatencySeconds);
}

TEST(ClusterSpec, NetworkIsNeverFasterThanEitherGpusPcie) {
  Result<Cluster> c = Parse(Lines({
      "nodes:",
      "  - {name: a, gpus: [{kind: h100-sxm}]}",
      "  - {name: b, gpus: [{kind: t4}]}",
      "network: {bandwidth: 400GB/s}",
  }));
  ASSERT_TRUE(c) << c.error().message;
  ExpectLink(*c, 0, 1, LinkKind::kNetwork, Catalog().Find("t4")->pcie_bandwidth,
             kDefaultNetworkLatencySeconds);
}

TEST(ClusterSpec, OverrideAcrossNodesIsSymmetricAndKeepsWhatItDoesNotGive) {
  Result<Cluster> c = Parse(Lines({
      "nodes:",
      "  - {name: a, gpus: [{kind: a100-80gb, count: 2}]}",
      "  - {name: b, gpus: [{kind: a100-80gb}]}",
      "network: {bandwidth: 10GB/s, latency: 7us}",
      "links:",
      "  - {between: [b/gpu0, a/gpu1], latency: 1ms}",
      "  - {between: [a/gpu0, a/gpu1], bandwidth: 100GB/s}",
  }));
  ASSERT_TRUE(c) << c.error().message;
  ExpectLink(*c, 1, 2, LinkKind::kCustom, 10 * kGBps, 1e-3);
  ExpectLink(*c, 0, 1, LinkKind::kCustom, 100 * kGBps, kNvlinkLatencySeconds);
  ExpectLink(*c, 0, 2, LinkKind::kNetwork, 10 * kGBps, 7e-6);
}

TEST(ClusterSpec, OverrideMayBeFasterThanTheDerivedLink) {
  // Explicit links are taken as given, with no PCIe cap.
  Result<Cluster> c = Parse(Lines({
      "nodes:",
      "  - {name: a, gpus: [{kind: a100-80gb}]}",
      "  - {name: b, gpus: [{kind: a100-80gb}]}",
      "links: [{between: [a/gpu0, b/gpu0], bandwidth: 50GB/s, latency: 0us}]",
  }));
  ASSERT_TRUE(c) << c.error().message;
  ExpectLink(*c, 0, 1, LinkKind::kCustom, 50 * kGBps, 0.0);
}

// ---- Optional keys and defaults ---------------------------------------------

TEST(ClusterSpec, IdsCountAcrossEntriesOfANode) {
  Result<Cluster> c = Parse(Lines({
      "name: lab",
      "nodes:",
      "  - gpus: [{kind: t4}, {kind: l4, count: 2}]",
      "  - gpus: [{kind: a10}]",
  }));
  ASSERT_TRUE(c) << c.error().message;
  ASSERT_EQ(c->size(), 4U);
  EXPECT_EQ(c->devices[0].id, "node0/gpu0");
  EXPECT_EQ(c->devices[1].id, "node0/gpu1");
  EXPECT_EQ(c->devices[2].id, "node0/gpu2");
  EXPECT_EQ(c->devices[2].spec.name, "l4");
  EXPECT_EQ(c->devices[3].id, "node1/gpu0");  // default name: node<index>
  EXPECT_EQ(c->devices[3].spec.name, "a10");
}

TEST(ClusterSpec, WholeMemoryAndFullShareGivenAreTakenAsGiven) {
  Result<Cluster> c = Parse(Lines({
      "nodes:",
      "  - gpus:",
      "      - {kind: a100-80gb, memory_free: 80GiB, compute_share: 1}",
      "      - {kind: a100-80gb, memory_free: 512MiB, compute_share: 0.01}",
  }));
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_TRUE(c->devices[0].memory_given);
  EXPECT_EQ(c->devices[0].memory_usable, 80 * kGiB);
  EXPECT_DOUBLE_EQ(c->devices[0].compute_share, 1.0);
  EXPECT_EQ(c->devices[1].memory_usable, 512 << 20);
  EXPECT_DOUBLE_EQ(c->devices[1].compute_share, 0.01);
}

TEST(ClusterSpec, SliversFileHasFourSmallFractionalGpus) {
  Result<Cluster> c = LoadCluster(
      std::string(TESSERA_SOURCE_DIR) + "/models/clusters/slivers.yaml",
      Catalog(), {});
  ASSERT_TRUE(c) << c.error().message;
  ASSERT_EQ(c->size(), 4U);
  const int64_t gib[] = {6, 4, 5, 3};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_TRUE(c->devices[i].memory_given);
    EXPECT_EQ(c->devices[i].memory_usable, gib[i] * kGiB);
    EXPECT_GE(c->devices[i].compute_share, 0.25);
    EXPECT_LE(c->devices[i].compute_share, 0.5);
  }
  ExpectLink(*c, 0, 3, LinkKind::kNvlink, 300 * kGBps, kNvlinkLatencySeconds);
}

TEST(ClusterSpec, AcceptsUpTo1024Gpus) {
  Result<Cluster> c = Parse(Lines({
      "nodes:",
      "  - {name: a, gpus: [{kind: t4, count: 1000}]}",
      "  - {name: b, gpus: [{kind: t4, count: 24}]}",
  }));
  ASSERT_TRUE(c) << c.error().message;
  ASSERT_EQ(c->size(), 1024U);
  EXPECT_EQ(c->devices[1023].id, "b/gpu23");
  EXPECT_EQ(c->link(0, 1023).kind, LinkKind::kNetwork);
}

// ---- The default cluster ---------------------------------------------------

void ExpectDefaultShape(const Cluster& c) {
  ASSERT_EQ(c.size(), 4U);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(c.devices[i].id, "node0/gpu" + std::to_string(i));
    EXPECT_EQ(c.devices[i].spec.name, "a100-80gb");
    EXPECT_FALSE(c.devices[i].memory_given);
    EXPECT_EQ(c.devices[i].memory_usable, WholeA100Usable());
    EXPECT_DOUBLE_EQ(c.devices[i].compute_share, 1.0);
  }
  ExpectLocalDiagonal(c);
  for (size_t a = 0; a < 4; ++a) {
    for (size_t b = a + 1; b < 4; ++b) {
      ExpectLink(c, a, b, LinkKind::kNvlink, 300 * kGBps,
                 kNvlinkLatencySeconds);
    }
  }
}

TEST(ClusterDefault, IsFourA100sOnNvlink) {
  const Cluster c = DefaultCluster(Catalog(), {});
  EXPECT_EQ(c.source, "built-in default");
  ExpectDefaultShape(c);
}

TEST(ClusterDefault, EqualsDefaultYaml) {
  Result<Cluster> c = LoadCluster(
      std::string(TESSERA_SOURCE_DIR) + "/models/clusters/default.yaml",
      Catalog(), {});
  ASSERT_TRUE(c) << c.error().message;
  ExpectDefaultShape(*c);
}

TEST(ClusterDefault, WorksWithACatalogLackingTheKind) {
  const Cluster c = DefaultCluster(estimator::DeviceCatalog(), {});
  ExpectDefaultShape(c);
}

// ---- Files -----------------------------------------------------------------

TEST(ClusterLoad, MissingFileIsBadInputNamingThePath) {
  Result<Cluster> c = LoadCluster("/nonexistent/tessera/c.yaml", Catalog(), {});
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code, ErrorCode::kBadInput);
  EXPECT_THAT(c.error().message, StartsWith("/nonexistent/tessera/c.yaml: "));
}

TEST(ClusterLoad, DirectoryIsBadInput) {
  Result<Cluster> c = LoadCluster(TESSERA_SOURCE_DIR, Catalog(), {});
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code, ErrorCode::kBadInput);
  EXPECT_THAT(c.error().message, HasSubstr("not a regular file"));
}

TEST(ClusterLoad, ErrorsInAFileNameItsPathAndLine) {
  const std::string path =
      (std::filesystem::temp_directory_path() / "tessera_cluster_test.yaml")
          .string();
  {
    std::ofstream out(path);
    out << "nodes:\n  - gpus:\n      - kind: a100-80gb\n"
           "        compute_share: 2\n";
  }
  Result<Cluster> c = LoadCluster(path, Catalog(), {});
  std::filesystem::remove(path);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code, ErrorCode::kBadInput);
  EXPECT_THAT(c.error().message, StartsWith(path + ":4: "));
  EXPECT_THAT(c.error().message, HasSubstr("nodes[0].gpus[0].compute_share"));
}

}  // namespace
}  // namespace tessera::placer
