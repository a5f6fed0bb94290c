// End to end on a real Slurm: `tessera serve` with `launcher: {kind:
// slurm}` on a loopback port and a temporary database, driven by the CLI
// client. A fractional job on a shard, two fractions on one GPU, a model
// split over both nodes as a heterogeneous job, cancel, a failing command,
// Slurm refusing a job, and the service killed mid-run and restarted:
// every job recovered with its real end.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "tests/cli/cli_runner.h"
#include "tests/cli/serve_process.h"
#include "tests/slurm/slurm_cluster.h"
#include "tests/testlib/repo_paths.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;
using slurm_test::WaitUntil;
using testlib::RunResult;

constexpr const char* kAlice = "alice-slurm-token";
constexpr const char* kRoot = "root-slurm-token";

// n1 (pinned GPUs in Slurm) and n2 (untyped); tessera sees n2's GPU 0 only,
// so that a part there holds one GPU (untyped shards come from one GPU).
constexpr const char* kNodes =
    "  - {name: n1, cpu_milli: 16000, memory: 16000MiB, gpus: [{kind: "
    "a100-80gb, count: 4}]}\n"
    "  - {name: n2, cpu_milli: 16000, memory: 16000MiB, gpus: [{kind: "
    "a100-80gb, count: 1}]}\n";

class ServeOnSlurm : public ::testing::Test {
 protected:
  void SetUp() override {
    TESSERA_NEED_SLURM(conf_);
    port_ = testlib::FreeLoopbackPort();
    url_ = "http://127.0.0.1:" + std::to_string(port_);
    prefix_ = slurm_test::TestJobPrefix("st");
    WriteConfig(kNodes, "gpu");
  }
  void TearDown() override {
    StopServer(SIGTERM);
    if (!conf_.empty()) slurm_test::CancelJobsNamed(conf_, prefix_);
  }

  void WriteConfig(const std::string& nodes, const std::string& partition) {
    config_ = dir_.File("serve.yaml");
    std::ofstream(config_) << "listen: 127.0.0.1:" << port_ << "\n"
                           << "db: " << dir_.File("queue.db") << "\n"
                           << "log_dir: " << dir_.File("logs") << "\n"
                           << "scorer: best-fit\n"
                           << "launcher:\n"
                           << "  kind: slurm\n"
                           << "  partition: " << partition << "\n"
                           << "  poll_interval_s: 0.2\n"
                           << "  slurm_conf: " << conf_ << "\n"
                           << "  job_prefix: " << prefix_
                           << "\n"
                           // Shards count, they do not isolate.
                           << "share_unisolated: true\n"
                           << "pools: [{name: gpu, policy: fifo}]\n"
                           << "nodes:\n"
                           << nodes << "users:\n"
                           << "  - {name: alice, role: user, token_sha256: "
                           << testlib::Sha256Hex(kAlice) << "}\n"
                           << "  - {name: root, role: admin, token_sha256: "
                           << testlib::Sha256Hex(kRoot) << "}\n";
  }

  void StartServer() {
    const std::string error =
        serve_.Start(config_, port_, dir_.File("serve.log"));
    if (!error.empty()) FAIL() << error;
  }
  void StopServer(int signal) { serve_.Stop(signal); }
  RunResult Cli(const std::string& args, const char* token = kAlice) {
    setenv("TESSERA_URL", url_.c_str(), 1);
    setenv("TESSERA_TOKEN", token, 1);
    return testlib::RunTessera(args, dir_);
  }
  int64_t Submit(const std::string& args) {
    const RunResult r = Cli("submit --json " + args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? Json::parse(r.out)["id"].get<int64_t>() : -1;
  }
  Json Job(int64_t id) {
    const RunResult r = Cli("job " + std::to_string(id) + " --json");
    return r.exit_code == 0 ? Json::parse(r.out) : Json{};
  }
  bool WaitForState(int64_t id, const std::string& state, double s = 30) {
    return WaitUntil(s, [&] { return Job(id).value("state", "") == state; });
  }
  Json WaitForEnd(int64_t id, double seconds = 30) {
    Json j;
    WaitUntil(seconds, [&] {
      j = Job(id);
      const std::string s = j.value("state", "");
      return s == "succeeded" || s == "failed" || s == "cancelled";
    });
    return j;
  }
  // Slurm's records of tessera job `id` (by its job name), all states.
  std::vector<launch::SlurmJob> SlurmJobsOf(int64_t id) {
    const auto r = slurm_test::Slurm(
        conf_, {"squeue", "--noheader", "--states=all",
                "--name=" + prefix_ + "-" + std::to_string(id), "--format=%A"});
    std::vector<launch::SlurmJob> jobs;
    std::istringstream ids(r.out);
    for (int64_t slurm_id; ids >> slurm_id;) {
      for (auto& j : slurm_test::ShowJob(conf_, slurm_id)) {
        if (j.job_id == slurm_id) jobs.push_back(j);
      }
    }
    return jobs;
  }
  std::string Logs(int64_t id) { return Cli("logs " + std::to_string(id)).out; }

  std::string conf_, prefix_;
  testlib::TempDir dir_;
  int port_ = 0;
  std::string url_, config_;
  testlib::ServeProcess serve_;
};

TEST_F(ServeOnSlurm, AFractionalJobRunsAsASlurmJobOnAShard) {
  StartServer();
  const int64_t id = Submit(
      "--name frac --gpu-milli 250 --gpu-memory 8GiB -- sh -c 'env | grep -E "
      "\"^(CUDA|TESSERA|SLURM_SHARDS|SLURM_JOB_NAME|SLURMD_NODENAME)\" | "
      "sort'");
  const Json done = WaitForEnd(id);
  ASSERT_EQ(done.value("state", ""), "succeeded") << done.dump();
  EXPECT_EQ(done["exit_code"], 0);
  const std::string logs = Logs(id);
  EXPECT_THAT(logs, HasSubstr("SLURM_SHARDS_ON_NODE=25"));
  EXPECT_THAT(
      logs, HasSubstr("SLURM_JOB_NAME=" + prefix_ + "-" + std::to_string(id)));
  EXPECT_THAT(logs, HasSubstr("TESSERA_JOB_ID=" + std::to_string(id)));
  EXPECT_THAT(logs, HasSubstr("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25"));
  EXPECT_THAT(logs, HasSubstr("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=8192M"));
  // The GPU tessera chose is the one the job sees where the node's GPUs
  // are pinned (n1).
  const size_t at = logs.find("TESSERA_GPUS=");
  ASSERT_NE(at, std::string::npos);
  const std::string gpu = logs.substr(at + 13, logs.find('\n', at) - at - 13);
  if (gpu.rfind("n1/gpu", 0) == 0) {
    EXPECT_THAT(logs, HasSubstr("CUDA_VISIBLE_DEVICES=" + gpu.substr(6)));
  }
  const auto slurm = SlurmJobsOf(id);
  ASSERT_EQ(slurm.size(), 1u);
  EXPECT_EQ(slurm[0].state, "COMPLETED");
}

TEST_F(ServeOnSlurm, TwoFractionalJobsShareOneGpu) {
  StartServer();
  // Keep both on n1, whose GPUs are pinned.
  ASSERT_EQ(Cli("drain n2", kRoot).exit_code, 0);
  // Both run until the test creates the gate file.
  const std::string gate = dir_.File("gate");
  const std::string gated =
      "--gpu-milli 500 --gpu-memory 10GiB -- sh -c "
      "'while [ ! -e " +
      gate + " ]; do sleep 0.1; done'";
  const int64_t a = Submit(gated);
  const int64_t b = Submit(gated);
  const bool together = WaitUntil(20, [&] {
    const auto sa = SlurmJobsOf(a), sb = SlurmJobsOf(b);
    return sa.size() == 1 && sb.size() == 1 && sa[0].state == "RUNNING" &&
           sb[0].state == "RUNNING";
  });
  ASSERT_TRUE(together) << "not both running in Slurm at once";
  const Json ja = Job(a), jb = Job(b);
  EXPECT_EQ(ja["state"], "running");
  EXPECT_EQ(jb["state"], "running");
  EXPECT_EQ(ja["allocation"][0]["gpu"], jb["allocation"][0]["gpu"]);
  // Slurm put both on that GPU.
  const std::string gpu = ja["allocation"][0]["gpu"];
  const int index = std::stoi(gpu.substr(gpu.find("gpu") + 3));
  EXPECT_EQ(SlurmJobsOf(a)[0].gpu_indices, std::vector<int>{index});
  EXPECT_EQ(SlurmJobsOf(b)[0].gpu_indices, std::vector<int>{index});
  std::ofstream(gate).put('\n');
  EXPECT_EQ(WaitForEnd(a)["state"], "succeeded");
  EXPECT_EQ(WaitForEnd(b)["state"], "succeeded");
}

TEST_F(ServeOnSlurm, ASplitModelRunsAsAHeterogeneousJobOnBothNodes) {
  // ResNet-50 at batch 1 reserves ~346 MiB under the PyTorch runtime
  // model (a reserved peak of 250 MiB: caching-allocator segments, cuBLAS's
  // workspace and cuDNN's benchmark trials; plus the queue's 96 MiB of
  // slack): no node's GPUs hold it alone (n1: 2 x 150 MiB, n2: 300 MiB),
  // both together do.
  WriteConfig(
      "  - {name: n1, cpu_milli: 16000, memory: 16000MiB, gpus: [{kind: "
      "a100-80gb, count: 2, memory: 150MiB}]}\n"
      "  - {name: n2, cpu_milli: 16000, memory: 16000MiB, gpus: [{kind: "
      "a100-80gb, count: 1, memory: 300MiB}]}\n",
      "gpu");
  StartServer();
  const int64_t id = Submit(
      "--model '" + std::string(TESSERA_SOURCE_DIR) +
      "/models/zoo/resnet50.onnx' --batch 1 -- sh -c 'echo "
      "part=$TESSERA_PART node=$SLURMD_NODENAME plan=${TESSERA_PLAN:+yes} "
      "map=${TESSERA_DEVICE_MAP:+yes} nodes=$TESSERA_NODES'");
  const Json done = WaitForEnd(id, 60);
  ASSERT_EQ(done.value("state", ""), "succeeded") << done.dump();
  // One heterogeneous job: a component on each node, both completed.
  const auto slurm = SlurmJobsOf(id);
  ASSERT_EQ(slurm.size(), 2u);
  EXPECT_NE(slurm[0].het_job_id, 0);
  EXPECT_EQ(slurm[0].het_job_id, slurm[1].het_job_id);
  EXPECT_EQ(slurm[0].state, "COMPLETED");
  EXPECT_EQ(slurm[0].nodes, "n1");
  EXPECT_EQ(slurm[1].nodes, "n2");
  const std::string logs = Logs(id);
  EXPECT_THAT(logs, HasSubstr("part=0 node=n1 plan=yes map=yes nodes=n1,n2"));
  EXPECT_THAT(logs, HasSubstr("part=1 node=n2 plan=yes map=yes nodes=n1,n2"));
}

TEST_F(ServeOnSlurm, CancelInTesseraCancelsInSlurm) {
  StartServer();
  const int64_t id = Submit("--gpu-milli 100 --gpu-memory 1GiB -- sleep 300");
  ASSERT_TRUE(WaitUntil(20, [&] {
    const auto s = SlurmJobsOf(id);
    return s.size() == 1 && s[0].state == "RUNNING";
  }));
  ASSERT_EQ(Cli("cancel " + std::to_string(id)).exit_code, 0);
  const Json done = WaitForEnd(id);
  EXPECT_EQ(done["state"], "cancelled") << done.dump();
  EXPECT_EQ(SlurmJobsOf(id)[0].state, "CANCELLED");
}

TEST_F(ServeOnSlurm, AFailingCommandEndsFailedWithItsExitCode) {
  StartServer();
  const int64_t id = Submit("--gpus 1 -- sh -c 'echo bad >&2; exit 7'");
  const Json done = WaitForEnd(id);
  EXPECT_EQ(done["state"], "failed") << done.dump();
  EXPECT_EQ(done["exit_code"], 7);
  EXPECT_EQ(done["reason"], "exit code 7");
  EXPECT_THAT(Cli("logs --stderr " + std::to_string(id)).out, HasSubstr("bad"));
}

TEST_F(ServeOnSlurm, AJobSlurmRefusesFailsWithSlurmsMessage) {
  WriteConfig(kNodes, "no-such-partition");
  StartServer();
  const int64_t id = Submit("--gpu-milli 100 --gpu-memory 1GiB -- true");
  const Json done = WaitForEnd(id);
  EXPECT_EQ(done["state"], "failed") << done.dump();
  EXPECT_THAT(done.value("reason", ""),
              HasSubstr("Slurm refused the job: sbatch: "));
  EXPECT_THAT(done.value("reason", ""),
              HasSubstr("Invalid partition name specified"));
}

TEST_F(ServeOnSlurm, ARestartedServiceRecoversEveryJob) {
  StartServer();
  ASSERT_EQ(Cli("drain n2", kRoot).exit_code, 0);
  // Ends while the service is down (exit 0 and exit 3), runs across the
  // restart, is cancelled after it, and waits in the queue (n1's four GPUs
  // are taken). The jobs end when the test creates their gate file.
  const std::string gate = dir_.File("gate"), gate2 = dir_.File("gate2");
  auto until = [](const std::string& file, const std::string& then) {
    return "-- sh -c 'while [ ! -e " + file + " ]; do sleep 0.1; done" + then +
           "'";
  };
  const int64_t ok = Submit("--gpus 1 " + until(gate, ""));
  const int64_t bad = Submit("--gpus 1 " + until(gate, "; exit 3"));
  const int64_t across = Submit("--gpus 1 " + until(gate2, ""));
  const int64_t cancel = Submit("--gpus 1 -- sleep 300");
  const int64_t queued = Submit("--gpus 1 -- true");
  for (int64_t id : {ok, bad, across, cancel}) {
    ASSERT_TRUE(WaitUntil(20,
                          [&] {
                            const auto s = SlurmJobsOf(id);
                            return s.size() == 1 && s[0].state == "RUNNING";
                          }))
        << "job " << id << ": " << Job(id).dump();
    EXPECT_EQ(Job(id)["state"], "running");
  }
  EXPECT_EQ(Job(queued)["state"], "queued");
  StopServer(SIGKILL);
  // The first two end in Slurm meanwhile.
  std::ofstream(gate).put('\n');
  ASSERT_TRUE(WaitUntil(20, [&] {
    const auto a = SlurmJobsOf(ok), b = SlurmJobsOf(bad);
    return a.size() == 1 && b.size() == 1 && a[0].state == "COMPLETED" &&
           b[0].state == "FAILED";
  })) << "the gated jobs did not end in Slurm";
  StartServer();
  const Json j_ok = WaitForEnd(ok), j_bad = WaitForEnd(bad);
  EXPECT_EQ(j_ok["state"], "succeeded") << j_ok.dump();
  EXPECT_EQ(j_ok["exit_code"], 0);
  EXPECT_EQ(j_bad["state"], "failed") << j_bad.dump();
  EXPECT_EQ(j_bad["exit_code"], 3);
  EXPECT_EQ(Job(across)["state"], "running");
  ASSERT_EQ(Cli("cancel " + std::to_string(cancel)).exit_code, 0);
  EXPECT_EQ(WaitForEnd(cancel)["state"], "cancelled");
  EXPECT_EQ(Job(across)["state"], "running");
  std::ofstream(gate2).put('\n');
  EXPECT_EQ(WaitForEnd(across)["state"], "succeeded");
  EXPECT_EQ(WaitForEnd(queued)["state"], "succeeded");
  // Each job ran once in Slurm: none was submitted again.
  for (int64_t id : {ok, bad, across, cancel, queued}) {
    EXPECT_EQ(SlurmJobsOf(id).size(), 1u) << id;
  }
  const RunResult cluster = Cli("cluster --json");
  ASSERT_EQ(cluster.exit_code, 0);
  const Json gpus = Json::parse(cluster.out)["gpus"];  // outlives the loop
  ASSERT_FALSE(gpus.empty());
  for (const Json& g : gpus) {
    EXPECT_EQ(g["reserved_milli"], 0) << g.dump();
  }
}

}  // namespace
}  // namespace tessera
