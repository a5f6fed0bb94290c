// Cluster specs that ParseCluster refuses: each a kBadInput naming the
// source, the line and the field (placer/core/cluster.h; the accepted ones
// are in cluster_test.cc).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <initializer_list>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "placer/core/cluster.h"

namespace tessera::placer {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

const estimator::DeviceCatalog& ValidationCatalog() {
  static const estimator::DeviceCatalog catalog =
      estimator::DeviceCatalog::BuiltIn();
  return catalog;
}

// Joins lines with '\n', so that line numbers in expectations are indexes + 1.
std::string YamlLines(std::initializer_list<std::string_view> lines) {
  std::string out;
  for (std::string_view line : lines) out += std::string(line) + "\n";
  return out;
}

Result<Cluster> ParseYaml(const std::string& yaml) {
  return ParseCluster(yaml, "cluster.yaml", ValidationCatalog(), {});
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
  Result<Cluster> c = ParseYaml(GetParam().yaml);
  ASSERT_FALSE(c) << "accepted:\n" << GetParam().yaml;
  EXPECT_EQ(c.error().code, ErrorCode::kBadInput);
  EXPECT_THAT(c.error().message, StartsWith("cluster.yaml"));
  for (const std::string& s : GetParam().expected) {
    EXPECT_THAT(c.error().message, HasSubstr(s));
  }
}

// A one-node spec whose single GPU entry (line 4) has `extra` on line 5.
std::string OneGpu(std::string_view kind, std::string_view extra = "") {
  return YamlLines({"nodes:", "  - name: node0",
                    "    gpus:", "      - kind: " + std::string(kind), extra});
}

// Two a100s on node0, then `links:` from line 5 on.
std::string WithLinks(std::initializer_list<std::string_view> links) {
  std::string out =
      YamlLines({"nodes:", "  - name: node0",
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
     YamlLines({"nodes:", "  - gpus:", "      - count: 2"}),
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
     YamlLines({"nodes:", "  - gpus:", "      - {kind: t4, count: 1000}",
                "      - {kind: t4, count: 25}"}),
     {"cluster.yaml:4: ", "nodes[0].gpus[1].count", "more than 1024 GPUs"}},
    {"OneGpuTooMany",
     YamlLines({"nodes:", "  - gpus:", "      - {kind: t4, count: 1024}",
                "      - {kind: t4}"}),
     {"cluster.yaml:4: ", "nodes[0].gpus[1]", "more than 1024 GPUs"}},
    // Nodes.
    {"DuplicateNodeNames",
     YamlLines({"nodes:", "  - name: a", "    gpus: [{kind: t4}]",
                "  - name: a", "    gpus: [{kind: t4}]"}),
     {"cluster.yaml:4: ", "nodes[1].name", "'a' appears twice"}},
    {"DefaultNameCollides",
     YamlLines({"nodes:", "  - name: node1", "    gpus: [{kind: t4}]",
                "  - gpus: [{kind: t4}]"}),
     {"cluster.yaml:4: ", "nodes[1].name", "'node1' appears twice"}},
    {"NodeNameWithSlash",
     YamlLines({"nodes:", "  - name: rack/a", "    gpus: [{kind: t4}]"}),
     {"cluster.yaml:2: ", "nodes[0].name", "'rack/a'"}},
    {"UnknownInterconnect",
     YamlLines(
         {"nodes:", "  - interconnect: infiniband", "    gpus: [{kind: t4}]"}),
     {"cluster.yaml:2: ", "nodes[0].interconnect", "'infiniband'",
      "nvlink or pcie"}},
    {"MissingGpus",
     YamlLines({"nodes:", "  - name: a"}),
     {"cluster.yaml:2: ", "nodes[0]", "missing the 'gpus:' list"}},
    {"NoGpus",
     YamlLines({"nodes:", "  - name: a", "    gpus: []"}),
     {"cluster.yaml:3: ", "nodes[0].gpus", "node 'a' has no GPUs"}},
    {"GpusAScalar",
     YamlLines({"nodes:", "  - name: a", "    gpus: a100-80gb"}),
     {"cluster.yaml:3: ", "nodes[0].gpus", "got a single value 'a100-80gb'"}},
    {"GpuAScalar",
     YamlLines({"nodes:", "  - name: a", "    gpus:", "      - a100-80gb"}),
     {"cluster.yaml:4: ", "nodes[0].gpus[0]", "expected a map"}},
    {"NodeAScalar",
     YamlLines({"nodes:", "  - node0"}),
     {"cluster.yaml:2: ", "nodes[0]", "expected a map"}},
    // The whole spec.
    {"Empty", "", {"cluster.yaml: ", "empty", "'nodes:'"}},
    {"OnlyAComment", "# nothing\n", {"cluster.yaml: ", "empty"}},
    {"NoNodesKey",
     YamlLines({"name: x"}),
     {"cluster.yaml:1: ", "missing the top-level 'nodes:' list"}},
    {"NoNodes",
     YamlLines({"name: x", "nodes: []"}),
     {"cluster.yaml:2: ", "nodes", "no nodes"}},
    {"NodesAMap",
     YamlLines({"nodes:", "  node0:", "    gpus: [{kind: t4}]"}),
     {"cluster.yaml:2: ", "nodes", "expected a list of nodes", "got a map"}},
    {"RootAList",
     YamlLines({"- nodes: []"}),
     {"cluster.yaml:1: ", "the spec", "expected a map"}},
    {"NameAList",
     YamlLines({"name: [a, b]", "nodes: [{gpus: [{kind: t4}]}]"}),
     {"cluster.yaml:1: ", "name", "got a list"}},
    {"SyntaxError",
     YamlLines(
         {"nodes:", "  - name: a", "    gpus: [{kind: t4}", "  - name: b"}),
     {"cluster.yaml:", "malformed YAML"}},
    {"BadIndentation",
     YamlLines({"nodes:", "  - name: a", "     gpus: [{kind: t4}]"}),
     {"cluster.yaml:3: ", "malformed YAML"}},
    // Unknown keys, with a suggestion for typos.
    {"UnknownGpuKey",
     OneGpu("a100-80gb", "        memroy_free: 24GiB"),
     {"cluster.yaml:5: ", "unknown key 'memroy_free' in nodes[0].gpus[0]",
      "did you mean 'memory_free'?", "compute_share"}},
    {"UnknownNodeKey",
     YamlLines({"nodes:", "  - name: a", "    interconect: pcie",
                "    gpus: [{kind: t4}]"}),
     {"cluster.yaml:3: ", "unknown key 'interconect' in nodes[0]",
      "did you mean 'interconnect'?"}},
    {"UnknownTopLevelKey",
     YamlLines({"nodes: [{gpus: [{kind: t4}]}]", "pools: [default]"}),
     {"cluster.yaml:2: ", "unknown key 'pools' at the top level",
      "known keys: name, nodes, network, links"}},
    {"UnknownNetworkKey",
     YamlLines(
         {"nodes: [{gpus: [{kind: t4}]}]", "network:", "  bandwith: 1GB/s"}),
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
     YamlLines({"nodes: [{gpus: [{kind: t4}]}]", "network: {bandwidth: fast}"}),
     {"cluster.yaml:2: ", "network.bandwidth", "'fast'"}},
    {"NetworkBandwidthZero",
     YamlLines(
         {"nodes: [{gpus: [{kind: t4}]}]", "network: {bandwidth: 0GB/s}"}),
     {"cluster.yaml:2: ", "network.bandwidth", "must be positive"}},
    {"NetworkLatencyMalformed",
     YamlLines({"nodes: [{gpus: [{kind: t4}]}]", "network:", "  latency: 5"}),
     {"cluster.yaml:3: ", "network.latency", "'5'"}},
    {"NetworkAScalar",
     YamlLines({"nodes: [{gpus: [{kind: t4}]}]", "network: 25GB/s"}),
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
      ParseCluster(OneGpu("nope"), "specs/lab.yaml", ValidationCatalog(), {});
  ASSERT_FALSE(c);
  EXPECT_THAT(c.error().message, StartsWith("specs/lab.yaml:4: "));
}

TEST(ClusterSpec, UnknownEndpointListsOnlyAFewIds) {
  Result<Cluster> c = ParseYaml(YamlLines({
      "nodes: [{gpus: [{kind: t4, count: 20}]}]",
      "links: [{between: [node0/gpu0, node0/gpu20], latency: 1us}]",
  }));
  ASSERT_FALSE(c);
  EXPECT_THAT(c.error().message, HasSubstr("node0/gpu7, ... (20 in all)"));
  EXPECT_THAT(c.error().message, Not(HasSubstr("node0/gpu8,")));
}

}  // namespace
}  // namespace tessera::placer
