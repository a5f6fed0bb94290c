// End to end: the real `tessera serve` on a loopback port with a temporary
// database, real jobs (shell commands that print their environment)
// submitted with the CLI client; cancel, logs, metrics, errors; and a crash
// test: concurrent clients, kill -9 mid-stream, restart, every accepted job
// still there and no GPU over-reserved.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "tests/cli/serve_cli_test.h"
#include "tests/testlib/repo_paths.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Json = nlohmann::json;
using testlib::RunResult;

constexpr const char* kAlice = "alice-test-token";
constexpr const char* kBob = "bob-test-token";
constexpr const char* kRoot = "root-test-token";

class QueueCli : public testlib::ServeCliTest {
 protected:
  void SetUp() override {
    WriteConfig(std::string("model_roots: [") + TESSERA_SOURCE_DIR +
                "/models/zoo]\n"
                "pools:\n  - {name: a, policy: backfill}\n"
                "nodes:\n  - {name: node0, pool: a, cpu_milli: 64000, "
                "memory: 256GiB, gpus: [{kind: a100-80gb, count: 2}]}\n"
                "users:\n"
                "  - {name: alice, role: user, token_sha256: " +
                testlib::Sha256Hex(kAlice) +
                "}\n"
                "  - {name: bob, role: user, token_sha256: " +
                testlib::Sha256Hex(kBob) +
                "}\n"
                "  - {name: root, role: admin, token_sha256: " +
                testlib::Sha256Hex(kRoot) +
                "}\n"
                "quotas:\n  users:\n    bob: {max_running: 5, "
                "max_gpu_milli: 2000, submissions_per_s: 50}\n");
  }

  void StartServer() {
    const std::string error = StartServe();
    if (!error.empty()) FAIL() << error;
  }
  void StopServer(int signal) { serve_.Stop(signal); }
  Json WaitForEnd(int64_t id) {
    for (int i = 0; i < 400; ++i) {
      const RunResult r = Cli("job " + std::to_string(id) + " --json", kAlice);
      if (r.exit_code == 0) {
        const Json j = Json::parse(r.out);
        const std::string s = j["state"];
        if (s == "succeeded" || s == "failed" || s == "cancelled") return j;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ADD_FAILURE() << "job " << id << " did not end";
    return {};
  }
};

TEST_F(QueueCli, JobsRunWithTheirGpusInTheEnvironment) {
  StartServer();
  RunResult r = Cli(
      "submit --json --name envdump --gpu-milli 250 --gpu-memory 8GiB -- sh "
      "-c 'env | grep -E \"^(CUDA|TESSERA)_\" | sort'",
      kAlice);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json job = Json::parse(r.out);
  EXPECT_EQ(job["user"], "alice");
  const int64_t id = job["id"];
  const Json done = WaitForEnd(id);
  EXPECT_EQ(done["state"], "succeeded") << done.dump();
  EXPECT_EQ(done["exit_code"], 0);
  r = Cli("logs " + std::to_string(id), kAlice);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25"));
  EXPECT_THAT(r.out, HasSubstr("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=8192M"));
  EXPECT_THAT(r.out, HasSubstr("CUDA_VISIBLE_DEVICES="));
  EXPECT_THAT(r.out, HasSubstr("TESSERA_JOB_ID=" + std::to_string(id)));
  r = Cli("jobs", kAlice);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("envdump"));
  r = Cli("cluster --json", kAlice);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Json::parse(r.out)["gpus"].size(), 2u);
  httplib::Client c("127.0.0.1", port_);
  auto m =
      c.Get("/metrics", {{"Authorization", std::string("Bearer ") + kAlice}});
  ASSERT_TRUE(m);
  EXPECT_EQ(m->status, 200);
  EXPECT_THAT(m->body, HasSubstr("tessera_queue_wait_seconds_count"));
  EXPECT_THAT(m->body, HasSubstr("tessera_gpu_milli_free"));
}

TEST_F(QueueCli, ClusterShowsUseAgainstQuotas) {
  StartServer();
  RunResult r = Cli(
      "submit --gpu-milli 300 --gpu-memory 1GiB -- " + UntilTestEnds(), kBob);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (int i = 0; i < 100; ++i) {
    r = Cli("cluster", kAlice);
    if (r.out.find("1/5") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("USER"));
  EXPECT_THAT(r.out, HasSubstr("1/5"));       // bob's running jobs
  EXPECT_THAT(r.out, HasSubstr("300/2000"));  // and GPU milli
  r = Cli("cluster --json", kAlice);
  const Json cluster = Json::parse(r.out);
  bool found = false;
  for (const Json& u : cluster["users"]) {
    if (u["name"] == "bob") {
      found = true;
      EXPECT_EQ(u["quota"]["max_running"], 5);
    }
  }
  EXPECT_TRUE(found);
}

// tessera queue: the waiting job's position, reason and earliest start.
TEST_F(QueueCli, QueueSaysWhyAJobWaits) {
  StartServer();
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(
        Cli("submit --gpus 1 --time-limit 600 -- " + UntilTestEnds(), kAlice)
            .exit_code,
        0);
  }
  RunResult r = Cli("submit --json --name waiter --gpus 1 -- true", kBob);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const int64_t id = Json::parse(r.out)["id"];
  for (int i = 0; i < 100; ++i) {
    r = Cli("queue", kBob);
    if (r.out.find("no node of pool a has room") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("pool a (backfill, 2 GPUs): 1 queued"));
  EXPECT_THAT(r.out, HasSubstr("WHY"));
  EXPECT_THAT(r.out, HasSubstr("waiter"));
  EXPECT_THAT(r.out, HasSubstr("only 0 of its 2 GPUs are free"));
  r = Cli("queue --json --user bob", kAlice);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json q = Json::parse(r.out);
  ASSERT_EQ(q["pools"][0]["queued"].size(), 1U);
  EXPECT_EQ(q["pools"][0]["queued"][0]["id"], id);
  EXPECT_EQ(q["pools"][0]["queued"][0]["why_code"], "no_room");
  EXPECT_TRUE(q["pools"][0]["queued"][0]["estimated_start"].is_string());
  EXPECT_TRUE(q["pools"][0]["running"].empty());  // alice's, filtered out
  r = Cli("queue --pool nope", kAlice);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("no pool 'nope'"));
}

TEST_F(QueueCli, CancelIsForTheOwnerOrAnAdmin) {
  StartServer();
  RunResult r = Cli(
      "submit --json --gpu-milli 100 --gpu-memory 1GiB -- " + UntilTestEnds(),
      kAlice);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string id =
      std::to_string(Json::parse(r.out)["id"].get<int64_t>());
  r = Cli("cancel " + id, kBob);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("error"));
  r = Cli("cancel " + id, kAlice);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(WaitForEnd(std::stoll(id))["state"], "cancelled");
  // The audit trail says who did what: bob's refused cancel is not in it.
  r = Cli("job " + id + " --events", kBob);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("submitted"));
  EXPECT_THAT(r.out, HasSubstr("cancel requested"));
  EXPECT_THAT(r.out, Not(HasSubstr("bob")));
  r = Cli("job " + id + " --events --json", kAlice);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json events = Json::parse(r.out)["events"];
  ASSERT_GE(events.size(), 4u);
  EXPECT_EQ(events[0]["actor"], "alice");
  EXPECT_EQ(events[0]["action"], "submitted");
  EXPECT_EQ(events.back()["action"], "cancelled");
}

TEST_F(QueueCli, BadRequestsAreRefusedWithTheField) {
  StartServer();
  RunResult r =
      Cli("submit --gpu-milli 1500 --gpu-memory 1GiB -- true", kAlice);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("gpu_milli"));
  r = Cli("submit --pool nope --gpu-milli 100 --gpu-memory 1GiB -- true",
          kAlice);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("pool"));
  r = Cli("jobs", "wrong-token");
  EXPECT_EQ(r.exit_code, 2);
  httplib::Client c("127.0.0.1", port_);
  auto no_token = c.Get("/v1/jobs");
  ASSERT_TRUE(no_token);
  EXPECT_EQ(no_token->status, 401);
  auto malformed =
      c.Post("/v1/jobs", {{"Authorization", std::string("Bearer ") + kAlice}},
             "{\"command\": [", "application/json");
  ASSERT_TRUE(malformed);
  EXPECT_EQ(malformed->status, 400);
  auto drain = c.Post("/v1/nodes/node0/drain",
                      {{"Authorization", std::string("Bearer ") + kAlice}}, "",
                      "application/json");
  ASSERT_TRUE(drain);
  EXPECT_EQ(drain->status, 403);
}

// submit --model uploads the model without its weights, then submits by
// the upload's id; --model-path names a file under the service's roots.
TEST_F(QueueCli, SubmitModelUploadsTheStrippedGraph) {
  StartServer();
  const char* cache = std::getenv("TESSERA_CACHE");
  const std::string det =
      (cache ? std::string(cache)
             : std::string(std::getenv("HOME")) + "/.cache/tessera") +
      "/pretrained/paddleocr_det.onnx";
  ASSERT_TRUE(std::filesystem::exists(det))
      << det << " is missing: run models/fetch_pretrained.sh";
  RunResult r =
      Cli("submit --json --model '" + det + "' --input x=1x3x640x640 -- true",
          kAlice);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json job = Json::parse(r.out);
  const std::string id = job["request"]["model"]["upload"];
  EXPECT_EQ(id.size(), 64u);
  EXPECT_EQ(job["request"]["model"]["path"], "");
  const std::string stored = dir_.File("logs") + "/models/" + id + ".onnx";
  ASSERT_TRUE(std::filesystem::exists(stored));
  // The real weights stayed on the client: 4.7 MB of model, ~110 KB sent.
  EXPECT_LT(std::filesystem::file_size(stored),
            std::filesystem::file_size(det) / 10);
  EXPECT_EQ(WaitForEnd(job["id"])["state"], "succeeded");

  r = Cli("submit --json --model-path " + std::string(TESSERA_SOURCE_DIR) +
              "/models/zoo/resnet50.onnx -- true",
          kAlice);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = Cli("submit --model-path /etc/passwd -- true", kAlice);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("model.path: not a readable model file"));
  r = Cli("submit --model /dev/null -- true", kAlice);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--model"));
}

// A model job's split-or-wait decision in `tessera job`, and its progress
// reported with `tessera progress`.
TEST_F(QueueCli, JobShowsTheDecisionAndTakesProgress) {
  StartServer();
  RunResult r =
      Cli("submit --json --model-path " + std::string(TESSERA_SOURCE_DIR) +
              "/models/zoo/gpt2.onnx --steps 500 -- " + UntilTestEnds(),
          kAlice);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string id = std::to_string(Json::parse(r.out)["id"].get<int>());
  EXPECT_EQ(Json::parse(r.out)["request"]["work"]["steps"], 500);
  Json job;
  for (int i = 0; i < 200; ++i) {
    job = Json::parse(Cli("job " + id + " --json", kAlice).out);
    if (job["state"] == "running") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(job["state"], "running");
  ASSERT_TRUE(job["decision"].is_object()) << job.dump();
  EXPECT_EQ(job["decision"]["chosen"], "whole");
  EXPECT_EQ(job["decision"]["work_from"], "work.steps");
  r = Cli("job " + id, kAlice);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("decision (work "));
  EXPECT_THAT(r.out, HasSubstr("from work.steps"));
  EXPECT_THAT(r.out, HasSubstr("* whole GPU node0/gpu"));
  EXPECT_THAT(r.out, HasSubstr("-> start: whole"));

  r = Cli("progress " + id + " 10", kAlice);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("job " + id + ": 10 steps"));
  r = Cli("progress " + id + " 5", kAlice);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("went back"));
  r = Cli("progress " + id + " 20", kBob);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(
      r.err,
      HasSubstr("only an admin may report another user's job's progress"));
  r = Cli("submit --steps 5 --gpu-milli 100 --gpu-memory 1GiB -- true", kAlice);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--steps: only a model job"));
  EXPECT_EQ(Cli("cancel " + id, kAlice).exit_code, 0);
}

TEST_F(QueueCli, OnlyAnAdminDrainsANode) {
  StartServer();
  RunResult r = Cli("drain node0", kAlice);
  EXPECT_EQ(r.exit_code, 2);
  r = Cli("drain node0", kRoot);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("drained"));
  // Nothing starts on a drained node.
  r = Cli("submit --json --gpu-milli 100 --gpu-memory 1GiB -- true", kAlice);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string id =
      std::to_string(Json::parse(r.out)["id"].get<int64_t>());
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  r = Cli("job " + id + " --json", kAlice);
  EXPECT_EQ(Json::parse(r.out)["state"], "queued");
  r = Cli("drain node0 --undo", kRoot);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(WaitForEnd(std::stoll(id))["state"], "succeeded");
}

// Concurrent clients submit while the service is killed with SIGKILL; after
// a restart every job that was answered 201 is there, and the GPUs are not
// over-reserved.
TEST_F(QueueCli, KillDashNineLosesNoAcceptedJob) {
  StartServer();
  std::mutex mu;
  std::set<int64_t> accepted;
  std::atomic<bool> stop{false};
  std::vector<std::thread> clients;
  for (int t = 0; t < 4; ++t) {
    clients.emplace_back([&, t] {
      httplib::Client c("127.0.0.1", port_);
      c.set_connection_timeout(1);
      const Json body = {
          {"name", "crash" + std::to_string(t)},
          {"command", {"sleep", "30"}},
          {"resources", {{"gpu_milli", 100}, {"gpu_memory_mib", 1024}}}};
      while (!stop) {
        auto r = c.Post("/v1/jobs",
                        {{"Authorization", std::string("Bearer ") + kAlice}},
                        body.dump(), "application/json");
        if (r && r->status == 201) {
          std::lock_guard lock(mu);
          accepted.insert(Json::parse(r->body)["id"].get<int64_t>());
        }
      }
    });
  }
  for (int i = 0; i < 400; ++i) {
    {
      std::lock_guard lock(mu);
      if (accepted.size() >= 40) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  StopServer(SIGKILL);
  stop = true;
  for (auto& c : clients) c.join();
  ASSERT_GE(accepted.size(), 10u);
  StartServer();
  httplib::Client c("127.0.0.1", port_);
  const httplib::Headers auth = {
      {"Authorization", std::string("Bearer ") + kRoot}};
  for (const int64_t id : accepted) {
    auto r = c.Get(("/v1/jobs/" + std::to_string(id)).c_str(), auth);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << "job " << id << " was accepted and is gone";
  }
  auto cluster = c.Get("/v1/cluster", auth);
  ASSERT_TRUE(cluster);
  const Json gpus = Json::parse(cluster->body)["gpus"];  // kept alive
  for (const Json& g : gpus) {
    EXPECT_LE(g["reserved_milli"].get<int>(), 1000) << g.dump();
    EXPECT_LE(g["reserved_memory_mib"].get<int64_t>(),
              g["memory_mib"].get<int64_t>());
  }
  // Clean up: the running sleeps belong to the killed service's adoptees.
  auto jobs = c.Get("/v1/jobs?state=running&limit=1000", auth);
  ASSERT_TRUE(jobs);
  const Json running = Json::parse(jobs->body)["jobs"];
  for (const Json& j : running) {
    c.Post(("/v1/jobs/" + std::to_string(j["id"].get<int64_t>()) + "/cancel")
               .c_str(),
           auth, "", "application/json");
  }
}

}  // namespace
}  // namespace tessera
