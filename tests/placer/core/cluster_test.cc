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
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "tests/testlib/repo_paths.h"

namespace tessera::placer {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
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

// ---- Validation -------------------------------------------------------------

struct BadSpec {
  std::string name;
  std::string yaml;
  std::vector<std::string> expected;  // substrings of the message
};

void PrintTo(const BadSpec& s, std::ostream* os) { *os << s.name; }

class ClusterValidation : public ::testing::TestWithParam<BadSpec> {};

TEST_P(ClusterValidation, IsBadInputNamingSourceLineAndField) {
  Result<Cluster> c = Parse(GetParam().yaml);
  ASSERT_FALSE(c) << "accepted:\n" << GetParam().yaml;
  EXPECT_EQ(c.error().code, ErrorCode::kBadInput);
  EXPECT_THAT(c.error().message, StartsWith("cluster.yaml"));
  for (const std::string& s : GetParam().expected) {
    EXPECT_THAT(c.error().message, HasSubstr(s));
  }
}

// A one-node spec whose single GPU entry (line 4) has `extra` on line 5.
std::string OneGpu(std::string_view kind, std::string_view extra = "") {
  return Lines({"nodes:", "  - name: node0",
                "    gpus:", "      - kind: " + std::string(kind), extra});
}

// Two a100s on node0, then `links:` from line 5 on.
std::string WithLinks(std::initializer_list<std::string_view> links) {
  std::string out =
      Lines({"nodes:", "  - name: node0",
             "    gpus:", "      - {kind: a100-80gb, count: 2}", "links:"});
  for (std::string_view l : links) out += std::string(l) + "\n";
  return out;
}

const BadSpec kBadSpecs[] = {
    // GPU kind and residual capacity.
    {"UnknownKind",
     OneGpu("a100-90gb"),
     {"cluster.yaml:4: ", "nodes[0].gpus[0].kind", "unknown device 'a100-90gb'",
      "a100-80gb", "h100-sxm"}},
    {"MissingKind",
     Lines({"nodes:", "  - gpus:", "      - count: 2"}),
     {"cluster.yaml:3: ", "nodes[0].gpus[0]", "missing 'kind'"}},
    {"ShareZero",
     OneGpu("a100-80gb", "        compute_share: 0"),
     {"cluster.yaml:5: ", "nodes[0].gpus[0].compute_share", "(0, 1]"}},
    {"ShareAboveOne",
     OneGpu("a100-80gb", "        compute_share: 1.5"),
     {"cluster.yaml:5: ", "nodes[0].gpus[0].compute_share", "'1.5'"}},
    {"ShareNegative",
     OneGpu("a100-80gb", "        compute_share: -0.5"),
     {"cluster.yaml:5: ", "compute_share", "(0, 1]"}},
    {"ShareNotANumber",
     OneGpu("a100-80gb", "        compute_share: half"),
     {"cluster.yaml:5: ", "compute_share", "'half'"}},
    {"ShareNan",
     OneGpu("a100-80gb", "        compute_share: nan"),
     {"cluster.yaml:5: ", "compute_share"}},
    {"MemoryLargerThanTheGpu",
     OneGpu("a100-80gb", "        memory_free: 100GiB"),
     {"cluster.yaml:5: ", "nodes[0].gpus[0].memory_free", "'100GiB'",
      "a100-80gb", "80 GiB"}},
    {"MemoryZero",
     OneGpu("a100-80gb", "        memory_free: 0GiB"),
     {"cluster.yaml:5: ", "memory_free", "must be positive"}},
    {"MemoryWithoutUnit",
     OneGpu("a100-80gb", "        memory_free: 24"),
     {"cluster.yaml:5: ", "nodes[0].gpus[0].memory_free", "'24'"}},
    {"MemoryNegative",
     OneGpu("a100-80gb", "        memory_free: -1GiB"),
     {"cluster.yaml:5: ", "memory_free"}},
    {"MemoryNoValue",
     OneGpu("a100-80gb", "        memory_free:"),
     {"cluster.yaml:5: ", "nodes[0].gpus[0].memory_free", "has no value"}},
    {"CountZero",
     OneGpu("a100-80gb", "        count: 0"),
     {"cluster.yaml:5: ", "nodes[0].gpus[0].count", ">= 1"}},
    {"CountNegative",
     OneGpu("a100-80gb", "        count: -2"),
     {"cluster.yaml:5: ", "count", ">= 1"}},
    {"CountFractional",
     OneGpu("a100-80gb", "        count: 2.5"),
     {"cluster.yaml:5: ", "count", "'2.5'"}},
    {"CountWord",
     OneGpu("a100-80gb", "        count: two"),
     {"cluster.yaml:5: ", "count", "'two'"}},
    {"CountAList",
     OneGpu("a100-80gb", "        count: [2]"),
     {"cluster.yaml:5: ", "nodes[0].gpus[0].count", "got a list"}},
    {"CountTooLarge",
     OneGpu("a100-80gb", "        count: 5000"),
     {"cluster.yaml:5: ", "count", "more than 1024 GPUs"}},
    {"TooManyGpusInAll",
     Lines({"nodes:", "  - gpus:", "      - {kind: t4, count: 1000}",
            "      - {kind: t4, count: 25}"}),
     {"cluster.yaml:4: ", "nodes[0].gpus[1].count", "more than 1024 GPUs"}},
    {"OneGpuTooMany",
     Lines({"nodes:", "  - gpus:", "      - {kind: t4, count: 1024}",
            "      - {kind: t4}"}),
     {"cluster.yaml:4: ", "nodes[0].gpus[1]", "more than 1024 GPUs"}},
    // Nodes.
    {"DuplicateNodeNames",
     Lines({"nodes:", "  - name: a", "    gpus: [{kind: t4}]", "  - name: a",
            "    gpus: [{kind: t4}]"}),
     {"cluster.yaml:4: ", "nodes[1].name", "'a' appears twice"}},
    {"DefaultNameCollides",
     Lines({"nodes:", "  - name: node1", "    gpus: [{kind: t4}]",
            "  - gpus: [{kind: t4}]"}),
     {"cluster.yaml:4: ", "nodes[1].name", "'node1' appears twice"}},
    {"NodeNameWithSlash",
     Lines({"nodes:", "  - name: rack/a", "    gpus: [{kind: t4}]"}),
     {"cluster.yaml:2: ", "nodes[0].name", "'rack/a'"}},
    {"UnknownInterconnect",
     Lines(
         {"nodes:", "  - interconnect: infiniband", "    gpus: [{kind: t4}]"}),
     {"cluster.yaml:2: ", "nodes[0].interconnect", "'infiniband'",
      "nvlink or pcie"}},
    {"MissingGpus",
     Lines({"nodes:", "  - name: a"}),
     {"cluster.yaml:2: ", "nodes[0]", "missing the 'gpus:' list"}},
    {"NoGpus",
     Lines({"nodes:", "  - name: a", "    gpus: []"}),
     {"cluster.yaml:3: ", "nodes[0].gpus", "node 'a' has no GPUs"}},
    {"GpusAScalar",
     Lines({"nodes:", "  - name: a", "    gpus: a100-80gb"}),
     {"cluster.yaml:3: ", "nodes[0].gpus", "got a single value 'a100-80gb'"}},
    {"GpuAScalar",
     Lines({"nodes:", "  - name: a", "    gpus:", "      - a100-80gb"}),
     {"cluster.yaml:4: ", "nodes[0].gpus[0]", "expected a map"}},
    {"NodeAScalar",
     Lines({"nodes:", "  - node0"}),
     {"cluster.yaml:2: ", "nodes[0]", "expected a map"}},
    // The whole spec.
    {"Empty", "", {"cluster.yaml: ", "empty", "'nodes:'"}},
    {"OnlyAComment", "# nothing\n", {"cluster.yaml: ", "empty"}},
    {"NoNodesKey",
     Lines({"name: x"}),
     {"cluster.yaml:1: ", "missing the top-level 'nodes:' list"}},
    {"NoNodes",
     Lines({"name: x", "nodes: []"}),
     {"cluster.yaml:2: ", "nodes", "no nodes"}},
    {"NodesAMap",
     Lines({"nodes:", "  node0:", "    gpus: [{kind: t4}]"}),
     {"cluster.yaml:2: ", "nodes", "expected a list of nodes", "got a map"}},
    {"RootAList",
     Lines({"- nodes: []"}),
     {"cluster.yaml:1: ", "the spec", "expected a map"}},
    {"NameAList",
     Lines({"name: [a, b]", "nodes: [{gpus: [{kind: t4}]}]"}),
     {"cluster.yaml:1: ", "name", "got a list"}},
    {"SyntaxError",
     Lines({"nodes:", "  - name: a", "    gpus: [{kind: t4}", "  - name: b"}),
     {"cluster.yaml:", "malformed YAML"}},
    {"BadIndentation",
     Lines({"nodes:", "  - name: a", "     gpus: [{kind: t4}]"}),
     {"cluster.yaml:3: ", "malformed YAML"}},
    // Unknown keys, with a suggestion for typos.
    {"UnknownGpuKey",
     OneGpu("a100-80gb", "        memroy_free: 24GiB"),
     {"cluster.yaml:5: ", "unknown key 'memroy_free' in nodes[0].gpus[0]",
      "did you mean 'memory_free'?", "compute_share"}},
    {"UnknownNodeKey",
     Lines({"nodes:", "  - name: a", "    interconect: pcie",
            "    gpus: [{kind: t4}]"}),
     {"cluster.yaml:3: ", "unknown key 'interconect' in nodes[0]",
      "did you mean 'interconnect'?"}},
    {"UnknownTopLevelKey",
     Lines({"nodes: [{gpus: [{kind: t4}]}]", "pools: [default]"}),
     {"cluster.yaml:2: ", "unknown key 'pools' at the top level",
      "known keys: name, nodes, network, links"}},
    {"UnknownNetworkKey",
     Lines({"nodes: [{gpus: [{kind: t4}]}]", "network:", "  bandwith: 1GB/s"}),
     {"cluster.yaml:3: ", "unknown key 'bandwith' in network",
      "did you mean 'bandwidth'?"}},
    {"UnknownLinkKey",
     WithLinks(
         {"  - between: [node0/gpu0, node0/gpu1]", "    bandwith: 1GB/s"}),
     {"cluster.yaml:7: ", "unknown key 'bandwith' in links[0]"}},
    {"DuplicateKey",
     OneGpu("a100-80gb", "        kind: t4"),
     {"cluster.yaml:5: ", "nodes[0].gpus[0].kind", "given twice"}},
    // Network.
    {"NetworkBandwidthMalformed",
     Lines({"nodes: [{gpus: [{kind: t4}]}]", "network: {bandwidth: fast}"}),
     {"cluster.yaml:2: ", "network.bandwidth", "'fast'"}},
    {"NetworkBandwidthZero",
     Lines({"nodes: [{gpus: [{kind: t4}]}]", "network: {bandwidth: 0GB/s}"}),
     {"cluster.yaml:2: ", "network.bandwidth", "must be positive"}},
    {"NetworkLatencyMalformed",
     Lines({"nodes: [{gpus: [{kind: t4}]}]", "network:", "  latency: 5"}),
     {"cluster.yaml:3: ", "network.latency", "'5'"}},
    {"NetworkAScalar",
     Lines({"nodes: [{gpus: [{kind: t4}]}]", "network: 25GB/s"}),
     {"cluster.yaml:2: ", "network", "expected a map"}},
    // Links.
    {"UnknownLinkEndpoint",
     WithLinks({"  - between: [node0/gpu0, node0/gpu9]", "    latency: 1us"}),
     {"cluster.yaml:6: ", "links[0].between", "unknown device 'node0/gpu9'",
      "node0/gpu0, node0/gpu1"}},
    {"LinkToItself",
     WithLinks({"  - between: [node0/gpu1, node0/gpu1]", "    latency: 1us"}),
     {"cluster.yaml:6: ", "links[0].between", "'node0/gpu1' is given twice"}},
    {"LinkBetweenAScalar",
     WithLinks({"  - between: node0/gpu1", "    latency: 1us"}),
     {"cluster.yaml:6: ", "links[0].between", "expected two device ids"}},
    {"LinkBetweenThree",
     WithLinks({"  - between: [node0/gpu0, node0/gpu1, node0/gpu0]",
                "    latency: 1us"}),
     {"cluster.yaml:6: ", "links[0].between", "a list of 3"}},
    {"LinkWithoutBetween",
     WithLinks({"  - latency: 1us"}),
     {"cluster.yaml:6: ", "links[0]", "missing 'between"}},
    {"LinkWithNothingToOverride",
     WithLinks({"  - between: [node0/gpu0, node0/gpu1]"}),
     {"cluster.yaml:6: ", "links[0]", "neither 'bandwidth' nor 'latency'"}},
    {"LinkBandwidthZero",
     WithLinks(
         {"  - between: [node0/gpu0, node0/gpu1]", "    bandwidth: 0GB/s"}),
     {"cluster.yaml:7: ", "links[0].bandwidth", "must be positive"}},
    {"LinkLatencyMalformed",
     WithLinks(
         {"  - between: [node0/gpu0, node0/gpu1]", "    latency: 5 parsecs"}),
     {"cluster.yaml:7: ", "links[0].latency", "'5 parsecs'"}},
    {"LinkGivenTwice",
     WithLinks({"  - {between: [node0/gpu0, node0/gpu1], latency: 1us}",
                "  - {between: [node0/gpu1, node0/gpu0], latency: 2us}"}),
     {"cluster.yaml:7: ", "links[1].between", "already given at line 6"}},
    {"LinksAMap",
     WithLinks({"  a: b"}),
     {"cluster.yaml:6: ", "links", "expected a list of links"}},
};

INSTANTIATE_TEST_SUITE_P(ClusterSpec, ClusterValidation,
                         ::testing::ValuesIn(kBadSpecs),
                         [](const ::testing::TestParamInfo<BadSpec>& param) {
                           return param.param.name;
                         });

TEST(ClusterSpec, ErrorsNameTheSourceGiven) {
  Result<Cluster> c =
      ParseCluster(OneGpu("nope"), "specs/lab.yaml", Catalog(), {});
  ASSERT_FALSE(c);
  EXPECT_THAT(c.error().message, StartsWith("specs/lab.yaml:4: "));
}

TEST(ClusterSpec, UnknownEndpointListsOnlyAFewIds) {
  Result<Cluster> c = Parse(Lines({
      "nodes: [{gpus: [{kind: t4, count: 20}]}]",
      "links: [{between: [node0/gpu0, node0/gpu20], latency: 1us}]",
  }));
  ASSERT_FALSE(c);
  EXPECT_THAT(c.error().message, HasSubstr("node0/gpu7, ... (20 in all)"));
  EXPECT_THAT(c.error().message, Not(HasSubstr("node0/gpu8,")));
}

}  // namespace
}  // namespace tessera::placer
