// The extender's settings in the serve config (k8s_extender, k8s:), the
// examples that deploy it agreeing with each other, and the API server
// client refusing what it cannot read.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "k8s/k8s_api.h"
#include "k8s/k8s_config.h"
#include "k8s/k8s_pod.h"
#include "server/serve_config.h"
#include "tests/testlib/repo_paths.h"

namespace tessera::k8s {
namespace {

using ::testing::HasSubstr;

TEST(K8sServeConfig, ReadsTheK8sSettings) {
  const std::string base =
      "pools: [{name: a}, {name: b}]\n"
      "nodes: [{name: node0, pool: a, cpu_milli: 1000, memory: 1GiB, gpus: "
      "[{kind: t4}]}]\n"
      "users: [{name: root, role: admin, token_sha256: "
      "d275bd62ab1cecf3dc756b6825fc6ff53cc04a15035eb9e322d67d9531262284}]\n";
  Result<server::ServeConfig> c = server::ParseServeConfig(
      base +
          "k8s_extender: true\n"
          "k8s: {pool: a, api_server: 'https://10.0.0.1:6443/', token_file: "
          "/var/run/secrets/kubernetes.io/serviceaccount/token, ca_file: "
          "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt, resync_s: "
          "10}\n",
      "serve.yaml");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_TRUE(c->k8s_extender);
  EXPECT_EQ(c->k8s.pool, "a");
  EXPECT_EQ(c->k8s.api_server, "https://10.0.0.1:6443");
  EXPECT_EQ(c->k8s.token_file,
            "/var/run/secrets/kubernetes.io/serviceaccount/token");
  EXPECT_EQ(c->k8s.resync_s, 10);
  c = server::ParseServeConfig(base, "serve.yaml");
  ASSERT_TRUE(c);
  EXPECT_FALSE(c->k8s_extender);
  EXPECT_EQ(c->k8s.api_server, "");
  EXPECT_EQ(c->k8s.resync_s, kDefaultK8sResyncS);
  auto error = [&](const std::string& k8s) {
    Result<server::ServeConfig> r =
        server::ParseServeConfig(base + k8s, "serve.yaml");
    return r ? "" : r.error().message;
  };
  EXPECT_THAT(error("k8s: {pool: c}\n"), HasSubstr("unknown pool 'c'"));
  EXPECT_THAT(error("k8s: {api_server: 10.0.0.1:6443}\n"),
              HasSubstr("must be http(s)://HOST[:PORT]"));
  EXPECT_THAT(error("k8s: {api_server: 'https://k/api'}\n"),
              HasSubstr("no path"));
  EXPECT_THAT(error("k8s: {apiserver: x}\n"), HasSubstr("apiserver"));
  EXPECT_THAT(error("k8s: {resync_s: -1}\n"), HasSubstr("resync_s"));
  EXPECT_THAT(error("k8s_extender: maybe\n"),
              HasSubstr("must be true or false"));
}

TEST(K8sServeConfig, TheExamplesAgreeWithEachOther) {
  const std::string dir = std::string(TESSERA_SOURCE_DIR) + "/examples/";
  Result<server::ServeConfig> c =
      server::LoadServeConfig(dir + "serve-k8s.yaml");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_TRUE(c->k8s_extender);
  EXPECT_EQ(c->k8s.pool, "k8s");
  EXPECT_EQ(c->listen_host + ":" + std::to_string(c->listen_port),
            "127.0.0.1:8471");
  std::ifstream in(dir + "kube-scheduler-extender.yaml");
  std::stringstream text;
  text << in.rdbuf();
  const std::vector<std::string> lines = {
      "urlPrefix: \"http://127.0.0.1:8471/k8s\"",
      "filterVerb: filter",
      "prioritizeVerb: prioritize",
      "bindVerb: bind",
      "nodeCacheCapable: true",
      "- name: " + std::string(kK8sGpuMilli),
      "- name: " + std::string(kK8sGpuMemoryMib),
      "- name: " + std::string(kK8sWholeGpus)};
  for (const std::string& line : lines) {
    EXPECT_THAT(text.str(), HasSubstr(line));
  }
}

TEST(K8sApiClient, RefusesUnreadableFiles) {
  K8sConfig config;
  config.api_server = "http://127.0.0.1:1";
  config.token_file = "/nonexistent/token";
  auto client = MakeK8sApiClient(config);
  ASSERT_FALSE(client);
  EXPECT_THAT(client.error().message, HasSubstr("k8s.token_file"));
  config.token_file.clear();
  client = MakeK8sApiClient(config);
  ASSERT_TRUE(client);
  // Nothing listens on port 1: a transport error, not a crash.
  Result<K8sApiReply> r = (*client)->Send("GET", "/api/v1/namespaces", "");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(r.error().message, HasSubstr("cannot reach the API server"));
}

}  // namespace
}  // namespace tessera::k8s
