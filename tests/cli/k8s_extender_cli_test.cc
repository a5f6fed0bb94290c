// End to end: the real `tessera serve --k8s-extender` on a loopback port
// with a temporary database, called as kube-scheduler calls an extender
// (the JSON fixtures of tests/data/k8s/), binding through a fake API server
// (an httplib server in this test) whose requests are checked exactly; a
// restart keeps the reservation; release needs an admin; malformed bodies
// are 4xx. No Kubernetes runs here: this is the contract, not a cluster.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "tests/cli/cli_runner.h"
#include "tests/cli/serve_process.h"
#include "tests/testlib/repo_paths.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;

constexpr const char* kAlice = "alice-test-token";
constexpr const char* kRoot = "root-test-token";
constexpr const char* kApiToken = "service-account-token";
constexpr const char* kUid = "6f1c2a9e-3b7d-4c55-9a0e-1d2f3a4b5c6d";

std::string Fixture(const std::string& name) {
  return testlib::ReadFile(std::string(TESSERA_SOURCE_DIR) +
                           "/tests/data/k8s/" + name);
}

// The API server's side of a bind: records every request, answers 201 to
// the first Binding of a pod and 409 (already assigned) to the next, and
// serves the fixture's pod.
class FakeApiServer {
 public:
  struct Seen {
    std::string method, path, authorization, content_type, body;
  };
  FakeApiServer() {
    server_.Post(
        R"(/api/v1/namespaces/([^/]+)/pods/([^/]+)/binding)",
        [this](const httplib::Request& req, httplib::Response& res) {
          std::lock_guard lock(mu_);
          Record(req);
          const bool again = bound_.count(req.matches[2].str()) > 0;
          bound_.insert(req.matches[2].str());
          res.status = again ? 409 : 201;
          res.set_content(
              again
                  ? R"({"kind":"Status","status":"Failure","message":"pod is already assigned to node","code":409})"
                  : R"({"kind":"Status","apiVersion":"v1","status":"Success","code":201})",
              "application/json");
        });
    server_.Get(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+))", [this](
                                                                  const httplib::
                                                                      Request&
                                                                          req,
                                                                  httplib::
                                                                      Response&
                                                                          res) {
      std::lock_guard lock(mu_);
      Record(req);
      if (deleted_.count(req.matches[2].str())) {
        res.status = 404;
        res.set_content(
            R"({"kind":"Status","status":"Failure","reason":"NotFound","code":404})",
            "application/json");
        return;
      }
      res.status = 200;
      res.set_content(Fixture("pod_fraction.json"), "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  ~FakeApiServer() {
    server_.stop();
    thread_.join();
  }
  int port() const { return port_; }
  std::vector<Seen> seen() {
    std::lock_guard lock(mu_);
    return seen_;
  }
  // The pod is gone: GET answers 404 from now on.
  void Delete(const std::string& pod) {
    std::lock_guard lock(mu_);
    deleted_.insert(pod);
  }

 private:
  void Record(const httplib::Request& req) {
    seen_.push_back({req.method, req.path,
                     req.get_header_value("Authorization"),
                     req.get_header_value("Content-Type"), req.body});
  }
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::vector<Seen> seen_;
  std::set<std::string> bound_;
  std::set<std::string> deleted_;
};

class K8sExtenderCli : public ::testing::Test {
 protected:
  // `api_port` > 0: bind posts Bindings there (and resyncs every
  // `resync_s` seconds, 0: the default).
  void WriteConfig(int api_port, int resync_s = 0) {
    port_ = testlib::FreeLoopbackPort();
    config_ = dir_.File("serve.yaml");
    std::ofstream(dir_.File("token")) << kApiToken << "\n";
    std::ofstream out(config_);
    out << "listen: 127.0.0.1:" << port_ << "\n"
        << "db: " << dir_.File("k8s.db") << "\n"
        << "log_dir: " << dir_.File("logs") << "\n"
        << "scorer: best-fit\n"
        << "pools:\n  - {name: a, policy: fifo}\n"
        << "nodes:\n"
        << "  - {name: node0, pool: a, cpu_milli: 64000, memory: 256GiB, "
           "gpus: [{kind: a100-80gb, count: 2}]}\n"
        << "  - {name: node1, pool: a, cpu_milli: 64000, memory: 256GiB, "
           "gpus: [{kind: a100-80gb}]}\n"
        << "users:\n"
        << "  - {name: alice, role: user, token_sha256: "
        << testlib::Sha256Hex(kAlice) << "}\n"
        << "  - {name: root, role: admin, token_sha256: "
        << testlib::Sha256Hex(kRoot) << "}\n";
    if (api_port > 0) {
      out << "k8s:\n  api_server: http://127.0.0.1:" << api_port << "\n"
          << "  token_file: " << dir_.File("token") << "\n";
      if (resync_s > 0) out << "  resync_s: " << resync_s << "\n";
    }
  }
  void TearDown() override { StopServer(); }

  void StartServer(bool k8s_extender = true) {
    const std::string error =
        serve_.Start(config_, port_, dir_.File("serve.log"),
                     k8s_extender ? std::vector<std::string>{"--k8s-extender"}
                                  : std::vector<std::string>{});
    if (!error.empty()) FAIL() << error;
  }
  void StopServer() { serve_.Stop(SIGTERM); }
  // POST as kube-scheduler does: JSON, no token.
  httplib::Result Post(const std::string& path, const std::string& body,
                       const httplib::Headers& headers = {}) {
    httplib::Client c("127.0.0.1", port_);
    return c.Post(path.c_str(), headers, body, "application/json");
  }
  Json Get(const std::string& path) {
    httplib::Client c("127.0.0.1", port_);
    auto r = c.Get(path.c_str(),
                   {{"Authorization", std::string("Bearer ") + kRoot}});
    EXPECT_TRUE(r && r->status == 200) << path;
    return r ? Json::parse(r->body) : Json();
  }
  // Reserved milli per GPU id.
  std::map<std::string, int> Reserved() {
    std::map<std::string, int> out;
    const Json cluster = Get("/v1/cluster");
    for (const Json& g : cluster["gpus"]) {
      out[g["id"].get<std::string>()] = g["reserved_milli"].get<int>();
    }
    return out;
  }

  testlib::TempDir dir_;
  int port_ = 0;
  std::string config_;
  testlib::ServeProcess serve_;
};

TEST_F(K8sExtenderCli, ServesTheExtenderVerbs) {
  WriteConfig(0);
  StartServer();
  auto filter = Post("/k8s/filter", Fixture("filter_args_names.json"));
  ASSERT_TRUE(filter);
  ASSERT_EQ(filter->status, 200) << filter->body;
  EXPECT_EQ(filter->get_header_value("Content-Type"), "application/json");
  const Json result = Json::parse(filter->body);
  EXPECT_EQ(result["NodeNames"], Json({"node0", "node1"}));
  EXPECT_EQ(result["FailedAndUnresolvableNodes"],
            Json({{"cpu-only", "not a node of tessera's configuration"}}));
  EXPECT_EQ(result["Error"], "");

  auto prioritize = Post("/k8s/prioritize", Fixture("prioritize_args.json"));
  ASSERT_TRUE(prioritize);
  ASSERT_EQ(prioritize->status, 200) << prioritize->body;
  const Json scores = Json::parse(prioritize->body);
  ASSERT_EQ(scores.size(), 4u);
  EXPECT_EQ(scores[0]["Host"], "node0");
  EXPECT_TRUE(scores[0]["Score"].is_number_integer());

  auto bind = Post("/k8s/bind", Fixture("bind_args.json"));
  ASSERT_TRUE(bind);
  ASSERT_EQ(bind->status, 200) << bind->body;
  EXPECT_EQ(Json::parse(bind->body), Json({{"Error", ""}}));
  std::map<std::string, int> reserved = Reserved();
  EXPECT_EQ(reserved["node0/gpu0"] + reserved["node0/gpu1"], 250);
  const Json jobs = Get("/v1/jobs?user=k8s:ml");
  ASSERT_EQ(jobs["jobs"].size(), 1u);
  EXPECT_EQ(jobs["jobs"][0]["name"], "ml/notebook-0");
  EXPECT_EQ(jobs["jobs"][0]["state"], "running");
  EXPECT_EQ(jobs["jobs"][0]["node"], "node0");

  // Release: an admin's call, not kube-scheduler's.
  const std::string release =
      Json(
          {{"PodName", "notebook-0"}, {"PodNamespace", "ml"}, {"PodUID", kUid}})
          .dump();
  auto r = Post("/k8s/release", release);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  r = Post("/k8s/release", release,
           {{"Authorization", std::string("Bearer ") + kAlice}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403);
  r = Post("/k8s/release", release,
           {{"Authorization", std::string("Bearer ") + kRoot}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  reserved = Reserved();
  EXPECT_EQ(reserved["node0/gpu0"] + reserved["node0/gpu1"], 0);
}

TEST_F(K8sExtenderCli, MalformedRequestsAre4xx) {
  WriteConfig(0);
  StartServer();
  for (const std::string path :
       {"/k8s/filter", "/k8s/prioritize", "/k8s/bind"}) {
    for (const std::string body : {"", "{", "[1,2]", "{\"Pod\": 7}"}) {
      auto r = Post(path, body);
      ASSERT_TRUE(r) << path;
      EXPECT_EQ(r->status, 400) << path << " " << body;
      EXPECT_TRUE(Json::parse(r->body)["Error"].is_string()) << r->body;
    }
  }
  Json args = Json::parse(Fixture("filter_args_names.json"));
  args["Pod"]["spec"]["containers"][0]["resources"]["limits"]
      ["tessera.io/gpu-milli"] = "1500";
  args["Pod"]["spec"]["containers"][0]["resources"]["requests"]
      ["tessera.io/gpu-milli"] = "1500";
  auto r = Post("/k8s/filter", args.dump());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(Json::parse(r->body)["error"],
            "Pod.spec.containers[0].resources.limits.tessera.io/gpu-milli: "
            "'1500' is more than a whole GPU (1000)");
  Json bind = Json::parse(Fixture("bind_args.json"));
  bind["Node"] = "node7";
  Post("/k8s/filter", Fixture("filter_args_names.json"));
  r = Post("/k8s/bind", bind.dump());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  // A body over limits.max_body_bytes (1 MiB by default): 413, an Error.
  r = Post("/k8s/filter", std::string(2 << 20, ' '));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  EXPECT_THAT(Json::parse(r->body)["Error"].get<std::string>(),
              HasSubstr("max_body_bytes"));
  // Deeply nested JSON: refused, not a stack overflow.
  r = Post("/k8s/filter", std::string(100000, '[') + std::string(100000, ']'));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  // The service is still up and sound.
  const Json cluster = Get("/v1/cluster");
  EXPECT_EQ(cluster["gpus"].size(), 3u);
}

TEST_F(K8sExtenderCli, WithoutTheFlagThereAreNoK8sRoutes) {
  WriteConfig(0);
  StartServer(/*k8s_extender=*/false);
  auto r = Post("/k8s/filter", Fixture("filter_args_names.json"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  EXPECT_THAT(r->body, HasSubstr("no route POST /k8s/filter"));
}

TEST_F(K8sExtenderCli, BindsThroughTheApiServerAndSurvivesARestart) {
  FakeApiServer api;
  WriteConfig(api.port());
  StartServer();
  auto r = Post("/k8s/filter", Fixture("filter_args_names.json"));
  ASSERT_TRUE(r && r->status == 200);
  r = Post("/k8s/bind", Fixture("bind_args.json"));
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(Json::parse(r->body), Json({{"Error", ""}}));
  std::vector<FakeApiServer::Seen> seen = api.seen();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].method, "POST");
  EXPECT_EQ(seen[0].path, "/api/v1/namespaces/ml/pods/notebook-0/binding");
  EXPECT_EQ(seen[0].authorization, std::string("Bearer ") + kApiToken);
  EXPECT_EQ(seen[0].content_type, "application/json");
  const Json binding = Json::parse(seen[0].body);
  EXPECT_EQ(binding["apiVersion"], "v1");
  EXPECT_EQ(binding["kind"], "Binding");
  EXPECT_EQ(binding["metadata"]["name"], "notebook-0");
  EXPECT_EQ(binding["metadata"]["namespace"], "ml");
  EXPECT_EQ(binding["metadata"]["uid"], kUid);
  EXPECT_EQ(binding["target"],
            Json({{"apiVersion", "v1"}, {"kind", "Node"}, {"name", "node0"}}));
  const Json& notes = binding["metadata"]["annotations"];
  const std::map<std::string, int> reserved = Reserved();
  const std::string gpu = reserved.at("node0/gpu0") == 250 ? "0" : "1";
  EXPECT_EQ(notes["tessera.io/gpu-index"], gpu);
  EXPECT_EQ(notes["tessera.io/node"], "node0");
  EXPECT_EQ(notes["tessera.io/gpu-milli"], "250");
  EXPECT_EQ(notes["tessera.io/gpu-memory-mib"], "8192");
  EXPECT_EQ(notes["tessera.io/cuda-mps-active-thread-percentage"], "25");
  EXPECT_EQ(notes["tessera.io/cuda-mps-pinned-device-mem-limit"], "0=8192M");
  EXPECT_EQ(notes["tessera.io/assigned"], "false");
  const Json jobs = Get("/v1/jobs?user=k8s:ml");
  ASSERT_EQ(jobs["jobs"].size(), 1u);
  EXPECT_EQ(notes["tessera.io/job-id"],
            std::to_string(jobs["jobs"][0]["id"].get<int64_t>()));

  // A restart forgets the filtered pods but not the reservation; the
  // scheduler's retried bind is answered as bound (the API server's 409).
  StopServer();
  StartServer();
  EXPECT_EQ(Reserved()["node0/gpu" + gpu], 250);
  r = Post("/k8s/bind", Fixture("bind_args.json"));
  ASSERT_TRUE(r);
  EXPECT_EQ(Json::parse(r->body), Json({{"Error", ""}})) << r->body;
  EXPECT_EQ(Reserved()["node0/gpu" + gpu], 250);
  seen = api.seen();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[1].path, "/api/v1/namespaces/ml/pods/notebook-0/binding");
}

TEST_F(K8sExtenderCli, ADeletedPodIsReleasedByTheResync) {
  FakeApiServer api;
  WriteConfig(api.port(), /*resync_s=*/1);
  StartServer();
  auto r = Post("/k8s/filter", Fixture("filter_args_names.json"));
  ASSERT_TRUE(r && r->status == 200);
  r = Post("/k8s/bind", Fixture("bind_args.json"));
  ASSERT_TRUE(r);
  ASSERT_EQ(Json::parse(r->body), Json({{"Error", ""}})) << r->body;
  auto held = [&] {
    const std::map<std::string, int> reserved = Reserved();
    return reserved.at("node0/gpu0") + reserved.at("node0/gpu1");
  };
  EXPECT_EQ(held(), 250);
  // Still there (Pending) after a few resyncs: kept.
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  EXPECT_EQ(held(), 250);
  api.Delete("notebook-0");
  for (int i = 0; i < 100 && held() != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(held(), 0);
  const Json jobs = Get("/v1/jobs?user=k8s:ml");
  ASSERT_EQ(jobs["jobs"].size(), 1u);
  EXPECT_EQ(jobs["jobs"][0]["state"], "cancelled");
  EXPECT_THAT(jobs["jobs"][0]["reason"].get<std::string>(),
              HasSubstr("deleted"));
}

TEST_F(K8sExtenderCli, BindFetchesAPodFilteredBeforeARestart) {
  FakeApiServer api;
  WriteConfig(api.port());
  StartServer();
  auto r = Post("/k8s/bind", Fixture("bind_args.json"));  // never filtered
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(Json::parse(r->body), Json({{"Error", ""}}));
  const std::vector<FakeApiServer::Seen> seen = api.seen();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].method, "GET");
  EXPECT_EQ(seen[0].path, "/api/v1/namespaces/ml/pods/notebook-0");
  EXPECT_EQ(seen[0].authorization, std::string("Bearer ") + kApiToken);
  EXPECT_EQ(seen[1].method, "POST");
  const std::map<std::string, int> reserved = Reserved();
  EXPECT_EQ(reserved.at("node0/gpu0") + reserved.at("node0/gpu1"), 250);
}

}  // namespace
}  // namespace tessera
