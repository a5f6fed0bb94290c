// At most once, nothing lost: the real `tessera serve` killed with SIGKILL
// at 50 random moments while jobs are submitted, started, cancelled and
// preempted (local launcher, a priority pool). After every restart each
// acknowledged job is still there and no GPU holds more than it has; at the
// end no job was started twice (each start appends "ID ATTEMPT" to a file;
// a preempted job's next start is the next attempt).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "tests/cli/serve_process.h"
#include "tests/testlib/onnx_model_builder.h"

namespace tessera {
namespace {

using Json = nlohmann::json;

constexpr const char* kAlice = "alice-crash-token";
constexpr int kKills = 50;

class ServeCrash : public ::testing::Test {
 protected:
  void SetUp() override {
    port_ = testlib::FreeLoopbackPort();
    config_ = dir_.File("serve.yaml");
    starts_ = dir_.File("starts.log");
    std::ofstream(config_)
        << testlib::ServeConfigHead(dir_, port_)
        << "pools:\n  - {name: a, policy: priority, preemption: true}\n"
        << "nodes:\n  - {name: node0, pool: a, cpu_milli: 64000, memory: "
           "256GiB, gpus: [{kind: a100-80gb, count: 2}]}\n"
        << "users:\n"
        << "  - {name: alice, role: admin, token_sha256: "
        << testlib::Sha256Hex(kAlice) << "}\n";
  }
  void TearDown() override { serve_.Stop(SIGKILL); }

  httplib::Client Client() const {
    httplib::Client c("127.0.0.1", port_);
    c.set_bearer_token_auth(kAlice);
    c.set_connection_timeout(2);
    c.set_read_timeout(5);
    return c;
  }

  // A job that records its start, then runs a little (the low-priority
  // ones long enough to be preempted).
  Json Request(std::mt19937& rng) const {
    const bool urgent = rng() % 3 == 0;
    const std::string seconds = urgent ? "0.1" : "0.8";
    Json j = {{"name", urgent ? "urgent" : "batch"},
              {"command",
               {"sh", "-c",
                "echo \"$TESSERA_JOB_ID $TESSERA_ATTEMPT\" >> " + starts_ +
                    "; sleep " + seconds}},
              {"priority", urgent ? 10 : 0},
              {"preemptible", !urgent}};
    if (rng() % 2) {
      j["resources"] = {{"gpus", 1}};
    } else {
      j["resources"] = {{"gpu_milli", 300 + static_cast<int>(rng() % 500)},
                        {"gpu_memory_mib", 1024 * (1 + rng() % 30)}};
    }
    return j;
  }

  // "" when the acknowledged jobs are all there and no GPU is overbooked.
  std::string Check(const std::set<int64_t>& acknowledged) {
    httplib::Client c = Client();
    for (const int64_t id : acknowledged) {
      auto r = c.Get("/v1/jobs/" + std::to_string(id));
      if (!r || r->status != 200) {
        return "acknowledged job " + std::to_string(id) + " is missing";
      }
    }
    auto r = c.Get("/v1/cluster");
    if (!r || r->status != 200) return "no /v1/cluster";
    const Json cluster = Json::parse(r->body);
    for (const Json& g : cluster["gpus"]) {
      if (g["reserved_milli"].get<int>() > 1000 ||
          g["reserved_memory_mib"].get<int64_t>() >
              g["memory_mib"].get<int64_t>()) {
        return "GPU " + g["id"].get<std::string>() +
               " is overbooked: " + g.dump();
      }
    }
    return "";
  }

  int Active() {
    httplib::Client c = Client();
    int n = 0;
    for (const char* state : {"queued", "starting", "running", "preempted"}) {
      auto r = c.Get(std::string("/v1/jobs?state=") + state);
      if (!r || r->status != 200) return -1;
      n += static_cast<int>(Json::parse(r->body)["jobs"].size());
    }
    return n;
  }

  testlib::TempDir dir_;
  testlib::ServeProcess serve_;
  int port_ = 0;
  std::string config_, starts_;
};

TEST_F(ServeCrash, KillNineLosesNothingAndStartsNothingTwice) {
  std::mt19937 rng(20261125);
  std::set<int64_t> acknowledged;
  for (int kill = 0; kill < kKills; ++kill) {
    const std::string up = serve_.Start(config_, port_, dir_.File("serve.log"));
    ASSERT_EQ(up, "") << "restart " << kill;
    const std::string broken = Check(acknowledged);
    ASSERT_EQ(broken, "") << "after restart " << kill;
    // Work until a random moment, then SIGKILL: submits, cancels, and the
    // starts and preemptions the service does meanwhile. Every other kill
    // lands 0-15 ms after a submission, while its start is under way.
    const bool targeted = kill % 2 == 1;
    const auto until =
        std::chrono::steady_clock::now() +
        std::chrono::milliseconds(50 + static_cast<int>(rng() % 400));
    httplib::Client c = Client();
    while (std::chrono::steady_clock::now() < until) {
      if (rng() % 4 == 0 && !acknowledged.empty()) {
        auto it = acknowledged.begin();
        std::advance(it, static_cast<long>(rng() % acknowledged.size()));
        (void)c.Post("/v1/jobs/" + std::to_string(*it) + "/cancel", "{}",
                     "application/json");
      } else {
        auto r = c.Post("/v1/jobs", Request(rng).dump(), "application/json");
        if (r && r->status == 201) {
          acknowledged.insert(Json::parse(r->body)["id"].get<int64_t>());
          if (targeted) break;
        }
      }
      std::this_thread::sleep_for(
          std::chrono::milliseconds(40 + static_cast<int>(rng() % 100)));
    }
    if (targeted) {
      std::this_thread::sleep_for(
          std::chrono::microseconds(static_cast<int>(rng() % 15000)));
    }
    serve_.Stop(SIGKILL);
  }
  ASSERT_EQ(serve_.Start(config_, port_, dir_.File("serve.log")), "");
  ASSERT_EQ(Check(acknowledged), "");
  for (int i = 0; i < 1200 && Active() != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(Active(), 0);
  EXPECT_EQ(Check(acknowledged), "");
  // Every start, once.
  std::ifstream in(starts_);
  std::map<std::pair<int64_t, int>, int> starts;
  int64_t id = 0;
  int attempt = 0;
  while (in >> id >> attempt) ++starts[{id, attempt}];
  ASSERT_GT(starts.size(), 20u);
  for (const auto& [key, n] : starts) {
    EXPECT_EQ(n, 1) << "job " << key.first << " attempt " << key.second
                    << " started " << n << " times";
  }
  RecordProperty("acknowledged", static_cast<int>(acknowledged.size()));
  RecordProperty("starts", static_cast<int>(starts.size()));
  std::printf("%zu jobs acknowledged, %zu starts, %d kills\n",
              acknowledged.size(), starts.size(), kKills);
}

}  // namespace
}  // namespace tessera
