// The Kubernetes extender over a real Service: filter passes only nodes
// with room, prioritize ranks as the scorer does, bind reserves exactly one
// GPU share, records it durably (a restart keeps it) and posts the Binding
// to the API server (a fake here), release frees it; malformed requests are
// 4xx, never a crash. The queue and the pods share the cluster's GPUs.
// The serve config's k8s settings and the API client: k8s_config_test.cc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <vector>

#include "common/json_depth.h"
#include "k8s/k8s_extender.h"
#include "scheduler/admission.h"
#include "tests/testlib/idle_launcher.h"
#include "tests/testlib/onnx_model_builder.h"
#include "tests/testlib/repo_paths.h"

namespace tessera::k8s {
namespace {

using nlohmann::json;
using scheduler::ClusterState;
using scheduler::JobRequest;
using scheduler::MakeScorer;
using service::JobFilter;
using service::ServiceOptions;
using service::User;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;

constexpr const char* kUid = "6f1c2a9e-3b7d-4c55-9a0e-1d2f3a4b5c6d";

json Fixture(const std::string& name) {
  std::ifstream in(std::string(TESSERA_SOURCE_DIR) + "/tests/data/k8s/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return json::parse(s.str());
}

// Pool a: node0 with two A100s, node1 with one; pool b: t4-node.
Topology Cluster() {
  Topology t;
  t.pools = {"a", "b"};
  t.nodes.push_back({"node0", "a", 64000, 256 * 1024, {0, 1}, false});
  t.nodes.push_back({"node1", "a", 64000, 256 * 1024, {2}, false});
  t.nodes.push_back({"t4-node", "b", 32000, 128 * 1024, {3}, false});
  t.gpus.push_back({"node0/gpu0", 0, 0, "a100-80gb", 81920});
  t.gpus.push_back({"node0/gpu1", 0, 1, "a100-80gb", 81920});
  t.gpus.push_back({"node1/gpu0", 1, 0, "a100-80gb", 81920});
  t.gpus.push_back({"t4-node/gpu0", 2, 0, "t4", 16384});
  return t;
}

// The API server: records the requests, answers as told.
class FakeApi : public K8sApiClient {
 public:
  struct Call {
    std::string method, path;
    json body;
  };
  Result<K8sApiReply> Send(const std::string& method, const std::string& path,
                           const std::string& body) override {
    calls.push_back({method, path, json::parse(body, nullptr, false)});
    if (down)
      return Unavailable("cannot reach the API server: connection refused");
    return answer(calls.back());
  }
  std::vector<Call> calls;
  bool down = false;
  std::function<K8sApiReply(const Call&)> answer = [](const Call&) {
    return K8sApiReply{201, R"({"kind":"Status","status":"Success"})"};
  };
};

class K8sExtenderTest : public ::testing::Test {
 protected:
  void Make(const std::string& scorer = "best-fit", bool api = false,
            const std::string& pool = "") {
    extender_.reset();
    service_.reset();
    ServiceOptions o;
    o.topology = cluster_;
    o.scorer = scorer;
    o.db_path = dir_.File("k8s.db");
    o.log_dir = dir_.File("logs");
    o.start_thread = false;
    o.clock = [this] { return now_; };
    auto s =
        Service::Start(std::move(o), std::make_unique<testlib::IdleLauncher>());
    ASSERT_TRUE(s) << s.error().message;
    service_ = std::move(s).value();
    std::unique_ptr<FakeApi> fake;
    api_ = nullptr;
    if (api) {
      fake = std::make_unique<FakeApi>();
      api_ = fake.get();
    }
    K8sConfig config;
    config.pool = pool;
    extender_ =
        std::make_unique<K8sExtender>(*service_, config, std::move(fake));
  }

  // ExtenderArgs for a pod asking `milli` and `mib` of one GPU.
  static json Args(const std::string& name, const std::string& uid, int milli,
                   int64_t mib, std::vector<std::string> nodes) {
    json args = Fixture("filter_args_names.json");
    json& pod = args["Pod"];
    pod["metadata"]["name"] = name;
    pod["metadata"]["uid"] = uid;
    pod["spec"]["containers"][0]["resources"] = {
        {"limits",
         {{"tessera.io/gpu-milli", std::to_string(milli)},
          {"tessera.io/gpu-memory-mib", std::to_string(mib)}}}};
    args["NodeNames"] = nodes;
    return args;
  }
  static json BindArgs(const std::string& name, const std::string& uid,
                       const std::string& node) {
    return {{"PodName", name},
            {"PodNamespace", "ml"},
            {"PodUID", uid},
            {"Node", node}};
  }
  // Filters and binds a pod; returns bind's Error.
  std::string Place(const std::string& name, const std::string& uid, int milli,
                    int64_t mib, const std::string& node) {
    const K8sReply f =
        extender_->Filter(Args(name, uid, milli, mib, {node}).dump());
    EXPECT_EQ(f.status, 200);
    const K8sReply b = extender_->Bind(BindArgs(name, uid, node).dump());
    EXPECT_EQ(b.status, 200) << b.body.dump();
    return b.body.value("Error", "<none>");
  }
  // Reserved milli per GPU id.
  std::map<std::string, int> Reserved() {
    std::map<std::string, int> out;
    const json cluster = service_->ClusterJson();
    for (const json& g : cluster["gpus"]) {
      out[g["id"].get<std::string>()] = g["reserved_milli"].get<int>();
    }
    return out;
  }
  std::vector<Job> PodJobs() {
    JobFilter filter;
    filter.user = "k8s:ml";
    auto jobs = service_->List(filter);
    EXPECT_TRUE(jobs);
    return jobs ? *jobs : std::vector<Job>{};
  }

  testlib::TempDir dir_;
  Topology cluster_ = Cluster();  // what Make serves
  double now_ = 1'700'000'000;
  std::unique_ptr<Service> service_;
  std::unique_ptr<K8sExtender> extender_;
  FakeApi* api_ = nullptr;
};

TEST_F(K8sExtenderTest, FilterPassesOnlyNodesWithRoom) {
  Make();
  K8sReply r = extender_->Filter(Fixture("filter_args_names.json").dump());
  ASSERT_EQ(r.status, 200) << r.body.dump();
  EXPECT_EQ(r.body["NodeNames"], json({"node0", "node1"}));
  EXPECT_TRUE(r.body["Nodes"].is_null());
  EXPECT_EQ(r.body["FailedNodes"], json::object());
  EXPECT_EQ(r.body["FailedAndUnresolvableNodes"],
            json({{"cpu-only", "not a node of tessera's configuration"}}));
  EXPECT_EQ(r.body["Error"], "");
  // node1's only GPU keeps 100 milli free: no room for 250 there now.
  ASSERT_EQ(Place("filler", "uid-filler", 900, 1024, "node1"), "");
  r = extender_->Filter(Fixture("filter_args_names.json").dump());
  EXPECT_EQ(r.body["NodeNames"], json({"node0"}));
  EXPECT_EQ(r.body["FailedNodes"]["node1"],
            "no GPU has 250 milli and 8192 MiB free (the most: node1/gpu0 "
            "with 100 milli and 80896 MiB)");
}

TEST_F(K8sExtenderTest, FilterAnswersANodeListWithTheNodeObjects) {
  Make();
  const json args = Fixture("filter_args_nodes.json");
  const K8sReply r = extender_->Filter(args.dump());
  ASSERT_EQ(r.status, 200) << r.body.dump();
  EXPECT_TRUE(r.body["NodeNames"].is_null());
  const json& items = r.body["Nodes"]["items"];
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0], args["Nodes"]["items"][0]);  // untouched
  EXPECT_EQ(items[1]["metadata"]["name"], "node1");
  EXPECT_EQ(r.body["Nodes"]["kind"], "NodeList");
  EXPECT_TRUE(r.body["FailedAndUnresolvableNodes"].contains("cpu-only"));
}

TEST_F(K8sExtenderTest, FractionsAvoidMpsNodesWhoseDevicePluginIsNotMps) {
  // node0 is isolation mps in the config, but GPU feature discovery says
  // its device plugin time-slices; node1 (mps too) runs MPS.
  cluster_.nodes[0].isolation = scheduler::Isolation::kMps;
  cluster_.nodes[1].isolation = scheduler::Isolation::kMps;
  Make();
  json args = Fixture("filter_args_nodes.json");
  const std::string label(kK8sSharingStrategyLabel);
  json& items = args["Nodes"]["items"];
  items[0]["metadata"]["labels"][label] = "time-slicing";
  items[1]["metadata"]["labels"][label] = "mps";
  K8sReply r = extender_->Filter(args.dump());
  ASSERT_EQ(r.status, 200) << r.body.dump();
  ASSERT_EQ(r.body["Nodes"]["items"].size(), 1u);
  EXPECT_EQ(r.body["Nodes"]["items"][0]["metadata"]["name"], "node1");
  EXPECT_EQ(r.body["FailedAndUnresolvableNodes"]["node0"],
            "isolation: mps in tessera's config, but its label "
            "nvidia.com/gpu.sharing-strategy is 'time-slicing', so NVIDIA's "
            "device plugin does not keep the pods sharing a GPU apart with "
            "MPS: set the device plugin's sharing.mps for the node, or "
            "declare it isolation: none in the config");
  r = extender_->Prioritize(args.dump());
  ASSERT_EQ(r.status, 200) << r.body.dump();
  EXPECT_EQ(r.body[0]["Host"], "node0");
  EXPECT_EQ(r.body[0]["Score"], 0);
  EXPECT_EQ(r.body[1]["Score"], kK8sMaxPriority);
  // A whole GPU shares with nobody: the label does not matter.
  json whole = args;
  whole["Pod"]["spec"]["containers"][0]["resources"] = {
      {"limits", {{"nvidia.com/gpu", "1"}}}};
  r = extender_->Filter(whole.dump());
  EXPECT_EQ(r.body["Nodes"]["items"].size(), 2u) << r.body.dump();
  // Without the label (no GPU feature discovery) nothing says otherwise;
  // and a node of isolation none shares as its config says.
  items[0]["metadata"]["labels"].erase(label);
  items[1]["metadata"]["labels"][label] = "none";
  cluster_.nodes[1].isolation = scheduler::Isolation::kNone;
  Make();
  r = extender_->Filter(args.dump());
  EXPECT_EQ(r.body["Nodes"]["items"].size(), 2u) << r.body.dump();
  // Node names only carry no labels: nothing to check.
  items[0]["metadata"]["labels"][label] = "time-slicing";
  cluster_.nodes[1].isolation = scheduler::Isolation::kMps;
  Make();
  json names = args;
  names.erase("Nodes");
  names["NodeNames"] = {"node0", "node1"};
  r = extender_->Filter(names.dump());
  EXPECT_EQ(r.body["NodeNames"], json({"node0", "node1"})) << r.body.dump();
}

TEST_F(K8sExtenderTest, NodesThatNeverCouldAreUnresolvable) {
  Make("best-fit", false, "a");
  json args = Args("big", "uid-big", 500, 90000, {"node0", "t4-node"});
  K8sReply r = extender_->Filter(args.dump());
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.body["NodeNames"], json::array());
  EXPECT_THAT(r.body["FailedAndUnresolvableNodes"]["node0"].get<std::string>(),
              HasSubstr("could never hold the pod's 500 milli and 90000 MiB "
                        "of one GPU"));
  EXPECT_EQ(r.body["FailedAndUnresolvableNodes"]["t4-node"],
            "in pool 'b'; the extender offers pool 'a' only");
  ASSERT_TRUE(service_->SetDrained("node1", true));
  r = extender_->Filter(
      Args("p", "uid-p", 100, 100, {"node0", "node1"}).dump());
  EXPECT_EQ(r.body["NodeNames"], json({"node0"}));
  EXPECT_EQ(r.body["FailedAndUnresolvableNodes"]["node1"],
            "drained in tessera");
}

TEST_F(K8sExtenderTest, PrioritizeRanksAsTheScorerDoes) {
  for (const std::string scorer : {"best-fit", "worst-fit", "tessera"}) {
    Make(scorer, false, "a");
    ASSERT_EQ(Place("filler", "uid-filler", 500, 20000, "node1"), "");
    const K8sReply r =
        extender_->Prioritize(Fixture("prioritize_args.json").dump());
    ASSERT_EQ(r.status, 200) << r.body.dump();
    ASSERT_EQ(r.body.size(), 4u);
    std::map<std::string, int> score;
    for (const json& h : r.body) {
      ASSERT_TRUE(h["Score"].is_number_integer());
      score[h["Host"].get<std::string>()] = h["Score"].get<int>();
      EXPECT_GE(h["Score"].get<int>(), 0);
      EXPECT_LE(h["Score"].get<int>(), kK8sMaxPriority);
    }
    EXPECT_EQ(r.body[0]["Host"], "node0");  // the order asked
    EXPECT_EQ(score["cpu-only"], 0) << scorer;
    EXPECT_EQ(score["t4-node"], 0) << scorer;  // pool b
    // What FindAllocation picks in pool a on the same state scores 10.
    ClusterState state(Cluster());
    const Job filler = PodJobs().at(0);
    ASSERT_TRUE(state.Reserve(filler.id, filler.allocation).ok());
    auto s = MakeScorer(scorer);
    ASSERT_TRUE(s);
    const std::optional<Allocation> best =
        FindAllocation(state, "a", Resources{0, 250, 8192, 2000, 8256}, **s);
    ASSERT_TRUE(best);
    const std::string best_node = best->node == 0 ? "node0" : "node1";
    const std::string other = best->node == 0 ? "node1" : "node0";
    EXPECT_EQ(score[best_node], kK8sMaxPriority) << scorer;
    EXPECT_LT(score[other], kK8sMaxPriority) << scorer;
    EXPECT_GE(score[other], 1) << scorer;
    if (scorer == "best-fit") {
      EXPECT_EQ(best_node, "node1");
    }
    if (scorer == "worst-fit") {
      EXPECT_EQ(best_node, "node0");
    }
  }
}

TEST_F(K8sExtenderTest, BindReservesOneGpuShareAndRecordsIt) {
  Make();
  ASSERT_EQ(extender_->Filter(Fixture("filter_args_names.json").dump()).status,
            200);
  const K8sReply r = extender_->Bind(Fixture("bind_args.json").dump());
  ASSERT_EQ(r.status, 200) << r.body.dump();
  EXPECT_EQ(r.body, json({{"Error", ""}}));
  const std::map<std::string, int> reserved = Reserved();
  EXPECT_EQ(reserved.at("node0/gpu0") + reserved.at("node0/gpu1"), 250);
  EXPECT_TRUE(reserved.at("node0/gpu0") == 0 || reserved.at("node0/gpu1") == 0);
  EXPECT_EQ(reserved.at("node1/gpu0"), 0);
  const std::vector<Job> jobs = PodJobs();
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].request.name, "ml/notebook-0");
  EXPECT_EQ(jobs[0].state, JobState::kRunning);
  EXPECT_EQ(jobs[0].demand, (Resources{0, 250, 8192, 2000, 8256}));
  EXPECT_EQ(jobs[0].request.env.at("TESSERA_K8S_POD_UID"), kUid);
  ASSERT_EQ(jobs[0].allocation.gpus.size(), 1u);
  EXPECT_EQ(jobs[0].allocation.gpus[0].milli, 250);
  EXPECT_EQ(jobs[0].allocation.gpus[0].memory_mib, 8192);
  EXPECT_EQ(service_->CheckInvariants(), "");
}

TEST_F(K8sExtenderTest, BindingTheSamePodAgainChangesNothing) {
  Make();
  ASSERT_EQ(Place("notebook-0", kUid, 250, 8192, "node0"), "");
  const K8sReply again = extender_->Bind(Fixture("bind_args.json").dump());
  EXPECT_EQ(again.body, json({{"Error", ""}}));
  EXPECT_EQ(PodJobs().size(), 1u);
  json elsewhere = Fixture("bind_args.json");
  elsewhere["Node"] = "node1";
  const K8sReply moved = extender_->Bind(elsewhere.dump());
  EXPECT_EQ(moved.status, 200);
  EXPECT_THAT(moved.body["Error"].get<std::string>(),
              HasSubstr("already bound to node 'node0'"));
  std::map<std::string, int> reserved = Reserved();
  EXPECT_EQ(reserved.at("node0/gpu0") + reserved.at("node0/gpu1"), 250);
  EXPECT_EQ(reserved.at("node1/gpu0"), 0);
}

TEST_F(K8sExtenderTest, CancellingAPodsJobReleasesItsShare) {
  Make();
  ASSERT_EQ(Place("notebook-0", kUid, 250, 8192, "node1"), "");
  std::vector<Job> jobs = PodJobs();
  ASSERT_EQ(jobs.size(), 1u);
  const Result<Job> cancelled = service_->Cancel(jobs[0].id, "by alice");
  ASSERT_TRUE(cancelled.has_value()) << cancelled.error().message;
  EXPECT_EQ(cancelled->state, JobState::kCancelled);
  EXPECT_EQ(cancelled->reason, "by alice");
  EXPECT_EQ(Reserved().at("node1/gpu0"), 0);
  EXPECT_EQ(service_->CheckInvariants(), "");
  jobs = PodJobs();
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].state, JobState::kCancelled);
  Make();  // cancelled stays cancelled
  EXPECT_EQ(Reserved().at("node1/gpu0"), 0);
}

TEST_F(K8sExtenderTest, AReservationSurvivesARestartUntilReleased) {
  Make();
  ASSERT_EQ(Place("notebook-0", kUid, 250, 8192, "node1"), "");
  Make();  // the same database
  EXPECT_EQ(Reserved().at("node1/gpu0"), 250);
  EXPECT_EQ(service_->CheckInvariants(), "");
  // kube-scheduler retrying the bind after the restart: still bound.
  json bind = Fixture("bind_args.json");
  bind["Node"] = "node1";
  EXPECT_EQ(extender_->Bind(bind.dump()).body, json({{"Error", ""}}));
  EXPECT_EQ(PodJobs().size(), 1u);
  const json release = {
      {"PodName", "notebook-0"}, {"PodNamespace", "ml"}, {"PodUID", kUid}};
  K8sReply r = extender_->Release(release.dump());
  ASSERT_EQ(r.status, 200) << r.body.dump();
  EXPECT_EQ(r.body["Error"], "");
  EXPECT_EQ(Reserved().at("node1/gpu0"), 0);
  const std::vector<Job> jobs = PodJobs();
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].state, JobState::kCancelled);
  EXPECT_THAT(jobs[0].reason, HasSubstr("released"));
  r = extender_->Release(release.dump());
  EXPECT_EQ(r.status, 404);
  EXPECT_THAT(r.body["error"].get<std::string>(),
              HasSubstr("holds no reservation"));
  Make();  // released stays released
  EXPECT_EQ(Reserved().at("node1/gpu0"), 0);
}

TEST_F(K8sExtenderTest, BindPostsTheBindingWithTheDecision) {
  Make("best-fit", /*api=*/true);
  ASSERT_EQ(Place("notebook-0", kUid, 250, 8192, "node1"), "");
  ASSERT_EQ(api_->calls.size(), 1u);
  const FakeApi::Call& call = api_->calls[0];
  EXPECT_EQ(call.method, "POST");
  EXPECT_EQ(call.path, "/api/v1/namespaces/ml/pods/notebook-0/binding");
  const JobId id = PodJobs().at(0).id;
  json expected = json::parse(R"({
    "apiVersion": "v1", "kind": "Binding",
    "metadata": {"name": "notebook-0", "namespace": "ml",
                 "uid": "6f1c2a9e-3b7d-4c55-9a0e-1d2f3a4b5c6d",
                 "annotations": {
                   "tessera.io/node": "node1",
                   "tessera.io/gpu-index": "0",
                   "tessera.io/gpu-milli": "250",
                   "tessera.io/gpu-memory-mib": "8192",
                   "tessera.io/cuda-mps-active-thread-percentage": "25",
                   "tessera.io/cuda-mps-pinned-device-mem-limit": "0=8192M",
                   "tessera.io/assume-time": "1700000000000000000",
                   "tessera.io/assigned": "false"}},
    "target": {"apiVersion": "v1", "kind": "Node", "name": "node1"}})");
  expected["metadata"]["annotations"]["tessera.io/job-id"] = std::to_string(id);
  EXPECT_EQ(call.body, expected);
  // A retry whose first Binding got through: the API server says 409.
  api_->answer = [](const FakeApi::Call&) {
    return K8sApiReply{409,
                       R"({"kind":"Status","message":"already assigned"})"};
  };
  json bind = Fixture("bind_args.json");
  bind["Node"] = "node1";
  EXPECT_EQ(extender_->Bind(bind.dump()).body, json({{"Error", ""}}));
  EXPECT_EQ(Reserved().at("node1/gpu0"), 250);
}

TEST_F(K8sExtenderTest, ARefusedBindingFreesTheShare) {
  Make("best-fit", /*api=*/true);
  api_->answer = [](const FakeApi::Call&) {
    return K8sApiReply{
        403,
        R"({"kind":"Status","status":"Failure","message":"pods \"notebook-0\" is forbidden","code":403})"};
  };
  const std::string error = Place("notebook-0", kUid, 250, 8192, "node1");
  EXPECT_EQ(error,
            "the API server refused the binding (403): pods \"notebook-0\" is "
            "forbidden");
  EXPECT_EQ(Reserved().at("node1/gpu0"), 0);
  std::vector<Job> jobs = PodJobs();
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].state, JobState::kFailed);
  EXPECT_THAT(jobs[0].reason, HasSubstr("forbidden"));
  api_->down = true;
  EXPECT_THAT(Place("notebook-0", kUid, 250, 8192, "node1"),
              HasSubstr("cannot reach the API server"));
  EXPECT_EQ(Reserved().at("node1/gpu0"), 0);
  EXPECT_EQ(service_->CheckInvariants(), "");
}

TEST_F(K8sExtenderTest, BindFetchesAPodItNeverFiltered) {
  Make("best-fit", /*api=*/false);
  K8sReply r = extender_->Bind(Fixture("bind_args.json").dump());
  EXPECT_EQ(r.status, 404);
  EXPECT_THAT(r.body["Error"].get<std::string>(),
              HasSubstr("was not seen by filter or prioritize"));
  Make("best-fit", /*api=*/true);
  api_->answer = [](const FakeApi::Call& c) {
    if (c.method == "GET") {
      return K8sApiReply{200, Fixture("pod_fraction.json").dump()};
    }
    return K8sApiReply{201, "{}"};
  };
  r = extender_->Bind(Fixture("bind_args.json").dump());
  ASSERT_EQ(r.status, 200) << r.body.dump();
  EXPECT_EQ(r.body["Error"], "");
  ASSERT_EQ(api_->calls.size(), 2u);
  EXPECT_EQ(api_->calls[0].method, "GET");
  EXPECT_EQ(api_->calls[0].path, "/api/v1/namespaces/ml/pods/notebook-0");
  EXPECT_EQ(api_->calls[1].method, "POST");
  // A pod replaced at the API server (another UID) is not bound.
  json other = Fixture("bind_args.json");
  other["PodName"] = "notebook-1";
  other["PodUID"] = "another-uid";
  r = extender_->Bind(other.dump());
  EXPECT_EQ(r.status, 404);
  EXPECT_THAT(r.body["Error"].get<std::string>(), HasSubstr("was replaced"));
}

TEST_F(K8sExtenderTest, RefusalsAreErrorsInTheResult) {
  Make();
  ASSERT_EQ(Place("filler", "uid-filler", 900, 1024, "node1"), "");
  EXPECT_THAT(Place("notebook-0", kUid, 250, 8192, "node1"),
              HasSubstr("node 'node1' has no room for pod ml/notebook-0 now: "
                        "no GPU has 250 milli"));
  extender_->Filter(Fixture("filter_args_names.json").dump());
  json bind = Fixture("bind_args.json");
  bind["Node"] = "node9";
  const K8sReply r = extender_->Bind(bind.dump());
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.body["error"],
            "Node: 'node9' is not a node of tessera's configuration");
}

TEST_F(K8sExtenderTest, ANewPodOfTheSameNameReplacesTheOldOne) {
  Make();
  ASSERT_EQ(Place("notebook-0", "uid-old", 600, 1024, "node1"), "");
  ASSERT_EQ(Place("notebook-0", "uid-new", 600, 1024, "node1"), "");
  EXPECT_EQ(Reserved().at("node1/gpu0"), 600);
  std::vector<Job> jobs = PodJobs();  // newest first
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].state, JobState::kRunning);
  EXPECT_EQ(jobs[1].state, JobState::kCancelled);
  EXPECT_THAT(jobs[1].reason, HasSubstr("uid-new"));
}

TEST_F(K8sExtenderTest, PodsWithoutTesseraResourcesAreLeftAlone) {
  Make();
  const json args = Fixture("filter_args_cpu_pod.json");
  K8sReply r = extender_->Filter(args.dump());
  EXPECT_EQ(r.body["NodeNames"], json({"node0", "cpu-only"}));
  r = extender_->Prioritize(args.dump());
  EXPECT_EQ(r.body, json::parse(R"([{"Host":"node0","Score":0},
                                     {"Host":"cpu-only","Score":0}])"));
  const json bind =
      BindArgs("web-0", "0a1b2c3d-0000-4000-8000-000000000002", "cpu-only");
  r = extender_->Bind(bind.dump());
  EXPECT_EQ(r.status, 200);
  EXPECT_THAT(r.body["Error"].get<std::string>(),
              HasSubstr("asks for no tessera resource"));
  Make("best-fit", /*api=*/true);
  extender_->Filter(args.dump());
  r = extender_->Bind(bind.dump());
  EXPECT_EQ(r.body["Error"], "");
  ASSERT_EQ(api_->calls.size(), 1u);
  EXPECT_FALSE(api_->calls[0].body["metadata"].contains("annotations"));
  EXPECT_TRUE(PodJobs().empty());
}

TEST_F(K8sExtenderTest, TheQueueAndThePodsShareTheGpus) {
  Make();
  ASSERT_EQ(Place("notebook-0", kUid, 600, 1024, "node1"), "");
  JobRequest job;
  job.name = "queued";
  job.pool = "a";
  job.command = {"true"};
  job.resources = Resources{0, 600, 1024, 0, 0};
  const User alice{"alice", "", false, ""};
  ASSERT_TRUE(service_->Submit(alice, job));
  ASSERT_TRUE(service_->Submit(alice, job));
  ASSERT_TRUE(service_->Submit(alice, job));
  service_->Tick();
  // node0's two GPUs take two queued jobs; node1's 400 milli take none.
  const std::map<std::string, int> reserved = Reserved();
  EXPECT_EQ(reserved.at("node0/gpu0"), 600);
  EXPECT_EQ(reserved.at("node0/gpu1"), 600);
  EXPECT_EQ(reserved.at("node1/gpu0"), 600);
  EXPECT_EQ(service_->CheckInvariants(), "");
  const json release = {{"PodName", "notebook-0"}, {"PodNamespace", "ml"}};
  ASSERT_EQ(extender_->Release(release.dump()).status, 200);
  service_->Tick();
  EXPECT_EQ(Reserved().at("node1/gpu0"), 600);  // the third queued job
  EXPECT_EQ(service_->CheckInvariants(), "");
}

TEST_F(K8sExtenderTest, ResyncFreesPodsTheApiServerSaysAreGone) {
  Make("best-fit", /*api=*/true);
  EXPECT_EQ(extender_->Resync(), 0);  // nothing bound: nothing asked
  EXPECT_TRUE(api_->calls.empty());
  const std::vector<std::string> pods = {"gone",  "done",  "failed",
                                         "other", "alive", "flaky"};
  for (const std::string& pod : pods) {
    ASSERT_EQ(Place(pod, "uid-" + pod, 100, 1024, "node0"), "");
  }
  EXPECT_EQ(Reserved().at("node0/gpu0") + Reserved().at("node0/gpu1"), 600);
  api_->calls.clear();
  api_->answer = [](const FakeApi::Call& c) {
    const std::string pod = c.path.substr(c.path.rfind('/') + 1);
    auto running = [&](const std::string& uid, const std::string& phase) {
      return K8sApiReply{200, json({{"kind", "Pod"},
                                    {"metadata", {{"name", pod}, {"uid", uid}}},
                                    {"status", {{"phase", phase}}}})
                                  .dump()};
    };
    if (pod == "gone") {
      return K8sApiReply{404,
                         R"({"kind":"Status","reason":"NotFound","code":404})"};
    }
    if (pod == "done") return running("uid-done", "Succeeded");
    if (pod == "failed") return running("uid-failed", "Failed");
    if (pod == "other") return running("uid-someone-else", "Pending");
    if (pod == "alive") return running("uid-alive", "Running");
    return K8sApiReply{500, "not json"};
  };
  EXPECT_EQ(extender_->Resync(), 4);
  EXPECT_EQ(api_->calls.size(), pods.size());
  for (const FakeApi::Call& c : api_->calls) EXPECT_EQ(c.method, "GET");
  std::map<std::string, Job> jobs;
  for (const Job& j : PodJobs()) jobs[j.request.name] = j;
  EXPECT_EQ(jobs.at("ml/gone").state, JobState::kCancelled);
  EXPECT_THAT(jobs.at("ml/gone").reason, HasSubstr("deleted"));
  EXPECT_EQ(jobs.at("ml/done").state, JobState::kSucceeded);
  EXPECT_EQ(jobs.at("ml/failed").state, JobState::kFailed);
  EXPECT_EQ(jobs.at("ml/other").state, JobState::kCancelled);
  EXPECT_THAT(jobs.at("ml/other").reason, HasSubstr("uid-someone-else"));
  EXPECT_EQ(jobs.at("ml/alive").state, JobState::kRunning);
  EXPECT_EQ(jobs.at("ml/flaky").state, JobState::kRunning);
  EXPECT_EQ(Reserved().at("node0/gpu0") + Reserved().at("node0/gpu1"), 200);
  EXPECT_EQ(service_->CheckInvariants(), "");
  // The API server unreachable: nothing is freed.
  api_->down = true;
  api_->calls.clear();
  EXPECT_EQ(extender_->Resync(), 0);
  EXPECT_EQ(api_->calls.size(), 1u);  // the round stops at the first error
  EXPECT_EQ(Reserved().at("node0/gpu0") + Reserved().at("node0/gpu1"), 200);
  // Without an API server there is nothing to ask.
  Make();
  EXPECT_EQ(extender_->Resync(), 0);
  EXPECT_EQ(Reserved().at("node0/gpu0") + Reserved().at("node0/gpu1"), 200);
}

// Every value of `j`, each replaced in turn by `replacement`.
void Mutations(const json& j, const json& replacement,
               const std::function<void(const json&)>& visit) {
  const json flat = j.flatten();
  for (const auto& [pointer, value] : flat.items()) {
    json copy = j;
    copy[json::json_pointer(pointer)] = replacement;
    visit(copy);
  }
}

TEST_F(K8sExtenderTest, MalformedRequestsAre4xxNeverACrash) {
  Make();
  for (const std::string body :
       {"", "{", "not json", "[]", "null", "42", "\"Pod\"", "{\"Pod\": 1}",
        "{\"Pod\": {}, \"NodeNames\": []}"}) {
    for (auto handler : {&K8sExtender::Filter, &K8sExtender::Prioritize,
                         &K8sExtender::Bind, &K8sExtender::Release}) {
      const K8sReply r = ((*extender_).*handler)(body);
      EXPECT_EQ(r.status, 400) << body;
      EXPECT_TRUE(r.body["Error"].is_string()) << body;
      EXPECT_EQ(r.body["Error"], r.body["error"]);
    }
  }
  EXPECT_THAT(extender_->Filter("{").body["Error"].get<std::string>(),
              HasSubstr("malformed JSON"));
  // Any value of the fixtures replaced by a value of another type or sign:
  // a 200 or a 4xx, and the cluster's invariants hold.
  const json replacements[] = {
      nullptr, -1, "x", json::array(), json::object(), true, "-5", "1e30", 1.5};
  int answered = 0;
  for (const json& with : replacements) {
    Mutations(Fixture("filter_args_names.json"), with, [&](const json& args) {
      for (auto handler : {&K8sExtender::Filter, &K8sExtender::Prioritize}) {
        const K8sReply r = ((*extender_).*handler)(args.dump());
        EXPECT_TRUE(r.status == 200 || r.status == 400) << r.status;
        ++answered;
      }
    });
    Mutations(Fixture("bind_args.json"), with, [&](const json& args) {
      const K8sReply r = extender_->Bind(args.dump());
      EXPECT_TRUE(r.status == 200 || r.status == 400 || r.status == 404)
          << r.status << " " << args.dump();
      ++answered;
    });
  }
  EXPECT_GT(answered, 300);
  EXPECT_EQ(service_->CheckInvariants(), "");
  const std::string text = Fixture("filter_args_nodes.json").dump();
  for (size_t cut = 0; cut < text.size(); cut += 97) {
    EXPECT_EQ(extender_->Filter(text.substr(0, cut)).status, 400);
  }
}

// A body nested past kMaxJsonDepth is refused before it is parsed: copying
// the Nodes of a filter into its answer recursed once per level, and 1 MiB
// of nesting inside a Node overflowed the stack (found with the k8s_json
// fuzz target's input shape, docs/fuzzing.md).
TEST_F(K8sExtenderTest, DeeplyNestedBodiesAre400NotAStackOverflow) {
  Make();
  const int depth = 500000;
  json args = Fixture("filter_args_nodes.json");
  std::string deep = std::string(depth, '[') + std::string(depth, ']');
  std::string body = args.dump();
  // A label's value nested `depth` deep inside the first Node.
  const std::string at = "\"metadata\":{";
  const size_t pos = body.find(at);
  ASSERT_NE(pos, std::string::npos);
  body.insert(pos + at.size(), "\"deep\":" + deep + ",");
  for (auto handler : {&K8sExtender::Filter, &K8sExtender::Prioritize,
                       &K8sExtender::Bind, &K8sExtender::Release}) {
    const K8sReply r = ((*extender_).*handler)(body);
    EXPECT_EQ(r.status, 400);
    EXPECT_THAT(r.body["Error"].get<std::string>(),
                HasSubstr("nested deeper than 1000 levels"));
  }
  // A body exactly as deep as the limit is read: the label's value sits
  // five levels down (body, Nodes, items, the Node, its metadata).
  const std::string ok =
      std::string(kMaxJsonDepth - 5, '[') + std::string(kMaxJsonDepth - 5, ']');
  body = args.dump();
  body.insert(body.find(at) + at.size(), "\"deep\":" + ok + ",");
  EXPECT_EQ(extender_->Filter(body).status, 200);
}

}  // namespace
}  // namespace tessera::k8s
