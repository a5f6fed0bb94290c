// End to end (issue 31): the real `tessera serve` with the local launcher,
// a fake MPS control program and a fake NVML library (tests/testlib/
// fake_nvml.cc, loaded with dlopen as the real one is). Fractions of a GPU
// of `isolation: mps` run as clients of the service's daemon and share the
// GPU; a GPU of `isolation: none` holds one job; the jobs' GPU use is
// measured and shown by `tessera job`, `tessera cluster` and /metrics; a
// job out of memory with --on-oom requeue runs again with more.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
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

bool WaitUntil(const std::function<bool()>& done) {
  for (int i = 0; i < 600; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

std::string Read(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

class IsolationCli : public testlib::ServeCliTest {
 protected:
  void SetUp() override {
    // nvidia-cuda-mps-control as far as the service can tell: `-d`
    // "starts" the daemon (a file in its pipe directory), which then
    // answers get_server_list; each start is logged.
    const std::string control = dir_.File("fake-mps-control");
    std::ofstream(control)
        << "#!/bin/sh\n"
           "run=\"$CUDA_MPS_PIPE_DIRECTORY/running\"\n"
           "if [ \"$1\" = -d ]; then touch \"$run\"; "
           "echo start >> \"$CUDA_MPS_LOG_DIRECTORY/control.log\"; exit 0; fi\n"
           "read cmd\n"
           "[ \"$cmd\" = get_server_list ] && [ -f \"$run\" ] && exit 0\n"
           "exit 1\n";
    chmod(control.c_str(), 0755);
    setenv("TESSERA_FAKE_NVML_READINGS", readings_.c_str(), 1);
    WriteConfig("launcher: {kind: local, mps_control: " + control +
                "}\n"
                "gpu_usage: {library: " TESSERA_FAKE_NVML
                ", interval_s: 0.1}\n"
                "pools:\n  - {name: a, policy: fifo, on_oom: requeue}\n"
                "  - {name: b, policy: fifo}\n"
                "nodes:\n"
                "  - {name: node0, pool: a, isolation: mps, cpu_milli: 64000, "
                "memory: 256GiB, gpus: [{kind: a100-80gb, count: 1}]}\n"
                "  - {name: node1, pool: b, cpu_milli: 64000, memory: 256GiB, "
                "gpus: [{kind: a100-80gb, count: 1}]}\n"
                "users:\n  - {name: alice, role: user, token_sha256: " +
                testlib::Sha256Hex(kAlice) + "}\n");
    const std::string error = StartServe();
    if (!error.empty()) FAIL() << error;
  }
  void TearDown() override {
    testlib::ServeCliTest::TearDown();
    unsetenv("TESSERA_FAKE_NVML_READINGS");
  }
  int64_t Submit(const std::string& args) {
    const RunResult r = Cli("submit --json " + args, kAlice);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? Json::parse(r.out)["id"].get<int64_t>() : 0;
  }
  Json Job(int64_t id) {
    const RunResult r = Cli("job " + std::to_string(id) + " --json", kAlice);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? Json::parse(r.out) : Json::object();
  }
  // A job that writes its pid and its MPS environment, then runs until
  // the test ends.
  std::string Recorder(const std::string& name) const {
    return "sh -c 'env | grep ^CUDA_MPS > " + dir_.File(name + ".env") +
           "; echo $$ > " + dir_.File(name + ".pid.tmp") + "; mv " +
           dir_.File(name + ".pid.tmp") + " " + dir_.File(name + ".pid") +
           "; while [ -e " + config_ + " ]; do sleep 0.2; done'";
  }
  std::string Pid(const std::string& name) {
    std::string pid;
    EXPECT_TRUE(WaitUntil([&] {
      pid = Read(dir_.File(name + ".pid"));
      return !pid.empty();
    })) << name
        << " never ran";
    return pid.substr(0, pid.find('\n'));
  }

  const std::string readings_ = dir_.File("nvml-readings");
};

TEST_F(IsolationCli, FractionsShareAnMpsGpuAndTheirUseIsMeasured) {
  const int64_t a =
      Submit("--pool a --gpu-milli 400 --gpu-memory 4GiB -- " + Recorder("a"));
  const int64_t b =
      Submit("--pool a --gpu-milli 400 --gpu-memory 4GiB -- " + Recorder("b"));
  const std::string pa = Pid("a"), pb = Pid("b");
  // Both on node0's one GPU, as clients of the service's daemon.
  EXPECT_EQ(Job(a)["allocation"][0]["gpu"], "node0/gpu0");
  EXPECT_EQ(Job(b)["allocation"][0]["gpu"], "node0/gpu0");
  const std::string mps_dir = dir_.File("logs") + "/mps";
  EXPECT_THAT(Read(dir_.File("a.env")),
              HasSubstr("CUDA_MPS_PIPE_DIRECTORY=" + mps_dir + "/pipe"));
  EXPECT_THAT(Read(dir_.File("b.env")),
              HasSubstr("CUDA_MPS_LOG_DIRECTORY=" + mps_dir + "/log"));
  EXPECT_EQ(Read(mps_dir + "/log/control.log"), "start\n");  // once

  // What NVML says the two MPS clients use.
  std::ofstream(readings_) << "gpu 0 5000 81251 63\nmps 0 " << pa
                           << " 1200\nmps 0 " << pb << " 2500\n";
  ASSERT_TRUE(WaitUntil([&] {
    const Json j = Job(a);
    return j.contains("usage") && j["usage"]["peak_mib"] == 1200;
  }));
  RunResult r = Cli("job " + std::to_string(a), kAlice);
  EXPECT_THAT(r.out, HasSubstr("reserved 4.0GiB, used at most 1.2GiB"));
  r = Cli("cluster --json", kAlice);
  const Json cluster = Json::parse(r.out);
  EXPECT_EQ(cluster["gpus"][0]["used_memory_mib"], 5000);
  EXPECT_EQ(cluster["gpus"][0]["utilization_pct"], 63);
  EXPECT_EQ(cluster["share_unisolated"], false);
  httplib::Client c("127.0.0.1", port_);
  auto m =
      c.Get("/metrics", {{"Authorization", std::string("Bearer ") + kAlice}});
  ASSERT_TRUE(m);
  ASSERT_TRUE(WaitUntil([&] {
    m = c.Get("/metrics", {{"Authorization", std::string("Bearer ") + kAlice}});
    return m && m->body.find(
                    "tessera_pool_measured_memory_used_mib{pool=\"a\"}"
                    " 3700") != std::string::npos;
  })) << (m ? m->body : "");
  EXPECT_THAT(m->body, HasSubstr("tessera_pool_measured_memory_reserved_mib{"
                                 "pool=\"a\"} 8192"));

  // node1's GPU isolates nothing: one job at a time there.
  const int64_t c1 =
      Submit("--pool b --gpu-milli 300 --gpu-memory 2GiB -- " + Recorder("c1"));
  const int64_t c2 = Submit("--pool b --gpu-milli 300 --gpu-memory 2GiB -- " +
                            UntilTestEnds());
  Pid("c1");
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(Job(c1)["state"], "running");
  EXPECT_EQ(Job(c2)["state"], "queued");
  // Not a client of the service's daemon (the limits are still written:
  // they hold under a daemon someone else runs, and cost nothing else).
  EXPECT_THAT(Read(dir_.File("c1.env")),
              Not(HasSubstr("CUDA_MPS_PIPE_DIRECTORY")));
  r = Cli("cluster", kAlice);
  EXPECT_THAT(r.out, HasSubstr("mps"));
  EXPECT_THAT(r.out, HasSubstr("none: one job"));
}

TEST_F(IsolationCli, OutOfMemoryRunsAgainWithMore) {
  // Out of memory on its first run only.
  const std::string marker = dir_.File("ran-once");
  const int64_t id = Submit(
      "--pool a --gpu-milli 250 --gpu-memory 2GiB -- sh -c 'if [ ! -e " +
      marker + " ]; then touch " + marker +
      "; echo \"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
      "2.00 GiB.\" >&2; exit 1; fi'");
  Json j;
  ASSERT_TRUE(WaitUntil([&] {
    j = Job(id);
    return j.value("state", "") == "succeeded";
  })) << j.dump();
  EXPECT_EQ(j["oom_requeues"], 1);
  EXPECT_EQ(j["demand"]["gpu_memory_mib"], 4301);  // (2048 + 2048) x 1.05
  EXPECT_EQ(j["allocation"].size(), 0u);
  const RunResult r = Cli("job " + std::to_string(id), kAlice);
  EXPECT_THAT(r.out, HasSubstr("put back 1 time(s) with more memory"));
  const RunResult events =
      Cli("job " + std::to_string(id) + " --events", kAlice);
  ASSERT_EQ(events.exit_code, 0) << events.err;
  EXPECT_THAT(events.out, HasSubstr("requeued"));
  EXPECT_THAT(events.out, HasSubstr("reservation 2048 -> 4301 MiB per GPU"));
}

}  // namespace
}  // namespace tessera
