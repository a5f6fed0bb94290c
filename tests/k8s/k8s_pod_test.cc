// The extender's contract on the wire: quantities as Kubernetes writes
// them, v1 Pods as kube-scheduler sends them (JSON fixtures written from the
// upstream types under tests/data/k8s/), ExtenderArgs and
// ExtenderBindingArgs with the Go field names, the v1 Binding; malformed
// input is refused naming the field.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "k8s/k8s_extender.h"
#include "k8s/k8s_pod.h"
#include "tests/testlib/repo_paths.h"

namespace tessera::k8s {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

json PodFixture(const std::string& name) {
  std::ifstream in(std::string(TESSERA_SOURCE_DIR) + "/tests/data/k8s/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return json::parse(s.str());
}

int64_t Q(const std::string& text, int scale) {
  Result<QuantityValue> q = ParseQuantity(text, scale);
  EXPECT_TRUE(q) << text << ": " << q.error().message;
  return q ? q->value : -1;
}

std::string QuantityError(const std::string& text) {
  Result<QuantityValue> q = ParseQuantity(text, 0);
  return q ? "" : q.error().message;
}

TEST(K8sQuantity, ReadsKubernetesNotation) {
  EXPECT_EQ(Q("250", 0), 250);
  EXPECT_EQ(Q("500m", 3), 500);
  EXPECT_EQ(Q("2", 3), 2000);
  EXPECT_EQ(Q("1.5", 3), 1500);
  EXPECT_EQ(Q("0.25", 3), 250);
  EXPECT_EQ(Q("1Gi", 0), int64_t{1} << 30);
  EXPECT_EQ(Q("512Mi", 0), int64_t{512} << 20);
  EXPECT_EQ(Q("263921332Ki", 0), int64_t{263921332} << 10);
  EXPECT_EQ(Q("2e3", 0), 2000);
  EXPECT_EQ(Q("1E", 0), 1'000'000'000'000'000'000);
  EXPECT_EQ(Q("1k", 0), 1000);
  EXPECT_EQ(Q("+7", 0), 7);
  EXPECT_EQ(Q("0", 0), 0);
}

TEST(K8sQuantity, RoundsUpAsKubernetesDoes) {
  Result<QuantityValue> half = ParseQuantity("0.5", 0);
  ASSERT_TRUE(half);
  EXPECT_EQ(half->value, 1);
  EXPECT_FALSE(half->exact);
  Result<QuantityValue> tiny = ParseQuantity("100n", 3);
  ASSERT_TRUE(tiny);
  EXPECT_EQ(tiny->value, 1);
  EXPECT_FALSE(tiny->exact);
  EXPECT_TRUE(ParseQuantity("250", 0)->exact);
}

TEST(K8sQuantity, RefusesWhatIsNotAQuantity) {
  EXPECT_THAT(QuantityError("-1"), HasSubstr("must not be negative"));
  EXPECT_THAT(QuantityError("abc"), HasSubstr("is not a quantity"));
  EXPECT_THAT(QuantityError(""), HasSubstr("is not a quantity"));
  EXPECT_THAT(QuantityError("1Qi"), HasSubstr("is not a quantity"));
  EXPECT_THAT(QuantityError("1.2.3"), HasSubstr("is not a quantity"));
  EXPECT_THAT(QuantityError("."), HasSubstr("is not a quantity"));
  EXPECT_THAT(QuantityError("8Ei"), HasSubstr("too large"));
  EXPECT_THAT(QuantityError("1e999"), HasSubstr("too large"));
  EXPECT_THAT(QuantityError("1234567890123456789012345678901234567890"),
              HasSubstr("is not a quantity"));
}

TEST(K8sPod, SumsContainersAsTheSchedulerDoes) {
  Result<K8sPod> pod = ParseK8sPod(PodFixture("pod_fraction.json"), "Pod");
  ASSERT_TRUE(pod) << pod.error().message;
  EXPECT_EQ(pod->ref.name, "notebook-0");
  EXPECT_EQ(pod->ref.ns, "ml");
  EXPECT_EQ(pod->ref.uid, "6f1c2a9e-3b7d-4c55-9a0e-1d2f3a4b5c6d");
  EXPECT_TRUE(pod->managed);
  // GPU: the main container's fraction. CPU: the init container's 2 cores
  // beat the containers' 1.5 + 0.1. Memory: 8 GiB + 64 MiB of requests.
  EXPECT_EQ(pod->demand, (Resources{0, 250, 8192, 2000, 8192 + 64}));
}

TEST(K8sPod, WholeGpusAndPodsWithoutGpus) {
  Result<K8sPod> whole =
      ParseK8sPod(PodFixture("filter_args_whole.json")["Pod"], "Pod");
  ASSERT_TRUE(whole) << whole.error().message;
  EXPECT_EQ(whole->demand, (Resources{2, 0, 0, 8000, 32 * 1024}));
  EXPECT_TRUE(whole->managed);
  Result<K8sPod> plain =
      ParseK8sPod(PodFixture("filter_args_cpu_pod.json")["Pod"], "Pod");
  ASSERT_TRUE(plain) << plain.error().message;
  EXPECT_FALSE(plain->managed);
  EXPECT_EQ(plain->demand, (Resources{0, 0, 0, 250, 128}));
}

// The fixture's pod with the main container's resources replaced.
std::string PodError(const json& resources) {
  json pod = PodFixture("pod_fraction.json");
  pod["spec"]["containers"][0]["resources"] = resources;
  Result<K8sPod> parsed = ParseK8sPod(pod, "Pod");
  return parsed ? "" : parsed.error().message;
}

TEST(K8sPod, RefusesBadResourcesNamingTheField) {
  EXPECT_EQ(PodError({{"limits", {{"tessera.io/gpu-milli", "1500"}}}}),
            "Pod.spec.containers[0].resources.limits.tessera.io/gpu-milli: "
            "'1500' is more than a whole GPU (1000)");
  EXPECT_THAT(PodError({{"limits", {{"tessera.io/gpu-milli", "500m"}}}}),
              HasSubstr("'500m' must be a whole number"));
  EXPECT_THAT(PodError({{"limits", {{"tessera.io/gpu-milli", "-250"}}}}),
              HasSubstr("limits.tessera.io/gpu-milli: '-250' must not be "
                        "negative"));
  EXPECT_THAT(PodError({{"requests", {{"cpu", "lots"}}}}),
              HasSubstr("Pod.spec.containers[0].resources.requests.cpu: "
                        "'lots' is not a quantity"));
  EXPECT_THAT(
      PodError({{"limits", {{"tessera.io/gpu-milli", json::object()}}}}),
      HasSubstr("must be a quantity string"));
  EXPECT_THAT(PodError({{"limits", {{"tessera.io/gpu-memory-mib", "8Gi"}}}}),
              HasSubstr("is more than any GPU's memory"));
  EXPECT_THAT(PodError({{"limits", {{"tessera.io/gpu-memory-mib", "4096"}}}}),
              HasSubstr("needs tessera.io/gpu-milli too"));
  EXPECT_THAT(
      PodError({{"limits",
                 {{"nvidia.com/gpu", "1"}, {"tessera.io/gpu-milli", "100"}}}}),
      HasSubstr("cannot be combined"));
  EXPECT_THAT(PodError({{"limits", {{"tessera.io/gpu-milli", "100"}}},
                        {"requests", {{"tessera.io/gpu-milli", "200"}}}}),
              HasSubstr("differs from the limit"));
  EXPECT_THAT(PodError({{"limits", "250"}}),
              HasSubstr("resources.limits: must be an object"));
  EXPECT_THAT(PodError(json::array()),
              HasSubstr("Pod.spec.containers[0].resources: must be an object"));
}

TEST(K8sPod, ContainersShareOneGpuFraction) {
  json pod = PodFixture("pod_fraction.json");
  for (json& c : pod["spec"]["containers"]) {
    c["resources"] = {{"limits", {{"tessera.io/gpu-milli", "600"}}}};
  }
  Result<K8sPod> parsed = ParseK8sPod(pod, "Pod");
  ASSERT_FALSE(parsed);
  EXPECT_THAT(parsed.error().message,
              HasSubstr("Pod.spec.containers: tessera.io/gpu-milli adds up to "
                        "1200"));
}

TEST(K8sPod, RefusesAPodWithoutItsParts) {
  auto error = [](json pod) {
    Result<K8sPod> p = ParseK8sPod(pod, "Pod");
    return p ? "" : p.error().message;
  };
  json pod = PodFixture("pod_fraction.json");
  EXPECT_THAT(error(json::array()), HasSubstr("Pod: must be a v1 Pod object"));
  json no_name = pod;
  no_name["metadata"].erase("name");
  EXPECT_EQ(error(no_name), "Pod.metadata.name: missing");
  json no_spec = pod;
  no_spec.erase("spec");
  EXPECT_THAT(error(no_spec), HasSubstr("Pod.spec: missing"));
  json no_containers = pod;
  no_containers["spec"]["containers"] = json::array();
  EXPECT_THAT(error(no_containers), HasSubstr("Pod.spec.containers: empty"));
  json bad_uid = pod;
  bad_uid["metadata"]["uid"] = 7;
  EXPECT_EQ(error(bad_uid), "Pod.metadata.uid: must be a string");
}

TEST(K8sExtenderArgs, ReadsNodeNamesAndNodeLists) {
  Result<K8sExtenderArgs> names =
      ParseExtenderArgs(PodFixture("filter_args_names.json"));
  ASSERT_TRUE(names) << names.error().message;
  EXPECT_TRUE(names->has_node_names);
  EXPECT_TRUE(names->node_list.is_null());
  EXPECT_THAT(names->nodes, ElementsAre("node0", "node1", "cpu-only"));
  Result<K8sExtenderArgs> list =
      ParseExtenderArgs(PodFixture("filter_args_nodes.json"));
  ASSERT_TRUE(list) << list.error().message;
  EXPECT_FALSE(list->has_node_names);
  EXPECT_EQ(list->node_list["kind"], "NodeList");
  EXPECT_THAT(list->nodes, ElementsAre("node0", "node1", "cpu-only"));
  EXPECT_EQ(list->pod.demand.gpu_milli, 250);
}

TEST(K8sExtenderArgs, MatchesKeysAsGoDoes) {
  const json args = PodFixture("filter_args_names.json");
  json lower = {{"pod", args["Pod"]}, {"nodenames", {"node0"}}};
  Result<K8sExtenderArgs> parsed = ParseExtenderArgs(lower);
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_THAT(parsed->nodes, ElementsAre("node0"));
}

TEST(K8sExtenderArgs, RefusesMalformedArgsNamingTheField) {
  auto error = [](const json& j) {
    Result<K8sExtenderArgs> a = ParseExtenderArgs(j);
    return a ? "" : a.error().message;
  };
  const json args = PodFixture("filter_args_names.json");
  EXPECT_THAT(error(json::array()), HasSubstr("ExtenderArgs: must be a JSON "
                                              "object"));
  EXPECT_EQ(error({{"NodeNames", {"node0"}}}),
            "Pod: missing (the pod to place)");
  EXPECT_THAT(error({{"Pod", args["Pod"]}}),
              HasSubstr("neither Nodes nor NodeNames"));
  EXPECT_THAT(error({{"Pod", args["Pod"]}, {"NodeNames", "node0"}}),
              HasSubstr("NodeNames: must be a list"));
  EXPECT_EQ(error({{"Pod", args["Pod"]}, {"NodeNames", {"node0", 3}}}),
            "NodeNames[1]: must be a string");
  EXPECT_THAT(
      error({{"Pod", args["Pod"]}, {"Nodes", {{"items", {{{"a", 1}}}}}}}),
      HasSubstr("Nodes.items[0].metadata: missing"));
  EXPECT_THAT(error({{"Pod", "notebook-0"}, {"NodeNames", {"node0"}}}),
              HasSubstr("Pod: must be a v1 Pod object"));
}

TEST(K8sBindingArgs, ReadsTheUpstreamShape) {
  Result<K8sBindingArgs> args =
      ParseBindingArgs(PodFixture("bind_args.json"), true);
  ASSERT_TRUE(args) << args.error().message;
  EXPECT_EQ(args->pod.name, "notebook-0");
  EXPECT_EQ(args->pod.ns, "ml");
  EXPECT_EQ(args->pod.uid, "6f1c2a9e-3b7d-4c55-9a0e-1d2f3a4b5c6d");
  EXPECT_EQ(args->node, "node0");
  EXPECT_EQ(args->pod.Key(), args->pod.uid);
}

TEST(K8sBindingArgs, RefusesMalformedArgs) {
  auto error = [](const json& j, bool node) {
    Result<K8sBindingArgs> a = ParseBindingArgs(j, node);
    return a ? "" : a.error().message;
  };
  EXPECT_EQ(error({{"PodNamespace", "ml"}, {"Node", "node0"}}, true),
            "PodName: missing");
  EXPECT_EQ(error({{"PodName", "p"}, {"PodNamespace", "ml"}}, true),
            "Node: missing");
  EXPECT_EQ(error({{"PodName", "p"}, {"Node", 3}}, true),
            "Node: must be a string, got number");
  EXPECT_THAT(error({{"PodName", "../../nodes/x"}, {"Node", "node0"}}, true),
              HasSubstr("is not a Kubernetes object name"));
  EXPECT_THAT(error("bind", true), HasSubstr("must be a JSON object"));
  EXPECT_EQ(error({{"PodName", "p"}}, false), "");
}

TEST(K8sBinding, IsAV1BindingWithTheDecision) {
  const json b = BindingJson({"notebook-0", "ml", "uid-1"}, "node0",
                             {{"tessera.io/gpu-index", "1"}});
  EXPECT_EQ(b, json::parse(R"({
    "apiVersion": "v1", "kind": "Binding",
    "metadata": {"name": "notebook-0", "namespace": "ml", "uid": "uid-1",
                 "annotations": {"tessera.io/gpu-index": "1"}},
    "target": {"apiVersion": "v1", "kind": "Node", "name": "node0"}})"));
}

}  // namespace
}  // namespace tessera::k8s
