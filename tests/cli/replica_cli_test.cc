// The CLI against two replicas of the real `tessera serve` over a real
// PostgreSQL (docs/operations.md, "High availability"): `tessera cluster`
// says which replica leads, since when, and which one answered; a command
// only the leader does, sent to the follower, reaches the leader (307);
// `tessera submit` sent while the leader has just died tries again until
// the follower has taken over, and makes one job.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <stdlib.h>

#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <thread>

#include "tests/cli/serve_process.h"
#include "tests/testlib/postgres_server.h"
#include "tests/testlib/repo_paths.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;
using testlib::RunResult;

constexpr const char* kAlice = "alice-replica-token";
constexpr const char* kRoot = "root-replica-token";

class ReplicaCli : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(pg_.error(), "");
    ASSERT_TRUE(pg_.CreateDatabase("ha")) << pg_.error();
    // A short lease: the follower takes over about 2.5 s after the
    // leader's death.
    std::ofstream(config_)
        << "store:\n  postgres:\n    url: " << pg_.Url("ha")
        << "\n    password_file: " << pg_.password_file() << "\n"
        << "ha: {lease_s: 2, lease_renew_s: 0.5}\n"
        << "log_dir: " << dir_.File("logs") << "\n"
        << "kill_grace_s: 1\n"
        << "pools:\n  - {name: a, policy: fifo}\n"
        << "nodes:\n  - {name: node0, pool: a, cpu_milli: 64000, memory: "
           "256GiB, gpus: [{kind: a100-80gb, count: 2}]}\n"
        << "users:\n"
        << "  - {name: alice, role: user, token_sha256: "
        << testlib::Sha256Hex(kAlice) << "}\n"
        << "  - {name: root, role: admin, token_sha256: "
        << testlib::Sha256Hex(kRoot) << "}\n";
  }
  void TearDown() override {
    for (testlib::ServeProcess& s : serve_) s.Stop(SIGTERM);
  }

  std::string Url(int i) const {
    return "http://127.0.0.1:" + std::to_string(port_[i]);
  }
  // Replica r<i+1> on its own port: "" once it answers.
  std::string Start(int i) {
    const std::string name = "r" + std::to_string(i + 1);
    return serve_[i].Start(config_, port_[i], dir_.File(name + ".log"),
                           {"--listen", "127.0.0.1:" + std::to_string(port_[i]),
                            "--replica", name});
  }
  // Replica i's /healthz.
  Json Health(int i) const {
    httplib::Client c("127.0.0.1", port_[i]);
    c.set_connection_timeout(1);
    c.set_read_timeout(5);
    auto r = c.Get("/healthz");
    if (!r || r->status != 200) return Json();
    return Json::parse(r->body, nullptr, /*allow_exceptions=*/false);
  }
  // Waits (up to 60 s) until replica i has `role` and knows `leader` leads.
  bool WaitFor(int i, const std::string& role, const std::string& leader) {
    for (int n = 0; n < 1200; ++n) {
      const Json h = Health(i);
      if (h.is_object() && h.value("role", "") == role &&
          h.contains("leader") && h["leader"].is_object() &&
          h["leader"].value("name", "") == leader) {
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }
  // r1 leads, r2 follows it.
  void StartBoth() {
    ASSERT_EQ(Start(0), "");
    ASSERT_TRUE(WaitFor(0, "leader", "r1")) << Health(0).dump();
    ASSERT_EQ(Start(1), "");
    ASSERT_TRUE(WaitFor(1, "follower", "r1")) << Health(1).dump();
  }
  RunResult Cli(int i, const std::string& args, const char* token) {
    setenv("TESSERA_URL", Url(i).c_str(), 1);
    setenv("TESSERA_TOKEN", token, 1);
    return RunTessera(args, dir_);
  }

  testlib::PostgresServer pg_;  // outlives the replicas
  testlib::TempDir dir_;
  const std::string config_ = dir_.File("serve-ha.yaml");
  const int port_[2] = {testlib::FreeLoopbackPort(),
                        testlib::FreeLoopbackPort()};
  testlib::ServeProcess serve_[2];
};

// "2026-11-30T11:24:51Z" for Unix seconds.
std::string Iso(double unix_s) {
  const auto t = static_cast<std::time_t>(std::llround(unix_s));
  std::tm utc{};
  gmtime_r(&t, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

TEST_F(ReplicaCli, ClusterSaysWhoLeadsAndFollowerSendsDrainsToTheLeader) {
  ASSERT_NO_FATAL_FAILURE(StartBoth());

  // --json is the API's, "replica" and all.
  RunResult r = Cli(1, "cluster --json", kAlice);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json replica = Json::parse(r.out)["replica"];
  EXPECT_EQ(replica["role"], "follower");
  EXPECT_EQ(replica["name"], "r2");
  EXPECT_EQ(replica["leader"]["address"], Url(0));
  const std::string since = Iso(replica["leader"]["since"].get<double>());

  // The tables, under a line saying who leads and who answered.
  r = Cli(1, "cluster", kAlice);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string first = r.out.substr(0, r.out.find('\n'));
  EXPECT_TRUE(std::regex_match(
      first, std::regex("leader: r1 \\(" + Url(0) + "\\) since " + since +
                        "; this answer from r2 \\(follower, view "
                        "[0-9]+\\.[0-9] s old\\)")))
      << first;
  EXPECT_THAT(r.out, HasSubstr("a100-80gb"));
  r = Cli(0, "cluster", kAlice);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, r.out.find('\n')),
            "leader: r1 (" + Url(0) + ") since " + since +
                "; this answer from r1 (leader)");

  // Draining is the leader's: the follower's 307 is followed, with the
  // token (root's: a user may not drain).
  r = Cli(1, "drain node0", kRoot);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("node node0: drained"));
  r = Cli(0, "cluster --json", kAlice);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json cluster = Json::parse(r.out);
  EXPECT_EQ(cluster["gpus"].size(), 2u);
  for (const Json& g : cluster["gpus"]) {
    EXPECT_TRUE(g.value("drained", false)) << g.dump();
  }
  r = Cli(1, "drain node0", kAlice);
  EXPECT_EQ(r.exit_code, 2) << r.err;  // the leader's refusal, followed
  r = Cli(1, "drain node0 --undo", kRoot);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("admitting jobs again"));
}

TEST_F(ReplicaCli, SubmitTriesAgainAcrossAFailoverAndMakesOneJob) {
  ASSERT_NO_FATAL_FAILURE(StartBoth());
  // The leader dies. The follower sends a model's upload (the leader's
  // work) to it, where nothing answers, and then, the lease lapsed, says
  // nobody leads (503) until it has taken over itself.
  serve_[0].Stop(SIGKILL);
  const RunResult r = Cli(1,
                          "submit --json --name across --model " +
                              std::string(TESSERA_SOURCE_DIR) +
                              "/models/zoo/resnet50.onnx --batch 8 -- true",
                          kAlice);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("tessera: the service is unavailable ("));
  EXPECT_THAT(r.err, HasSubstr("); retrying in "));
  const Json job = Json::parse(r.out);
  EXPECT_EQ(job["name"], "across");
  EXPECT_EQ(Health(1).value("role", ""), "leader");

  const RunResult jobs = Cli(1, "jobs --json", kAlice);
  ASSERT_EQ(jobs.exit_code, 0) << jobs.err;
  const Json list = Json::parse(jobs.out);
  std::string across;
  for (const Json& j : list["jobs"]) {
    across += j.value("name", "") + " " + j["id"].dump() + "; ";
  }
  EXPECT_EQ(across, "across " + job["id"].dump() + "; ") << r.err;
}

}  // namespace
}  // namespace tessera
