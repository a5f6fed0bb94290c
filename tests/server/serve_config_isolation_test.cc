// The serve config's keys of issue 31: a node's `isolation`, the top-level
// `share_unisolated` and `gpu_usage`, a pool's `on_oom` and the local
// launcher's `mps_control`; each bad value is an error naming its line,
// its field and what is known.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <string_view>

#include "server/serve_config.h"
#include "tests/testlib/repo_paths.h"

namespace tessera::server {
namespace {

using scheduler::Isolation;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr std::string_view kHash =
    "bba775a1794a2ccaa524798e32cea98187c9a32d80433d760a92d449bfddff66";

// A valid configuration: `node0` is added to node0's map (line 6),
// `pool0` to pool a100's (line 2), and `tail` follows from line 11.
std::string Config(const std::string& node0 = "", const std::string& pool0 = "",
                   std::initializer_list<std::string_view> tail = {}) {
  std::string out =
      "pools:\n"                                                           // 1
      "  - {name: a100, policy: backfill" +                                //
      pool0 +                                                              //
      "}\n"                                                                // 2
      "  - {name: t4}\n"                                                   // 3
      "nodes:\n"                                                           // 4
      "  - {name: node0, pool: a100, cpu_milli: 64000, memory: 256GiB,\n"  // 5
      "     gpus: [{kind: a100-80gb, count: 2}]" +                         //
      node0 +                                                              //
      "}\n"                                                                // 6
      "  - {name: node1, pool: t4, cpu_milli: 32000, memory: 128GiB,\n"    // 7
      "     gpus: [{kind: t4}]}\n"                                         // 8
      "users:\n"                                                           // 9
      "  - {name: alice, token_sha256: " +                                 //
      std::string(kHash) +
      "}\n";  // 10
  for (std::string_view line : tail) out += std::string(line) + "\n";
  return out;
}

Result<ServeConfig> Parse(const std::string& yaml) {
  return ParseServeConfig(yaml, "serve.yaml");
}

// The error of parsing `yaml` (kBadInput), or "" if it parses.
std::string ErrorOf(const std::string& yaml) {
  Result<ServeConfig> config = Parse(yaml);
  if (config) return "";
  EXPECT_EQ(config.error().code, ErrorCode::kBadInput);
  return config.error().message;
}

TEST(ServeConfigIsolation, Defaults) {
  Result<ServeConfig> config = Parse(Config());
  ASSERT_TRUE(config) << config.error().message;
  const Topology& t = config->service.topology;
  // Parsed from a config, unisolated GPUs are not shared unless asked.
  EXPECT_FALSE(t.share_unisolated);
  ASSERT_EQ(t.nodes.size(), 2u);
  EXPECT_EQ(t.nodes[0].isolation, Isolation::kNone);
  EXPECT_EQ(t.nodes[1].isolation, Isolation::kNone);
  EXPECT_FALSE(t.Shareable(0));
  EXPECT_FALSE(t.Shareable(2));
  EXPECT_TRUE(config->service.requeue_oom_pools.empty());
  EXPECT_TRUE(config->measure_gpu_usage);
  EXPECT_EQ(config->nvml_library, "libnvidia-ml.so.1");
  EXPECT_DOUBLE_EQ(config->service.usage_interval_s, 1);
  EXPECT_EQ(config->service.usage_node, "");
  EXPECT_EQ(config->launcher.kind, "local");
  EXPECT_EQ(config->launcher.mps_control, "nvidia-cuda-mps-control");
}

TEST(ServeConfigIsolation, NodeIsolation) {
  Result<ServeConfig> mps = Parse(Config(", isolation: mps"));
  ASSERT_TRUE(mps) << mps.error().message;
  const Topology& t = mps->service.topology;
  EXPECT_EQ(t.nodes[0].isolation, Isolation::kMps);
  EXPECT_EQ(t.nodes[1].isolation, Isolation::kNone);
  EXPECT_TRUE(t.Shareable(0));
  EXPECT_TRUE(t.Shareable(1));
  EXPECT_FALSE(t.Shareable(2));  // node1's

  Result<ServeConfig> none = Parse(Config(", isolation: none"));
  ASSERT_TRUE(none) << none.error().message;
  EXPECT_EQ(none->service.topology.nodes[0].isolation, Isolation::kNone);
  EXPECT_FALSE(none->service.topology.Shareable(0));
}

TEST(ServeConfigIsolation, BadIsolationNamesTheFieldAndTheKnownValues) {
  EXPECT_EQ(ErrorOf(Config(", isolation: mpss")),
            "serve.yaml:6: nodes[0].isolation: unknown isolation 'mpss' (did "
            "you mean 'mps'? known: none, mps)");
  EXPECT_THAT(ErrorOf(Config(", isolation: mig")),
              StartsWith("serve.yaml:6: nodes[0].isolation: unknown isolation "
                         "'mig' ("));
  EXPECT_THAT(ErrorOf(Config(", isolation: mig")), HasSubstr("none, mps"));
  EXPECT_THAT(ErrorOf(Config(", isolation: [mps]")),
              StartsWith("serve.yaml:6: nodes[0].isolation:"));
}

TEST(ServeConfigIsolation, ShareUnisolated) {
  Result<ServeConfig> on = Parse(Config("", "", {"share_unisolated: true"}));
  ASSERT_TRUE(on) << on.error().message;
  EXPECT_TRUE(on->service.topology.share_unisolated);
  EXPECT_TRUE(on->service.topology.Shareable(0));
  EXPECT_TRUE(on->service.topology.Shareable(2));
  Result<ServeConfig> off = Parse(Config("", "", {"share_unisolated: false"}));
  ASSERT_TRUE(off) << off.error().message;
  EXPECT_FALSE(off->service.topology.share_unisolated);
  EXPECT_EQ(ErrorOf(Config("", "", {"share_unisolated: maybe"})),
            "serve.yaml:11: share_unisolated: 'maybe' must be true or false");
}

TEST(ServeConfigIsolation, PoolOnOom) {
  Result<ServeConfig> requeue = Parse(Config("", ", on_oom: requeue"));
  ASSERT_TRUE(requeue) << requeue.error().message;
  EXPECT_EQ(requeue->service.requeue_oom_pools,
            (std::set<std::string>{"a100"}));
  Result<ServeConfig> fail = Parse(Config("", ", on_oom: fail"));
  ASSERT_TRUE(fail) << fail.error().message;
  EXPECT_TRUE(fail->service.requeue_oom_pools.empty());
  EXPECT_EQ(ErrorOf(Config("", ", on_oom: requeu")),
            "serve.yaml:2: pools[0].on_oom: unknown on_oom 'requeu' (did you "
            "mean 'requeue'? known: fail, requeue)");
  EXPECT_THAT(ErrorOf(Config("", ", on_oom: retry")),
              StartsWith("serve.yaml:2: pools[0].on_oom: unknown on_oom "
                         "'retry' ("));
  EXPECT_THAT(ErrorOf(Config("", ", on_oom: retry")),
              HasSubstr("fail, requeue"));
}

TEST(ServeConfigIsolation, GpuUsageMap) {
  Result<ServeConfig> config = Parse(
      Config("", "",
             {"gpu_usage: {library: /opt/nvidia/libnvml.so, interval_s: 2, "
              "node: node1}"}));
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_TRUE(config->measure_gpu_usage);
  EXPECT_EQ(config->nvml_library, "/opt/nvidia/libnvml.so");
  EXPECT_DOUBLE_EQ(config->service.usage_interval_s, 2);
  EXPECT_EQ(config->service.usage_node, "node1");
  // The bounds themselves are allowed.
  for (const char* bound : {"0.05", "3600"}) {
    Result<ServeConfig> at = Parse(Config(
        "", "", {"gpu_usage: {interval_s: " + std::string(bound) + "}"}));
    ASSERT_TRUE(at) << bound << ": " << at.error().message;
    EXPECT_DOUBLE_EQ(at->service.usage_interval_s, std::stod(bound));
    EXPECT_EQ(at->nvml_library, "libnvidia-ml.so.1");  // unchanged
  }
}

TEST(ServeConfigIsolation, GpuUsageOffTurnsMeasurementOff) {
  // `gpu_usage: off`, as serve_config.h documents it.
  Result<ServeConfig> off = Parse(Config("", "", {"gpu_usage: off"}));
  ASSERT_TRUE(off) << off.error().message;
  EXPECT_FALSE(off->measure_gpu_usage);
  Result<ServeConfig> no = Parse(Config("", "", {"gpu_usage: false"}));
  ASSERT_TRUE(no) << no.error().message;
  EXPECT_FALSE(no->measure_gpu_usage);
}

TEST(ServeConfigIsolation, GpuUsageErrors) {
  for (const char* interval : {"0.01", "0", "3601"}) {
    EXPECT_EQ(ErrorOf(Config(
                  "", "",
                  {"gpu_usage: {interval_s: " + std::string(interval) + "}"})),
              "serve.yaml:11: gpu_usage.interval_s: must be between 0.05 and "
              "3600 seconds")
        << interval;
  }
  EXPECT_THAT(ErrorOf(Config("", "", {"gpu_usage: {interval_s: -1}"})),
              StartsWith("serve.yaml:11: gpu_usage.interval_s:"));
  EXPECT_EQ(ErrorOf(Config("", "", {"gpu_usage: {node: node9}"})),
            "serve.yaml:11: gpu_usage.node: unknown node 'node9'");
  EXPECT_THAT(ErrorOf(Config("", "", {"gpu_usage: {librar: x}"})),
              StartsWith("serve.yaml:11: unknown key 'librar' in gpu_usage "
                         "(did you mean 'library'? known keys: library, "
                         "interval_s, node)"));
  EXPECT_EQ(ErrorOf(Config("", "", {"gpu_usage: {library: ''}"})),
            "serve.yaml:11: gpu_usage.library: must not be empty");
  EXPECT_THAT(ErrorOf(Config("", "", {"gpu_usage: sometimes"})),
              StartsWith("serve.yaml:11: gpu_usage:"));
  EXPECT_THAT(ErrorOf(Config("", "", {"gpu_usage: [1]"})),
              StartsWith("serve.yaml:11: gpu_usage:"));
}

TEST(ServeConfigIsolation, LauncherMpsControl) {
  Result<ServeConfig> local = Parse(Config(
      "", "", {"launcher: {kind: local, mps_control: /opt/bin/mps-control}"}));
  ASSERT_TRUE(local) << local.error().message;
  EXPECT_EQ(local->launcher.kind, "local");
  EXPECT_EQ(local->launcher.mps_control, "/opt/bin/mps-control");
  // kind local is the default.
  Result<ServeConfig> implicit =
      Parse(Config("", "", {"launcher: {mps_control: my-mps-control}"}));
  ASSERT_TRUE(implicit) << implicit.error().message;
  EXPECT_EQ(implicit->launcher.mps_control, "my-mps-control");

  EXPECT_EQ(ErrorOf(Config(
                "", "", {"launcher:", "  kind: slurm", "  mps_control: /x"})),
            "serve.yaml:13: launcher.mps_control: applies only to kind local "
            "(under Slurm, the nodes' Prolog starts the daemons for gres/mps "
            "jobs)");
  EXPECT_EQ(ErrorOf(Config("", "", {"launcher: {mps_control: ''}"})),
            "serve.yaml:11: launcher.mps_control: must not be empty");
}

TEST(ServeConfigIsolation, ExampleFileSharesAnywayAndRequeues) {
  Result<ServeConfig> config =
      LoadServeConfig(std::string(TESSERA_SOURCE_DIR) + "/examples/serve.yaml");
  ASSERT_TRUE(config) << config.error().message;
  const Topology& t = config->service.topology;
  EXPECT_TRUE(t.share_unisolated);
  ASSERT_EQ(t.nodes.size(), 2u);
  EXPECT_EQ(t.nodes[0].isolation, Isolation::kNone);
  EXPECT_EQ(t.nodes[1].isolation, Isolation::kNone);
  EXPECT_TRUE(t.Shareable(0));
  EXPECT_EQ(config->service.requeue_oom_pools, (std::set<std::string>{"a100"}));
  EXPECT_TRUE(config->measure_gpu_usage);
}

// `store:` (issue 32): SQLite (what `db:` says) or PostgreSQL; never both
// `db:` and `store:`.
TEST(ServeConfigStore, SqliteOrPostgres) {
  Result<ServeConfig> c = Parse(Config("", "", {"store: {sqlite: /srv/q.db}"}));
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->service.db_path, "/srv/q.db");
  EXPECT_EQ(c->service.store.postgres_url, "");
  c = Parse(Config(
      "", "",
      {"store:", "  postgres:", "    url: postgresql://tessera@db:5432/tessera",
       "    password_file: /etc/tessera/pg-password"}));
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->service.store.postgres_url,
            "postgresql://tessera@db:5432/tessera");
  EXPECT_EQ(c->service.store.postgres_password_file,
            "/etc/tessera/pg-password");
  EXPECT_EQ(ErrorOf(Config("", "", {"db: q.db", "store: {sqlite: q.db}"})),
            "serve.yaml:12: store: give the database once: 'db: PATH' or "
            "'store:', not both");
  EXPECT_EQ(ErrorOf(Config("", "", {"store: {}"})),
            "serve.yaml:11: store: give exactly one of sqlite: PATH and "
            "postgres: {url}");
  EXPECT_EQ(ErrorOf(Config("", "", {"store: {postgres: {password_file: x}}"})),
            "serve.yaml:11: store.postgres: missing 'url' "
            "(postgresql://USER@HOST:PORT/DBNAME)");
  EXPECT_THAT(ErrorOf(Config("", "", {"store: {postgres: {url: x, pw: y}}"})),
              HasSubstr("serve.yaml:11: unknown key 'pw' in store.postgres "
                        "(known keys: url, password_file)"));
}

// examples/serve-ha.yaml (docs/operations.md#high-availability) parses:
// PostgreSQL, the lease's timing, each replica named on its command line.
TEST(ServeConfigStore, TheHaExampleParses) {
  Result<ServeConfig> c = LoadServeConfig(std::string(TESSERA_SOURCE_DIR) +
                                          "/examples/serve-ha.yaml");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->service.store.postgres_url,
            "postgresql://tessera@db.example:5432/tessera");
  EXPECT_EQ(c->service.store.postgres_password_file,
            "/etc/tessera/pg-password");
  ASSERT_TRUE(c->service.replica);
  EXPECT_DOUBLE_EQ(c->service.replica->lease_s, 10);
  EXPECT_DOUBLE_EQ(c->service.replica->lease_renew_s, 1);
  EXPECT_EQ(c->service.replica->name, "");  // --replica rN names each
  EXPECT_EQ(c->launcher.kind, "slurm");
  EXPECT_EQ(c->service.topology.nodes.size(), 2u);
  EXPECT_EQ(c->users.size(), 2u);
}

// `ha:` needs PostgreSQL, and a lease at least twice its renewal.
TEST(ServeConfigStore, HaKeysAreChecked) {
  const std::string_view pg = "store: {postgres: {url: postgresql://t@db/t}}";
  Result<ServeConfig> c =
      Parse(Config("", "", {pg, "ha: {lease_s: 4, lease_renew_s: 0.5}"}));
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_DOUBLE_EQ(c->service.replica->lease_s, 4);
  EXPECT_DOUBLE_EQ(c->service.replica->lease_renew_s, 0.5);
  EXPECT_THAT(ErrorOf(Config("", "", {"ha: {lease_s: 10}"})),
              HasSubstr("replicas need 'store: {postgres: {url: ...}}'"));
  EXPECT_THAT(ErrorOf(Config("", "", {pg, "ha: {lease_s: 1}"})),
              HasSubstr("must be at least twice ha.lease_renew_s"));
  EXPECT_THAT(ErrorOf(Config("", "", {pg, "ha: {lease_renew_s: 0}"})),
              HasSubstr("must be above 0 and at most 3600 seconds"));
  EXPECT_THAT(ErrorOf(Config("", "", {pg, "ha: {lease: 3}"})),
              HasSubstr("unknown key 'lease' in ha"));
}

}  // namespace
}  // namespace tessera::server
