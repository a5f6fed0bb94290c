// `tessera cluster` against a real `tessera serve` with a queue tree
// (docs/quotas.md, "What it shows"): the queues indented under their
// parent, each with its guarantee, limit, use, what it borrows and what it
// lends.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/cli/serve_cli_test.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using Json = nlohmann::json;
using testlib::RunResult;

constexpr const char* kAlice = "alice-test-token";
constexpr const char* kBob = "bob-test-token";

class QueueTreeCli : public testlib::ServeCliTest {
 protected:
  void SetUp() override {
    WriteConfig(
        "pools:\n  - {name: a, policy: fifo}\n"
        "nodes:\n  - {name: node0, pool: a, cpu_milli: 64000, memory: 256GiB, "
        "gpus: [{kind: a100-80gb, count: 2}]}\n"
        "users:\n"
        "  - {name: alice, role: user, team: team-a, token_sha256: " +
        testlib::Sha256Hex(kAlice) +
        "}\n"
        "  - {name: bob, role: user, team: team-b, token_sha256: " +
        testlib::Sha256Hex(kBob) +
        "}\n"
        "queues:\n"
        "  - name: org\n"
        "    guaranteed: {gpu_milli: 2000, gpu_memory: 160GiB}\n"
        "    children:\n"
        "      - name: team-a\n"
        "        guaranteed: {gpu_milli: 1000, gpu_memory: 80GiB}\n"
        "        weight: 2\n"
        "      - name: team-b\n"
        "        guaranteed: {gpu_milli: 1000, gpu_memory: 80GiB}\n"
        "        limit: {gpu_milli: 2000}\n");
    const std::string error = StartServe();
    if (!error.empty()) FAIL() << error;
  }

  // The queue table's rows: the lines from the QUEUE header on.
  static std::vector<std::string> QueueRows(const std::string& out) {
    std::vector<std::string> rows;
    std::istringstream in(out);
    std::string line;
    bool in_table = false;
    while (std::getline(in, line)) {
      if (line.rfind("QUEUE", 0) == 0) in_table = true;
      if (!in_table) continue;
      if (line.empty()) break;
      rows.push_back(line);
    }
    return rows;
  }
};

TEST_F(QueueTreeCli, ClusterPrintsTheQueueTree) {
  // bob's team fills both GPUs: one in its guarantee, one borrowed from
  // team-a (preemptible, so it may borrow).
  for (int i = 0; i < 2; ++i) {
    const RunResult r =
        Cli("submit --preemptible --gpus 1 -- " + UntilTestEnds(), kBob);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  RunResult r;
  for (int i = 0; i < 200; ++i) {
    r = Cli("cluster --json", kAlice);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    bool both = false;
    const Json cluster = Json::parse(r.out);  // outlives the loop below
    for (const Json& q : cluster["queues"]) {
      if (q["name"] == "team-b") both = q["running"] == 2;
    }
    if (both) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  r = Cli("cluster", kAlice);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> rows = QueueRows(r.out);
  ASSERT_EQ(rows.size(), 4u) << r.out;
  EXPECT_THAT(rows[0], StartsWith("QUEUE"));
  for (const char* column : {"WEIGHT", "GUARANTEED", "LIMIT", "USED",
                             "BORROWED", "LENT", "RUNNING", "QUEUED"}) {
    EXPECT_THAT(rows[0], HasSubstr(column));
  }
  // The top-level queue flush left, its children indented by two.
  EXPECT_THAT(rows[1], StartsWith("org "));
  EXPECT_THAT(rows[2], StartsWith("  team-a "));
  EXPECT_THAT(rows[3], StartsWith("  team-b "));
  // Each row's cells, split on runs of two or more spaces.
  const auto cells = [](const std::string& row) {
    std::vector<std::string> out;
    size_t at = row.find_first_not_of(' ');
    while (at != std::string::npos) {
      size_t end = row.find("  ", at);
      out.push_back(row.substr(at, end == std::string::npos ? end : end - at));
      at = end == std::string::npos ? end : row.find_first_not_of(' ', end);
    }
    return out;
  };
  // QUEUE WEIGHT GUARANTEED LIMIT USED BORROWED LENT RUNNING QUEUED; a
  // child's borrowed work counts as borrowed in its parent too.
  using ::testing::ElementsAre;
  EXPECT_THAT(cells(rows[1]),
              ElementsAre("org", "1.0", "2000 milli, 160.0GiB", "-",
                          "2000 milli, 160.0GiB", "1000 milli, 80.0GiB",
                          "0 milli, 0.0GiB", "2", "0"));
  EXPECT_THAT(cells(rows[2]),
              ElementsAre("team-a", "2.0", "1000 milli, 80.0GiB", "-",
                          "0 milli, 0.0GiB", "0 milli, 0.0GiB",
                          "1000 milli, 80.0GiB", "0", "0"));
  // team-b's limit: GPU milli only ("-": memory not limited).
  EXPECT_THAT(cells(rows[3]),
              ElementsAre("team-b", "1.0", "1000 milli, 80.0GiB",
                          "2000 milli, -", "2000 milli, 160.0GiB",
                          "1000 milli, 80.0GiB", "0 milli, 0.0GiB", "2", "0"));
  // The same numbers as GET /v1/cluster's.
  r = Cli("cluster --json", kAlice);
  const Json json = Json::parse(r.out);
  for (const Json& q : json["queues"]) {
    if (q["name"] == "team-b") {
      EXPECT_EQ(q["borrowed"]["gpu_milli"], 1000);
      EXPECT_EQ(q["running"], 2);
    }
    if (q["name"] == "team-a") {
      EXPECT_EQ(q["lent"]["gpu_milli"], 1000);
      EXPECT_EQ(q["used"]["gpu_milli"], 0);
    }
  }
}

}  // namespace
}  // namespace tessera
