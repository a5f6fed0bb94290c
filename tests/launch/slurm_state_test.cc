// Parsing Slurm's answers, over output captured from Slurm 22.05 (Debian
// 12's slurm-wlm) on the test cluster of tests/slurm/: node n1 with pinned
// GPUs (GRES types idx0..idx3), node n2 with untyped gpu:4,shard:400.
#include "launch/slurm/slurm_state.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "tests/testlib/repo_paths.h"

namespace tessera::launch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::string Captured(const std::string& name) {
  std::ifstream in(std::string(TESSERA_SOURCE_DIR) + "/tests/data/slurm/" +
                   name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

const SlurmJob& ById(const std::vector<SlurmJob>& jobs, int64_t id) {
  for (const SlurmJob& j : jobs) {
    if (j.job_id == id) return j;
  }
  ADD_FAILURE() << "no job " << id;
  static const SlurmJob kNone;
  return kNone;
}

TEST(SlurmState, ParsesCapturedJobRecords) {
  auto jobs = ParseScontrolJobs(Captured("scontrol_show_job.txt"));
  ASSERT_TRUE(jobs) << jobs.error().message;
  ASSERT_EQ(jobs->size(), 8u);
  // 26: a fraction of pinned GPU 2 of n1.
  const SlurmJob& shard = ById(*jobs, 26);
  EXPECT_EQ(shard.name, "tessera-1");
  EXPECT_EQ(shard.state, "RUNNING");
  EXPECT_EQ(shard.nodes, "n1");
  EXPECT_THAT(shard.gpu_indices, ElementsAre(2));
  // 27: two whole GPUs of n2, Slurm's choice.
  EXPECT_THAT(ById(*jobs, 27).gpu_indices, ElementsAre(0, 1));
  // 28: exit 3.
  const SlurmJob& failed = ById(*jobs, 28);
  EXPECT_EQ(failed.state, "FAILED");
  EXPECT_EQ(failed.reason, "NonZeroExitCode");
  EXPECT_EQ(failed.exit_code, 3);
  EXPECT_EQ(failed.exit_signal, 0);
  EXPECT_THAT(failed.gpu_indices, IsEmpty());  // released once ended
  // 29: scancel.
  EXPECT_EQ(ById(*jobs, 29).state, "CANCELLED");
  EXPECT_EQ(ById(*jobs, 29).exit_signal, 15);
  // 31+32: one heterogeneous job, a component per node.
  const SlurmJob& leader = ById(*jobs, 31);
  const SlurmJob& second = ById(*jobs, 32);
  EXPECT_EQ(leader.het_job_id, 31);
  EXPECT_EQ(second.het_job_id, 31);
  EXPECT_EQ(leader.name, "tessera-6");
  EXPECT_THAT(leader.gpu_indices, ElementsAre(3));
  EXPECT_EQ(second.nodes, "n2");
  EXPECT_THAT(second.gpu_indices, ElementsAre(2));
  // 33: held.
  EXPECT_EQ(ById(*jobs, 33).state, "PENDING");
  EXPECT_EQ(ById(*jobs, 33).reason, "JobHeldUser");
  EXPECT_EQ(ById(*jobs, 26).het_job_id, 0);
}

TEST(SlurmState, ValuesWithSpacesAndNoJobs) {
  auto jobs = ParseScontrolJobs(
      "JobId=7 JobName=tessera-3 JobState=COMPLETED ExitCode=0:0 "
      "Comment=tessera job 3 of alice [0a1b2c3d] StdOut=/tmp/my logs/3.out\n");
  ASSERT_TRUE(jobs);
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_EQ((*jobs)[0].comment, "tessera job 3 of alice [0a1b2c3d]");
  EXPECT_TRUE(ParseScontrolJobs("No jobs in the system\n")->empty());
  EXPECT_TRUE(ParseScontrolJobs("")->empty());
  auto bad = ParseScontrolJobs("slurm_load_jobs error: something\n");
  ASSERT_FALSE(bad);
  EXPECT_THAT(bad.error().message, HasSubstr("no JobId"));
}

TEST(SlurmState, GresIndices) {
  EXPECT_THAT(ParseGresIndices("gpu:idx1:1(IDX:1),gpu:idx3:1(IDX:3)"),
              ElementsAre(1, 3));
  EXPECT_THAT(ParseGresIndices("gpu:2(IDX:0-1)"), ElementsAre(0, 1));
  EXPECT_THAT(ParseGresIndices("gpu:3(IDX:0,2-3)"), ElementsAre(0, 2, 3));
  EXPECT_THAT(ParseGresIndices("shard:25(IDX:0)"), ElementsAre(0));
  EXPECT_THAT(ParseGresIndices(""), IsEmpty());
  EXPECT_THAT(ParseGresIndices("gpu:1(IDX:N/A)"), IsEmpty());
}

SlurmOutcome Outcome(const std::string& state, int code = 0, int signal = 0,
                     const std::string& reason = "None") {
  SlurmJob job;
  job.state = state;
  job.exit_code = code;
  job.exit_signal = signal;
  job.reason = reason;
  return ClassifySlurmJob(job);
}

TEST(SlurmState, MapsStatesToTesserasOutcomes) {
  EXPECT_EQ(Outcome("PENDING").phase, SlurmPhase::kPending);
  EXPECT_EQ(Outcome("REQUEUED").phase, SlurmPhase::kPending);
  for (const char* active : {"RUNNING", "COMPLETING", "SUSPENDED",
                             "CONFIGURING", "SIGNALING", "SOMETHING_NEW"}) {
    EXPECT_EQ(Outcome(active).phase, SlurmPhase::kActive) << active;
  }
  SlurmOutcome ok = Outcome("COMPLETED");
  EXPECT_EQ(ok.phase, SlurmPhase::kEnded);
  EXPECT_EQ(ok.exit_code, 0);
  SlurmOutcome failed = Outcome("FAILED", 3, 0, "NonZeroExitCode");
  EXPECT_EQ(failed.exit_code, 3);
  SlurmOutcome signalled = Outcome("FAILED", 0, 9);
  EXPECT_FALSE(signalled.exit_code);
  EXPECT_THAT(signalled.reason, HasSubstr("signal 9"));
  SlurmOutcome launch = Outcome("FAILED", 0, 0, "JobLaunchFailure");
  EXPECT_FALSE(launch.exit_code);
  EXPECT_THAT(launch.reason, HasSubstr("JobLaunchFailure"));
  SlurmOutcome cancelled = Outcome("CANCELLED", 0, 15);
  EXPECT_TRUE(cancelled.cancelled);
  EXPECT_FALSE(cancelled.exit_code);
  EXPECT_TRUE(Outcome("CANCELLED by 0").cancelled);
  EXPECT_THAT(Outcome("TIMEOUT").reason, HasSubstr("TIMEOUT"));
  EXPECT_THAT(Outcome("NODE_FAIL").reason, HasSubstr("NODE_FAIL"));
  EXPECT_THAT(Outcome("OUT_OF_MEMORY", 0, 125).reason,
              HasSubstr("OUT_OF_MEMORY"));
  EXPECT_EQ(Outcome("PREEMPTED").phase, SlurmPhase::kEnded);
}

TEST(SlurmState, ParsesCapturedNodes) {
  auto nodes = ParseScontrolNodes(Captured("scontrol_show_node.txt"));
  ASSERT_TRUE(nodes) << nodes.error().message;
  ASSERT_EQ(nodes->size(), 2u);
  const SlurmNode& n1 = nodes->at("n1");
  EXPECT_EQ(n1.gpus, 4);
  EXPECT_EQ(n1.shards, 400);
  EXPECT_EQ(n1.shards_per_gpu(), 100);
  EXPECT_TRUE(n1.gpus_pinned);
  EXPECT_TRUE(n1.shards_pinned);
  const SlurmNode& n2 = nodes->at("n2");
  EXPECT_EQ(n2.gpus, 4);
  EXPECT_EQ(n2.shards_per_gpu(), 100);
  EXPECT_FALSE(n2.gpus_pinned);
  EXPECT_FALSE(n2.shards_pinned);
}

TEST(SlurmState, NodeGresVariants) {
  auto nodes = ParseScontrolNodes(
      "NodeName=a Gres=gpu:a100:2(S:0-1),gpu:v100:2 State=IDLE\n"
      "NodeName=b Gres=(null) State=DOWN+DRAIN\n"
      "NodeName=c Gres=gpu:idx0:1,gpu:idx1:1,shard:200 State=MIXED\n"
      "NodeName=d Gres=gpu:idx0:1,gpu:idx0:1 State=IDLE\n");
  ASSERT_TRUE(nodes);
  EXPECT_EQ(nodes->at("a").gpus, 4);
  EXPECT_FALSE(nodes->at("a").gpus_pinned);  // typed, but not per GPU
  EXPECT_EQ(nodes->at("b").gpus, 0);
  EXPECT_EQ(nodes->at("b").state, "DOWN+DRAIN");
  EXPECT_TRUE(nodes->at("c").gpus_pinned);
  EXPECT_FALSE(nodes->at("c").shards_pinned);
  EXPECT_EQ(nodes->at("c").shards_per_gpu(), 100);
  EXPECT_FALSE(nodes->at("d").gpus_pinned);  // idx0 twice
}

// The Gres= of `scontrol show node -o` for gres/mps, as Slurm 22.05
// printed it for the nodes of tests/slurm/slurm_up.sh given mps GRES
// (GresTypes=gpu,shard,mps): pinned per GPU, and untyped beside shards.
TEST(SlurmState, NodeMpsGres) {
  auto nodes = ParseScontrolNodes(
      "NodeName=n1 Arch=x86_64 Gres=gpu:idx0:1,gpu:idx1:1,gpu:idx2:1,"
      "gpu:idx3:1,mps:idx0:100,mps:idx1:100,mps:idx2:100,mps:idx3:100 "
      "State=IDLE\n"
      "NodeName=n2 Arch=x86_64 Gres=gpu:4,shard:400,mps:400 State=IDLE\n"
      "NodeName=e Gres=gpu:2,mps:300 State=IDLE\n"
      "NodeName=f Gres=gpu:idx0:1,gpu:idx1:1,mps:idx0:100,mps:idx1:50 "
      "State=IDLE\n"
      "NodeName=g Gres=gpu:4,shard:400 State=IDLE\n");
  ASSERT_TRUE(nodes) << nodes.error().message;
  const SlurmNode& n1 = nodes->at("n1");
  EXPECT_EQ(n1.mps, 400);
  EXPECT_EQ(n1.mps_per_gpu(), 100);
  EXPECT_TRUE(n1.mps_pinned);
  EXPECT_EQ(n1.shards, 0);
  EXPECT_TRUE(n1.gpus_pinned);
  const SlurmNode& n2 = nodes->at("n2");
  EXPECT_EQ(n2.gpus, 4);
  EXPECT_EQ(n2.mps, 400);
  EXPECT_EQ(n2.shards, 400);
  EXPECT_FALSE(n2.mps_pinned);
  EXPECT_EQ(nodes->at("e").mps_per_gpu(), 150);
  EXPECT_FALSE(nodes->at("f").mps_pinned);  // unequal counts
  EXPECT_EQ(nodes->at("f").mps, 150);
  EXPECT_EQ(nodes->at("g").mps, 0);
  EXPECT_EQ(nodes->at("g").mps_per_gpu(), 0);
}

TEST(SlurmState, TellsTransientErrorsFromRefusals) {
  // As printed by Slurm 22.05's commands.
  EXPECT_TRUE(IsTransientSlurmError(
      "sbatch: error: Batch job submission failed: Unable to contact slurm "
      "controller (connect failure)"));
  EXPECT_TRUE(IsTransientSlurmError(
      "slurm_load_jobs error: Unable to contact slurm controller (connect "
      "failure)"));
  EXPECT_TRUE(IsTransientSlurmError(
      "sbatch: error: Batch job submission failed: Socket timed out on "
      "send/recv operation"));
  EXPECT_FALSE(IsTransientSlurmError(
      "sbatch: error: Batch job submission failed: Invalid partition name "
      "specified"));
  EXPECT_FALSE(IsTransientSlurmError(
      "sbatch: error: Batch job submission failed: Requested node "
      "configuration is not available"));
  EXPECT_FALSE(IsTransientSlurmError(
      "sbatch: error: Batch job submission failed: Invalid node name "
      "specified"));
}

}  // namespace
}  // namespace tessera::launch
