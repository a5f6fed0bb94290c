#include "server/serve_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <string_view>

#include "server/auth.h"
#include "tests/testlib/repo_paths.h"

namespace tessera::scheduler {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr std::string_view kHashA =
    "bba775a1794a2ccaa524798e32cea98187c9a32d80433d760a92d449bfddff66";
constexpr std::string_view kHashB =
    "d275bd62ab1cecf3dc756b6825fc6ff53cc04a15035eb9e322d67d9531262284";

// Joins lines with '\n', so that line numbers in expectations are indexes + 1.
std::string Lines(std::initializer_list<std::string_view> lines) {
  std::string out;
  for (std::string_view line : lines) out += std::string(line) + "\n";
  return out;
}

Result<server::ServeConfig> Parse(const std::string& yaml) {
  return server::ParseServeConfig(yaml, "serve.yaml");
}

// A valid configuration whose line `line` (1-based) is replaced by `with`.
std::string Valid(int line = 0, const std::string& with = "") {
  const std::string alice_token = "    token_sha256: " + std::string(kHashA);
  const std::string root_token = "    token_sha256: " + std::string(kHashB);
  std::vector<std::string> lines = {
      "pools:",                                                   // 1
      "  - {name: a100, policy: backfill}",                       // 2
      "  - {name: t4, policy: fair-share, weights: {alice: 2}}",  // 3
      "nodes:",                                                   // 4
      "  - name: node0",                                          // 5
      "    pool: a100",                                           // 6
      "    cpu_milli: 64000",                                     // 7
      "    memory: 256GiB",                                       // 8
      "    gpus: [{kind: a100-80gb, count: 2}]",                  // 9
      "  - name: node1",                                          // 10
      "    pool: t4",                                             // 11
      "    cpu_milli: 32000",                                     // 12
      "    memory: 128GiB",                                       // 13
      "    gpus: [{kind: t4, count: 2}]",                         // 14
      "users:",                                                   // 15
      "  - name: alice",                                          // 16
      "    role: user",                                           // 17
      alice_token,                                                // 18
      "  - name: root",                                           // 19
      "    role: admin",                                          // 20
      root_token,                                                 // 21
  };
  if (line > 0) lines[static_cast<size_t>(line - 1)] = with;
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

TEST(ServeConfig, ExampleFileParses) {
  Result<server::ServeConfig> config = server::LoadServeConfig(
      std::string(TESSERA_SOURCE_DIR) + "/examples/serve.yaml");
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->listen_host, "127.0.0.1");
  EXPECT_EQ(config->listen_port, 8471);
  EXPECT_EQ(config->max_body_bytes, 1 << 20);
  const Topology& t = config->service.topology;
  ASSERT_EQ(t.pools.size(), 2U);
  EXPECT_EQ(t.pools[0], "a100");
  EXPECT_EQ(config->service.policies.at("a100").name, "backfill");
  EXPECT_EQ(config->service.policies.at("t4").name, "fair-share");
  EXPECT_DOUBLE_EQ(config->service.policies.at("t4").weights.at("alice"), 2);
  ASSERT_EQ(t.nodes.size(), 2U);
  ASSERT_EQ(t.gpus.size(), 8U);
  EXPECT_EQ(t.gpus[5].id, "node1/gpu1");
  EXPECT_EQ(t.gpus[5].node, 1);
  EXPECT_EQ(t.gpus[5].index, 1);
  EXPECT_EQ(t.gpus[0].kind, "a100-80gb");
  EXPECT_EQ(t.gpus[0].memory_mib, 80 * 1024);
  EXPECT_EQ(t.gpus[4].kind, "t4");
  EXPECT_EQ(t.gpus[4].memory_mib, 16 * 1024);
  EXPECT_EQ(t.nodes[1].gpus, (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(t.nodes[1].memory_mib, 128 * 1024);
  ASSERT_EQ(config->users.size(), 2U);
  EXPECT_EQ(config->users[0].user.name, "alice");
  EXPECT_FALSE(config->users[0].user.admin);
  EXPECT_EQ(config->users[0].user.team, "ml");
  EXPECT_TRUE(config->users[1].user.admin);
  // The documented demo tokens (docs/cli.md) are the ones whose hashes the file
  // holds.
  EXPECT_EQ(config->users[0].token_sha256,
            server::Sha256Hex("alice-demo-token"));
  EXPECT_EQ(config->users[1].token_sha256,
            server::Sha256Hex("root-demo-token"));
}

TEST(ServeConfig, DefaultsWithoutPoolsAndLimits) {
  Result<server::ServeConfig> config = Parse(Lines({
      "nodes:",
      "  - {name: n, cpu_milli: 1000, memory: 1GiB,",
      "     gpus: [{kind: t4}, {kind: a100-80gb, memory: 40GiB}]}",
      "users:",
      std::string("  - {name: u, token_sha256: ") + std::string(kHashA) + "}",
  }));
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->listen_host, server::kDefaultListenHost);
  EXPECT_EQ(config->listen_port, server::kDefaultListenPort);
  EXPECT_EQ(config->service.topology.pools,
            std::vector<std::string>{"default"});
  EXPECT_EQ(config->service.policies.at("default").name, "fifo");
  EXPECT_EQ(config->service.topology.nodes[0].pool, "default");
  EXPECT_EQ(config->service.topology.gpus[1].id, "n/gpu1");
  EXPECT_EQ(config->service.topology.gpus[1].memory_mib, 40 * 1024);
  EXPECT_FALSE(config->users[0].user.admin);  // role defaults to user
  EXPECT_EQ(config->service.scorer, "tessera");
  EXPECT_TRUE(config->service.model_roots.empty());  // no job by path
  EXPECT_EQ(config->service.max_model_bytes, kDefaultMaxModelBytes);
  EXPECT_EQ(config->service.max_upload_bytes, kDefaultMaxUploadBytes);
}

TEST(ServeConfig, ReadsTopLevelSettings) {
  Result<server::ServeConfig> config =
      Parse(Lines({"listen: '[::1]:0'", "db: /tmp/q.db", "log_dir: /tmp/logs",
                   "scorer: fgd", "kill_grace_s: 2.5",
                   "limits: {max_body_bytes: 4096, max_queued_per_user: 7,",
                   "         max_model_bytes: 1GiB, max_upload_bytes: 16MiB}",
                   "model_roots: [/srv/models, /data/onnx]"}) +
            Valid());
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->listen_host, "::1");
  EXPECT_EQ(config->listen_port, 0);
  EXPECT_EQ(config->service.db_path, "/tmp/q.db");
  EXPECT_EQ(config->service.log_dir, "/tmp/logs");
  EXPECT_EQ(config->service.scorer, "fgd");
  EXPECT_DOUBLE_EQ(config->service.kill_grace_s, 2.5);
  EXPECT_EQ(config->max_body_bytes, 4096);
  EXPECT_EQ(config->service.max_queued_per_user, 7);
  EXPECT_EQ(config->service.max_model_bytes, int64_t{1} << 30);
  EXPECT_EQ(config->service.max_upload_bytes, int64_t{16} << 20);
  EXPECT_EQ(config->service.model_roots,
            (std::vector<std::string>{"/srv/models", "/data/onnx"}));
}

TEST(ServeConfig, ReadsConnectionLimitsTlsAndExtenderAccess) {
  Result<server::ServeConfig> defaults = Parse(Valid());
  ASSERT_TRUE(defaults) << defaults.error().message;
  EXPECT_EQ(defaults->header_timeout_s, 10);
  EXPECT_EQ(defaults->max_connections_per_client, 256);
  EXPECT_FALSE(defaults->tls.enabled());
  EXPECT_FALSE(defaults->k8s.allow_unauthenticated);

  Result<server::ServeConfig> config = Parse(
      Lines({"limits: {header_timeout_s: 3, body_timeout_s: 7, "
             "max_connections_per_client: 5, max_connections: 50}",
             "tls: {cert_file: s.pem, key_file: k.pem, client_ca_file: ca.pem}",
             "k8s: {allow_unauthenticated: true}"}) +
      Valid(20, "    role: k8s-scheduler"));
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->header_timeout_s, 3);
  EXPECT_EQ(config->body_timeout_s, 7);
  EXPECT_EQ(config->max_connections_per_client, 5);
  EXPECT_EQ(config->max_connections, 50);
  EXPECT_EQ(config->tls.cert_file, "s.pem");
  EXPECT_EQ(config->tls.key_file, "k.pem");
  EXPECT_EQ(config->tls.client_ca_file, "ca.pem");
  EXPECT_TRUE(config->k8s.allow_unauthenticated);
  EXPECT_TRUE(config->users[1].k8s_scheduler);
  EXPECT_FALSE(config->users[1].user.admin);
}

TEST(ServeConfig, TokenHashIsStoredLowercase) {
  std::string upper(kHashB);
  for (char& c : upper) c = static_cast<char>(std::toupper(c));
  Result<server::ServeConfig> config =
      Parse(Valid(21, "    token_sha256: " + upper));
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->users[1].token_sha256, kHashB);
}

struct BadCase {
  const char* what;
  int line;
  std::string replacement;  // for that line of Valid()
  std::string expected;     // "serve.yaml:LINE: FIELD: ..." prefix
  std::string detail;       // also in the message
};

TEST(ServeConfig, ErrorsNameLineAndField) {
  const BadCase cases[] = {
      {"unknown pool of a node", 11, "    pool: v100",
       "serve.yaml:11: nodes[1].pool: unknown pool 'v100'", "a100, t4"},
      {"unknown GPU kind", 14, "    gpus: [{kind: a200-80gb}]",
       "serve.yaml:14: nodes[1].gpus[0].kind:", "a200-80gb"},
      {"duplicate node", 10, "  - name: node0",
       "serve.yaml:10: nodes[1].name: node 'node0' appears twice", ""},
      {"duplicate user", 19, "  - name: alice",
       "serve.yaml:19: users[1].name: user 'alice' appears twice", ""},
      {"bad role", 20, "    role: root",
       "serve.yaml:20: users[1].role: unknown role 'root'", "user, admin"},
      {"short token hash", 21, "    token_sha256: abc123",
       "serve.yaml:21: users[1].token_sha256: must be 64 hex digits", ""},
      {"non-hex token hash", 21,
       "    token_sha256: " + std::string(63, 'a') + "g",
       "serve.yaml:21: users[1].token_sha256: must be 64 hex digits", ""},
      {"same token twice", 21, "    token_sha256: " + std::string(kHashA),
       "serve.yaml:21: users[1].token_sha256: the same token as user 'alice'",
       ""},
      {"unknown policy", 2, "  - {name: a100, policy: backfil}",
       "serve.yaml:2: pools[0].policy: unknown policy 'backfil'",
       "did you mean 'backfill'"},
      {"weights on a fifo pool", 3, "  - {name: t4, weights: {alice: 2}}",
       "serve.yaml:3: pools[1].weights: weights apply only to", ""},
      {"preemption on a backfill pool", 2,
       "  - {name: a100, policy: backfill, preemption: true}",
       "serve.yaml:2: pools[0].preemption:", "priority"},
      {"duplicate pool", 3, "  - {name: a100}",
       "serve.yaml:3: pools[1].name: pool 'a100' appears twice", ""},
      {"bad memory", 8, "    memory: 256 gigs",
       "serve.yaml:8: nodes[0].memory:", "256 gigs"},
      {"negative cpu", 7, "    cpu_milli: -5",
       "serve.yaml:7: nodes[0].cpu_milli: '-5' must be a whole number", ""},
      {"misspelt node key", 7, "    cpu_mili: 64000",
       "serve.yaml:7: unknown key 'cpu_mili' in nodes[0]",
       "did you mean 'cpu_milli'"},
      {"zero GPUs", 9, "    gpus: [{kind: a100-80gb, count: 0}]",
       "serve.yaml:9: nodes[0].gpus[0].count:", ""},
  };
  for (const BadCase& c : cases) {
    Result<server::ServeConfig> config = Parse(Valid(c.line, c.replacement));
    ASSERT_FALSE(config) << c.what;
    EXPECT_EQ(config.error().code, ErrorCode::kBadInput) << c.what;
    EXPECT_THAT(config.error().message, StartsWith(c.expected)) << c.what;
    EXPECT_THAT(config.error().message, HasSubstr(c.detail)) << c.what;
  }
}

TEST(ServeConfig, TopLevelErrors) {
  struct Case {
    std::string yaml, expected;
  };
  const Case cases[] = {
      {"scorer: best_fit\n" + Valid(),
       "serve.yaml:1: scorer: unknown scorer 'best_fit' (did you mean "
       "'best-fit'?"},
      {"nodse: []\n" + Valid(),
       "serve.yaml:1: unknown key 'nodse' at the top level (did you mean "
       "'nodes'?"},
      {"listen: localhost\n" + Valid(), "serve.yaml:1: listen: 'localhost'"},
      {"listen: 1.2.3.4:70000\n" + Valid(), "serve.yaml:1: listen:"},
      {"limits: {max_queued_per_user: 0}\n" + Valid(),
       "serve.yaml:1: limits.max_queued_per_user:"},
      {"kill_grace_s: -1\n" + Valid(), "serve.yaml:1: kill_grace_s:"},
      {"limits: {header_timeout_s: 0}\n" + Valid(),
       "serve.yaml:1: limits.header_timeout_s:"},
      {"tls: {cert_file: s.pem}\n" + Valid(),
       "serve.yaml:1: tls: needs both 'cert_file' and 'key_file'"},
      {"tls: {cert: s.pem}\n" + Valid(), "serve.yaml:1: unknown key 'cert'"},
      {"limits: {max_upload_bytes: 0}\n" + Valid(),
       "serve.yaml:1: limits.max_upload_bytes:"},
      {"model_roots: /srv/models\n" + Valid(),
       "serve.yaml:1: model_roots: expected a list"},
      {"model_roots: [[a]]\n" + Valid(), "serve.yaml:1: model_roots[0]:"},
      {Lines({"users:",
              "  - {name: a, token_sha256: " + std::string(kHashA) + "}"}),
       "serve.yaml:1: missing the top-level 'nodes:' list"},
      {"nodes: [\n", "serve.yaml:2: malformed YAML"},
      {"", "serve.yaml: the configuration is empty"},
  };
  for (const Case& c : cases) {
    Result<server::ServeConfig> config = Parse(c.yaml);
    ASSERT_FALSE(config) << c.yaml;
    EXPECT_THAT(config.error().message, StartsWith(c.expected)) << c.yaml;
  }
}

TEST(ServeConfig, ReadsTheSplitOrWaitSettings) {
  Result<server::ServeConfig> defaults = Parse(Valid());
  ASSERT_TRUE(defaults) << defaults.error().message;
  EXPECT_TRUE(defaults->service.interference.empty());
  EXPECT_TRUE(defaults->service.calibrate_interference);
  EXPECT_EQ(defaults->service.model_default_work_s, 3600);
  Result<server::ServeConfig> config = Parse(
      Lines({"interference: {a100-80gb: {alpha: 0.5}, t4: {sharing: mps}}",
             "calibrate_interference: false", "model_default_work_s: 600"}) +
      Valid());
  ASSERT_TRUE(config) << config.error().message;
  const auto& laws = config->service.interference;
  ASSERT_EQ(laws.size(), 2u);
  EXPECT_EQ(laws.at("a100-80gb"), InterferenceLaw::Linear(0.5));
  EXPECT_EQ(laws.at("t4"),
            InterferenceLaw::Measured(estimator::GpuSharing::kMps));
  EXPECT_FALSE(config->service.calibrate_interference);
  EXPECT_EQ(config->service.model_default_work_s, 600);

  struct Case {
    std::string yaml, expected;
  };
  const Case cases[] = {
      {"interference: {h100: {alpha: 1}}\n",
       "serve.yaml:1: interference.h100: no node of the configuration"},
      {"interference: {t4: {alpha: -1}}\n", "serve.yaml:1: interference.t4"},
      {"interference: {t4: {}}\n",
       "serve.yaml:1: interference.t4: give one of alpha"},
      {"interference: {t4: {alpha: 1, sharing: mps}}\n",
       "serve.yaml:1: interference.t4: give one of alpha"},
      {"interference: {t4: {sharing: spatial}}\n",
       "serve.yaml:1: interference.t4.sharing: unknown sharing 'spatial'"},
      {"interference: {t4: {alfa: 1}}\n", "serve.yaml:1: unknown key 'alfa'"},
      {"interference: [t4]\n", "serve.yaml:1: interference: expected a map"},
      {"model_default_work_s: 0\n", "serve.yaml:1: model_default_work_s:"},
  };
  for (const Case& c : cases) {
    Result<server::ServeConfig> bad = Parse(c.yaml + Valid());
    ASSERT_FALSE(bad) << c.yaml;
    EXPECT_THAT(bad.error().message, StartsWith(c.expected)) << c.yaml;
  }
}

TEST(ServeConfig, MissingFileIsBadInput) {
  Result<server::ServeConfig> config =
      server::LoadServeConfig("/nonexistent/serve.yaml");
  ASSERT_FALSE(config);
  EXPECT_EQ(config.error().code, ErrorCode::kBadInput);
  EXPECT_THAT(config.error().message, HasSubstr("no such file"));
}

TEST(ListenAddress, ParsesHostAndPort) {
  Result<server::ListenAddress> v4 = server::ParseListenAddress("0.0.0.0:8080");
  ASSERT_TRUE(v4) << v4.error().message;
  EXPECT_EQ(v4->host, "0.0.0.0");
  EXPECT_EQ(v4->port, 8080);
  Result<server::ListenAddress> v6 = server::ParseListenAddress("[::1]:0");
  ASSERT_TRUE(v6) << v6.error().message;
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 0);
  for (std::string_view bad :
       {"8471", ":8471", "host:", "h:x", "h:-1", "h:65536", "::1:80"}) {
    EXPECT_FALSE(server::ParseListenAddress(bad)) << bad;
  }
}

}  // namespace
}  // namespace tessera::scheduler
