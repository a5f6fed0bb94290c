// What tessera asks sbatch for: GRES from tessera's reservation (pinned and
// untyped nodes), one heterogeneous component per node, the batch script's
// environment, and the requests Slurm could not honour.
#include "launch/slurm/slurm_sbatch_internal.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

namespace tessera::launch {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

// n1: GPUs pinned (gres types idx0..idx3, 100 shards each); n2: gpu:4,
// shard:400 untyped; n3: GPUs without shards or mps; m1: GPUs and mps
// pinned (100 mps each); m2: gpu:4, shard:400, mps:800 untyped.
std::map<std::string, SlurmNode> Nodes() {
  SlurmNode n1{"n1", "IDLE", 4, 400, true, true};
  SlurmNode n2{"n2", "IDLE", 4, 400, false, false};
  SlurmNode n3{"n3", "IDLE", 2, 0, false, false};
  SlurmNode m1{"m1", "IDLE", 4, 0, true, false, 400, true};
  SlurmNode m2{"m2", "IDLE", 4, 400, false, false, 800, false};
  return {{"n1", n1}, {"n2", n2}, {"n3", n3}, {"m1", m1}, {"m2", m2}};
}

LaunchPart Fraction(const std::string& node, std::vector<int> gpus, int milli,
                    int64_t mib) {
  LaunchPart p;
  p.node = node;
  p.gpu_indices = std::move(gpus);
  p.gpu_milli.assign(p.gpu_indices.size(), milli);
  p.gpu_memory_mib.assign(p.gpu_indices.size(), mib);
  return p;
}

LaunchSpec Spec(std::vector<LaunchPart> parts) {
  LaunchSpec spec;
  spec.id = 12;
  spec.user = "alice";
  spec.command = {"python", "train.py", "--name", "it's"};
  spec.log_dir = "/var/log/tessera";
  spec.env = {{"CUDA_VISIBLE_DEVICES", "2"},
              {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "25"},
              {"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "0=8192M"},
              {"TESSERA_JOB_ID", "12"},
              {"TESSERA_GPUS", "n1/gpu2"},
              {"TESSERA_NODE", "n1"},
              {"TESSERA_NODES", "n1"},
              {"MY_FLAG", "a b;$(rm -rf /)"}};
  spec.parts = std::move(parts);
  spec.parts[0].cpu_milli = 2500;
  spec.parts[0].memory_mib = 4096;
  return spec;
}

bool Has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

TEST(SlurmSbatch, FractionOnAPinnedGpuAsksForThatGpusShards) {
  SlurmOptions options;
  options.partition = "gpu";
  options.instance = "0a1b2c3d";
  auto job =
      BuildSbatchJob(Spec({Fraction("n1", {2}, 250, 8192)}), options, Nodes());
  ASSERT_TRUE(job) << job.error().message;
  const auto& o = job->options;
  EXPECT_TRUE(Has(o, "--parsable"));
  EXPECT_TRUE(Has(o, "--job-name=tessera-12"));
  EXPECT_TRUE(Has(o, "--comment=tessera job 12 of alice [0a1b2c3d]"));
  EXPECT_TRUE(Has(o, "--output=/var/log/tessera/12.out"));
  EXPECT_TRUE(Has(o, "--error=/var/log/tessera/12.err"));
  EXPECT_TRUE(Has(o, "--open-mode=append"));
  EXPECT_TRUE(Has(o, "--nodelist=n1"));
  EXPECT_TRUE(Has(o, "--gres=shard:idx2:25"));
  EXPECT_TRUE(Has(o, "--cpus-per-task=3"));
  EXPECT_TRUE(Has(o, "--mem=4096M"));
  EXPECT_TRUE(Has(o, "--partition=gpu"));
  EXPECT_THAT(o, Not(Contains(":")));
  // The script: tessera's variables but Slurm's CUDA_VISIBLE_DEVICES.
  const std::string& s = job->script;
  EXPECT_THAT(s, HasSubstr("#!/bin/bash\n"));
  EXPECT_THAT(s, HasSubstr("export TESSERA_JOB_ID='12'\n"));
  EXPECT_THAT(s, HasSubstr("export TESSERA_GPUS='n1/gpu2'\n"));
  EXPECT_THAT(s, HasSubstr("export MY_FLAG='a b;$(rm -rf /)'\n"));
  EXPECT_THAT(s, Not(HasSubstr("CUDA_VISIBLE_DEVICES")));
  EXPECT_THAT(s, HasSubstr("export TESSERA_PART='0' TESSERA_NODE='n1' "
                           "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE='25' "
                           "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT='0=8192M'\n"));
  EXPECT_THAT(s, HasSubstr("exec 'python' 'train.py' '--name' 'it'\\''s'\n"));
  EXPECT_THAT(s, Not(HasSubstr("srun")));
}

TEST(SlurmSbatch, ShardsFromMilli) {
  EXPECT_EQ(ShardsFor(250, 100), 25);
  EXPECT_EQ(ShardsFor(1000, 100), 100);
  EXPECT_EQ(ShardsFor(333, 100), 33);  // floor: what fits tessera fits Slurm
  EXPECT_EQ(ShardsFor(5, 100), 1);     // at least one
  EXPECT_EQ(ShardsFor(250, 8), 2);
  EXPECT_EQ(ShardsFor(999, 1000), 999);
  // Three jobs of 333 milli fit one GPU in tessera and in Slurm.
  EXPECT_LE(3 * ShardsFor(333, 7), 7);
}

TEST(SlurmSbatch, WholeGpus) {
  LaunchPart pinned = Fraction("n1", {3, 1}, 1000, 81920);
  pinned.exclusive = true;
  auto job = BuildSbatchJob(Spec({pinned}), SlurmOptions{}, Nodes());
  ASSERT_TRUE(job) << job.error().message;
  EXPECT_TRUE(Has(job->options, "--gres=gpu:idx1:1,gpu:idx3:1"));
  EXPECT_THAT(job->script, Not(HasSubstr("CUDA_MPS")));
  LaunchPart untyped = pinned;
  untyped.node = "n2";
  job = BuildSbatchJob(Spec({untyped}), SlurmOptions{}, Nodes());
  ASSERT_TRUE(job) << job.error().message;
  EXPECT_TRUE(Has(job->options, "--gres=gpu:2"));
  EXPECT_THAT(job->options, Not(Contains(HasSubstr("--partition"))));
}

TEST(SlurmSbatch, FractionOnAnUntypedNodeLeavesTheGpuToSlurm) {
  auto job = BuildSbatchJob(Spec({Fraction("n2", {1}, 500, 1024)}),
                            SlurmOptions{}, Nodes());
  ASSERT_TRUE(job) << job.error().message;
  EXPECT_TRUE(Has(job->options, "--gres=shard:50"));
}

TEST(SlurmSbatch, FractionsOfSeveralGpusInIndexOrder) {
  LaunchPart p = Fraction("n1", {3, 2}, 300, 0);
  p.gpu_memory_mib = {6000, 8000};
  auto job = BuildSbatchJob(Spec({p}), SlurmOptions{}, Nodes());
  ASSERT_TRUE(job) << job.error().message;
  EXPECT_TRUE(Has(job->options, "--gres=shard:idx2:30,shard:idx3:30"));
  // Slurm's CUDA_VISIBLE_DEVICES is 2,3: device 0 is GPU 2.
  EXPECT_THAT(job->script,
              HasSubstr("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT='0=8000M,1=6000M'"));
}

TEST(SlurmSbatch, ASplitJobIsOneHeterogeneousJobWithAComponentPerNode) {
  SlurmOptions options;
  options.partition = "gpu";
  options.account = "ml";
  options.sbatch_args = {"--qos=high"};
  LaunchSpec spec =
      Spec({Fraction("n1", {0, 1}, 300, 8000), Fraction("n2", {3}, 400, 6000)});
  auto job = BuildSbatchJob(spec, options, Nodes());
  ASSERT_TRUE(job) << job.error().message;
  const auto& o = job->options;
  const auto colon = std::find(o.begin(), o.end(), ":");
  ASSERT_NE(colon, o.end());
  const std::vector<std::string> first(o.begin(), colon);
  const std::vector<std::string> second(colon + 1, o.end());
  EXPECT_TRUE(Has(first, "--nodelist=n1"));
  EXPECT_TRUE(Has(first, "--gres=shard:idx0:30,shard:idx1:30"));
  EXPECT_TRUE(Has(first, "--cpus-per-task=3"));
  EXPECT_TRUE(Has(second, "--nodelist=n2"));
  EXPECT_TRUE(Has(second, "--gres=shard:40"));
  EXPECT_TRUE(Has(second, "--cpus-per-task=1"));
  for (const auto* component : {&first, &second}) {
    EXPECT_TRUE(Has(*component, "--partition=gpu"));
    EXPECT_TRUE(Has(*component, "--account=ml"));
    EXPECT_TRUE(Has(*component, "--qos=high"));
    EXPECT_TRUE(Has(*component, "--nodes=1"));
  }
  EXPECT_EQ(std::count(o.begin(), o.end(), ":"), 1);
  const std::string& s = job->script;
  EXPECT_THAT(s, HasSubstr("srun --het-group=0 env TESSERA_PART='0' "
                           "TESSERA_NODE='n1' "
                           "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE='30' "
                           "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT='0=8000M,1=8000M' "
                           "'python' 'train.py' '--name' 'it'\\''s' &\n"));
  EXPECT_THAT(s, HasSubstr("srun --het-group=1 env TESSERA_PART='1' "
                           "TESSERA_NODE='n2' "));
  EXPECT_THAT(s, HasSubstr("wait -n"));
  EXPECT_THAT(s, HasSubstr("exit $rc"));
}

TEST(SlurmSbatch, RefusesWhatSlurmCannotBeAskedFor) {
  auto message = [](const LaunchSpec& spec, SlurmOptions options = {}) {
    auto job = BuildSbatchJob(spec, options, Nodes());
    EXPECT_FALSE(job);
    if (job) return std::string();
    EXPECT_EQ(job.error().code, ErrorCode::kBadInput);
    return job.error().message;
  };
  EXPECT_THAT(
      message(Spec({Fraction("n9", {0}, 250, 1)})),
      HasSubstr("node 'n9' is not a Slurm node (Slurm has m1, m2, n1, n2, "
                "n3)"));
  EXPECT_THAT(message(Spec({Fraction("n2", {5}, 250, 1)})),
              HasSubstr("has 4 GPUs in Slurm's gpu GRES"));
  EXPECT_THAT(message(Spec({Fraction("n3", {0}, 250, 1)})),
              HasSubstr("no shard GRES"));
  EXPECT_THAT(message(Spec({Fraction("n2", {0, 1}, 250, 1)})),
              HasSubstr("untyped shard GRES cannot express"));
  SlurmOptions too_many;
  too_many.shards_per_gpu = 1000;
  EXPECT_THAT(message(Spec({Fraction("n1", {0}, 250, 1)}), too_many),
              HasSubstr("100 shards per GPU in Slurm, fewer than "
                        "shards_per_gpu 1000"));
  LaunchSpec bad_env = Spec({Fraction("n1", {0}, 250, 1)});
  bad_env.env["NOT-A-NAME"] = "x";
  EXPECT_THAT(message(bad_env), HasSubstr("'NOT-A-NAME' is not a variable"));
  LaunchSpec empty = Spec({Fraction("n1", {0}, 250, 1)});
  empty.command.clear();
  EXPECT_THAT(message(empty), HasSubstr("empty command"));
}

LaunchPart MpsFraction(const std::string& node, std::vector<int> gpus,
                       int milli, int64_t mib) {
  LaunchPart p = Fraction(node, std::move(gpus), milli, mib);
  p.mps = true;
  return p;
}

TEST(SlurmSbatch, MpsFractionOnAPinnedGpuAsksForThatGpusMps) {
  auto job = BuildSbatchJob(Spec({MpsFraction("m1", {2}, 250, 8192)}),
                            SlurmOptions{}, Nodes());
  ASSERT_TRUE(job) << job.error().message;
  EXPECT_TRUE(Has(job->options, "--gres=mps:idx2:25"));
  EXPECT_THAT(job->options, Not(Contains(HasSubstr("shard"))));
  // The limits tessera reserved, as for shards (Slurm's own
  // CUDA_MPS_ACTIVE_THREAD_PERCENTAGE is overridden: docs/slurm.md).
  EXPECT_THAT(job->script,
              HasSubstr("export TESSERA_PART='0' TESSERA_NODE='m1' "
                        "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE='25' "
                        "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT='0=8192M'\n"));
}

TEST(SlurmSbatch, MpsFractionOnAnUntypedNodeCountsByTheNodesMpsPerGpu) {
  // m2: 800 mps over 4 GPUs, 200 a GPU; the configured shards_per_gpu is
  // for shards only.
  SlurmOptions options;
  options.shards_per_gpu = 10;
  auto job = BuildSbatchJob(Spec({MpsFraction("m2", {3}, 250, 1024)}), options,
                            Nodes());
  ASSERT_TRUE(job) << job.error().message;
  EXPECT_TRUE(Has(job->options, "--gres=mps:50"));
  job =
      BuildSbatchJob(Spec({MpsFraction("m2", {0}, 2, 1024)}), options, Nodes());
  ASSERT_TRUE(job) << job.error().message;
  EXPECT_TRUE(Has(job->options, "--gres=mps:1"));  // at least one
}

TEST(SlurmSbatch, WithoutMpsOrWholeGpusTheRequestIsUnchanged) {
  // An mps node's part without mps (isolation none): shards as before.
  auto job = BuildSbatchJob(Spec({Fraction("m2", {1}, 500, 1024)}),
                            SlurmOptions{}, Nodes());
  ASSERT_TRUE(job) << job.error().message;
  EXPECT_TRUE(Has(job->options, "--gres=shard:50"));
  // Whole GPUs of an mps node are gpu GRES (Slurm allocates a GPU as gpu
  // or as mps, never both to one job).
  LaunchPart whole = MpsFraction("m1", {3, 0}, 1000, 81920);
  whole.exclusive = true;
  job = BuildSbatchJob(Spec({whole}), SlurmOptions{}, Nodes());
  ASSERT_TRUE(job) << job.error().message;
  EXPECT_TRUE(Has(job->options, "--gres=gpu:idx0:1,gpu:idx3:1"));
  EXPECT_THAT(job->script, Not(HasSubstr("CUDA_MPS")));
}

TEST(SlurmSbatch, ASplitJobMixesMpsAndShardComponents) {
  auto job = BuildSbatchJob(
      Spec({MpsFraction("m1", {1}, 300, 8000), Fraction("n2", {3}, 400, 6000)}),
      SlurmOptions{}, Nodes());
  ASSERT_TRUE(job) << job.error().message;
  const auto& o = job->options;
  const auto colon = std::find(o.begin(), o.end(), ":");
  ASSERT_NE(colon, o.end());
  EXPECT_TRUE(
      Has(std::vector<std::string>(o.begin(), colon), "--gres=mps:idx1:30"));
  EXPECT_TRUE(
      Has(std::vector<std::string>(colon + 1, o.end()), "--gres=shard:40"));
}

TEST(SlurmSbatch, RefusesMpsFractionsSlurmCannotIsolate) {
  auto error = [](const LaunchPart& part) {
    auto job = BuildSbatchJob(Spec({part}), SlurmOptions{}, Nodes());
    EXPECT_FALSE(job);
    return job ? Error{} : job.error();
  };
  // No mps GRES on the node: what to configure, or isolation: none.
  for (const char* node : {"n3", "n1"}) {
    const Error e = error(MpsFraction(node, {0}, 250, 1));
    EXPECT_EQ(e.code, ErrorCode::kBadInput) << node;
    EXPECT_THAT(e.message, HasSubstr("node '" + std::string(node) +
                                     "' is isolation: mps in the config, but "
                                     "Slurm lists no mps GRES on it"));
    EXPECT_THAT(e.message, HasSubstr("GresTypes=gpu,mps"));
    EXPECT_THAT(e.message, HasSubstr("Name=mps Count="));
    EXPECT_THAT(e.message, HasSubstr("isolation: none"));
  }
  // Fractions of two GPUs: gres/mps gives a job one GPU per node, pinned
  // or not (Slurm 22.05 takes mps:idx1:30,mps:idx2:30 as 30 of GPU 1).
  for (const char* node : {"m1", "m2"}) {
    const Error e = error(MpsFraction(node, {1, 2}, 300, 1));
    EXPECT_EQ(e.code, ErrorCode::kInfeasible) << node;
    EXPECT_THAT(e.message, HasSubstr("node '" + std::string(node) +
                                     "': the job holds fractions of 2 of its "
                                     "GPUs, but Slurm's gres/mps gives a job "
                                     "one GPU per node"));
  }
  // A GPU index past Slurm's is still the config's mismatch.
  EXPECT_THAT(error(MpsFraction("m1", {4}, 300, 1)).message,
              HasSubstr("has 4 GPUs in Slurm's gpu GRES"));
}

TEST(SlurmSbatch, ConfiguredShardsPerGpuAndPercentInLogPaths) {
  SlurmOptions options;
  options.shards_per_gpu = 10;
  LaunchSpec spec = Spec({Fraction("n1", {0}, 250, 1)});
  spec.log_dir = "/logs/100%";
  auto job = BuildSbatchJob(spec, options, Nodes());
  ASSERT_TRUE(job) << job.error().message;
  EXPECT_TRUE(Has(job->options, "--gres=shard:idx0:2"));
  EXPECT_TRUE(Has(job->options, "--output=/logs/100%%/12.out"));
}

TEST(SlurmSbatch, ShellQuote) {
  EXPECT_EQ(ShellQuote(""), "''");
  EXPECT_EQ(ShellQuote("a b"), "'a b'");
  EXPECT_EQ(ShellQuote("it's"), "'it'\\''s'");
  EXPECT_EQ(ShellQuote("$HOME `x` \"y\""), "'$HOME `x` \"y\"'");
}

}  // namespace
}  // namespace tessera::launch
