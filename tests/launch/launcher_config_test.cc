// The serve config's `launcher:` section and MakeLauncher.
#include "launch/launcher_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "server/serve_config.h"
#include "tests/testlib/repo_paths.h"

namespace tessera::launch {
namespace {

using server::LoadServeConfig;
using server::ParseServeConfig;
using server::ServeConfig;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A minimal valid config with `launcher` appended (line 4 onwards).
Result<server::ServeConfig> WithLauncher(const std::string& launcher) {
  return server::ParseServeConfig(
      "nodes: [{name: n1, cpu_milli: 1000, memory: 1GiB, gpus: [{kind: t4}]}]\n"
      "users: [{name: a, token_sha256: "
      "bba775a1794a2ccaa524798e32cea98187c9a32d80433d760a92d449bfddff66}]\n"
      "# launcher\n" +
          launcher,
      "serve.yaml");
}

std::string ErrorOf(const std::string& launcher) {
  auto config = WithLauncher(launcher);
  EXPECT_FALSE(config) << launcher;
  return config ? "" : config.error().message;
}

TEST(LauncherConfig, DefaultsToLocal) {
  auto config = WithLauncher("");
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->launcher.kind, "local");
}

TEST(LauncherConfig, SlurmWithEveryKey) {
  auto config = WithLauncher(
      "launcher:\n"
      "  kind: slurm\n"
      "  partition: gpu\n"
      "  account: ml-team\n"
      "  sbatch_args: [--qos=high, --time=24:00:00]\n"
      "  shards_per_gpu: 100\n"
      "  poll_interval_s: 0.5\n"
      "  command_timeout_s: 20\n"
      "  pending_timeout_s: 0\n"
      "  bin_dir: /opt/slurm/bin\n"
      "  slurm_conf: /etc/slurm/slurm.conf\n"
      "  job_prefix: tq\n");
  ASSERT_TRUE(config) << config.error().message;
  const LauncherConfig& l = config->launcher;
  EXPECT_EQ(l.kind, "slurm");
  EXPECT_EQ(l.slurm.partition, "gpu");
  EXPECT_EQ(l.slurm.account, "ml-team");
  EXPECT_THAT(l.slurm.sbatch_args,
              ElementsAre("--qos=high", "--time=24:00:00"));
  EXPECT_EQ(l.slurm.shards_per_gpu, 100);
  EXPECT_DOUBLE_EQ(l.slurm.poll_interval_s, 0.5);
  EXPECT_DOUBLE_EQ(l.slurm.command_timeout_s, 20);
  EXPECT_DOUBLE_EQ(l.slurm.pending_timeout_s, 0);
  EXPECT_EQ(l.slurm.bin_dir, "/opt/slurm/bin");
  EXPECT_EQ(l.slurm.slurm_conf, "/etc/slurm/slurm.conf");
  EXPECT_EQ(l.slurm.job_prefix, "tq");
}

TEST(LauncherConfig, ShortFormsAndFlowMaps) {
  auto config = WithLauncher("launcher: slurm\n");
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->launcher.kind, "slurm");
  config = WithLauncher("launcher: {kind: slurm, partition: gpu}\n");
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->launcher.slurm.partition, "gpu");
  EXPECT_DOUBLE_EQ(config->launcher.slurm.poll_interval_s, 2);
}

TEST(LauncherConfig, ErrorsNameTheLineAndKey) {
  EXPECT_EQ(ErrorOf("launcher: {kind: slurmm}\n"),
            "serve.yaml:4: launcher.kind: unknown launcher kind 'slurmm' "
            "(did you mean 'slurm'? known: local, slurm)");
  EXPECT_THAT(ErrorOf("launcher: {kind: slurm, partiton: gpu}\n"),
              HasSubstr("did you mean 'partition'?"));
  EXPECT_EQ(ErrorOf("launcher: {partition: gpu}\n"),
            "serve.yaml:4: launcher.partition: applies only to kind slurm "
            "(this launcher's kind is 'local')");
  EXPECT_EQ(ErrorOf("launcher:\n  kind: slurm\n  poll_interval_s: 0\n"),
            "serve.yaml:6: launcher.poll_interval_s: '0' must be a number of "
            "seconds > 0 and <= 3600");
  EXPECT_THAT(ErrorOf("launcher: {kind: slurm, command_timeout_s: soon}\n"),
              HasSubstr("launcher.command_timeout_s: 'soon' must be"));
  EXPECT_THAT(ErrorOf("launcher: {kind: slurm, pending_timeout_s: -1}\n"),
              HasSubstr("must be a number of seconds >= 0"));
  EXPECT_THAT(ErrorOf("launcher: {kind: slurm, shards_per_gpu: 2.5}\n"),
              HasSubstr("launcher.shards_per_gpu: '2.5' must be a whole "
                        "number from 0 to 100000"));
  EXPECT_THAT(ErrorOf("launcher: {kind: slurm, partition: [gpu, cpu]}\n"),
              HasSubstr("serve.yaml:4: launcher.partition: expected"));
  EXPECT_THAT(ErrorOf("launcher: {kind: [slurm]}\n"),
              HasSubstr("serve.yaml:4: launcher.kind: expected"));
  EXPECT_THAT(ErrorOf("launcher: {kind: slurm, partition: 'gpu a'}\n"),
              HasSubstr("launcher.partition: 'gpu a' may use only"));
  EXPECT_THAT(ErrorOf("launcher: {kind: slurm, sbatch_args: --qos=x}\n"),
              HasSubstr("launcher.sbatch_args: expected a list"));
  EXPECT_EQ(ErrorOf("launcher:\n  kind: slurm\n  sbatch_args:\n    - --qos=x\n"
                    "    - --gres=gpu:1\n"),
            "serve.yaml:8: launcher.sbatch_args[1]: '--gres=gpu:1' is set by "
            "tessera from the job (node, GPUs, CPU, memory, name, logs) or by "
            "launcher keys (partition, account)");
  EXPECT_THAT(ErrorOf("launcher: {kind: slurm, sbatch_args: [-wn1]}\n"),
              HasSubstr("'-wn1' is set by tessera"));
  EXPECT_THAT(ErrorOf("launcher: {kind: slurm, sbatch_args: [qos]}\n"),
              HasSubstr("expected an sbatch option"));
  EXPECT_THAT(ErrorOf("launcher: [slurm]\n"),
              HasSubstr("launcher: expected a map"));
}

TEST(LauncherConfig, TheSlurmExampleParses) {
  auto config = server::LoadServeConfig(std::string(TESSERA_SOURCE_DIR) +
                                        "/examples/serve-slurm.yaml");
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->launcher.kind, "slurm");
  EXPECT_EQ(config->launcher.slurm.partition, "gpu");
  EXPECT_THAT(config->launcher.slurm.sbatch_args,
              ElementsAre("--time=7-00:00:00"));
}

TEST(LauncherConfig, MakeLauncherChecksSlurmsCommands) {
  LauncherConfig config;
  auto local = MakeLauncher(config, "/tmp/logs", "t.db");
  ASSERT_TRUE(local);
  EXPECT_FALSE((*local)->multi_node());
  config.kind = "slurm";
  config.slurm.bin_dir = "/nonexistent/bin";
  auto missing = MakeLauncher(config, "/tmp/logs", "t.db");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kBadInput);
  EXPECT_EQ(missing.error().message,
            "launcher.bin_dir: no 'sbatch' program in /nonexistent/bin");
}

}  // namespace
}  // namespace tessera::launch
