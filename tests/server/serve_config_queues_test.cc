// The serve config's `queues:` section (docs/quotas.md): the tree parsed,
// and each error naming its field (`queues[0].children[1].guaranteed.
// gpu_milli: ...`) with its line.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "server/serve_config.h"

namespace tessera::scheduler {
namespace {

using ::testing::HasSubstr;

// Two 80 GiB GPUs and two 16 GiB ones: 4000 milli, 192 GiB; then `queues`.
std::string Config(const std::string& queues) {
  return std::string(
             "nodes:\n"
             "  - {name: node0, cpu_milli: 64000, memory: 256GiB,\n"
             "     gpus: [{kind: a100-80gb, count: 2}, {kind: t4, count: 2}]}\n"
             "users:\n"
             "  - {name: alice, role: user, team: team-a, token_sha256: "
             "bba775a1794a2ccaa524798e32cea98187c9a32d80433d760a92d449bfddff66}"
             "\n") +
         queues;
}

std::string Error(const std::string& queues) {
  auto c = server::ParseServeConfig(Config(queues), "serve.yaml");
  return c ? std::string("ok") : c.error().message;
}

TEST(ServeConfigQueues, ParsesTheTree) {
  auto c =
      server::ParseServeConfig(Config("queues:\n"
                                      "  - name: org\n"
                                      "    guaranteed: {gpu_milli: 3000, "
                                      "gpu_memory: 120GiB}\n"
                                      "    children:\n"
                                      "      - name: team-a\n"
                                      "        guaranteed: {gpu_milli: 2000}\n"
                                      "        limit: {gpu_milli: 3000}\n"
                                      "        weight: 2\n"
                                      "        children: [{name: alice}]\n"
                                      "      - {name: team-b, guaranteed: "
                                      "{gpu_milli: 1000}}\n"),
                               "serve.yaml");
  ASSERT_TRUE(c) << c.error().message;
  const std::vector<QueueSpec>& q = c->service.queues;
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(q[0].guaranteed.gpu_milli, 3000);
  EXPECT_EQ(q[0].guaranteed.gpu_memory_mib, 120 * 1024);
  ASSERT_EQ(q[0].children.size(), 2u);
  EXPECT_EQ(q[0].children[0].limit.gpu_milli, 3000);
  EXPECT_EQ(q[0].children[0].limit.gpu_memory_mib, kNoLimit);
  EXPECT_EQ(q[0].children[0].weight, 2);
  EXPECT_EQ(q[0].children[0].children[0].name, "alice");
}

TEST(ServeConfigQueues, ErrorsNameTheField) {
  EXPECT_THAT(Error("queues:\n"
                    "  - name: org\n"
                    "    guaranteed: {gpu_milli: 2000}\n"
                    "    children:\n"
                    "      - {name: a, guaranteed: {gpu_milli: 1500}}\n"
                    "      - {name: b, guaranteed: {gpu_milli: 1000}}\n"),
              HasSubstr("queues[0].guaranteed.gpu_milli: 2000 is less than "
                        "its children's guarantees together (2500)"));
  EXPECT_THAT(Error("queues:\n"
                    "  - name: org\n"
                    "    guaranteed: {gpu_milli: 2000}\n"
                    "    children:\n"
                    "      - {name: a}\n"
                    "      - {name: b, guaranteed: {gpu_milli: -5}}\n"),
              HasSubstr("queues[0].children[1].guaranteed.gpu_milli"));
  EXPECT_THAT(Error("queues:\n"
                    "  - name: org\n"
                    "    children:\n"
                    "      - {name: a, guaranteed: {gpu_milli: 1000}, "
                    "limit: {gpu_milli: 500}}\n"),
              HasSubstr("queues[0].guaranteed.gpu_milli: 0 is less than"));
  EXPECT_THAT(Error("queues:\n"
                    "  - name: org\n"
                    "    guaranteed: {gpu_milli: 1000}\n"
                    "    children:\n"
                    "      - {name: a, guaranteed: {gpu_milli: 1000}, "
                    "limit: {gpu_milli: 500}}\n"),
              HasSubstr("queues[0].children[0].limit.gpu_milli: 500 is below "
                        "the queue's guarantee (1000)"));
  EXPECT_THAT(Error("queues:\n"
                    "  - {name: org, weight: 0}\n"),
              HasSubstr("serve.yaml:7: queues[0].weight: must be above 0"));
  EXPECT_THAT(Error("queues:\n"
                    "  - {name: org, children: [{name: org}]}\n"),
              HasSubstr("queues[0].children[0].name: 'org' is given twice"));
  EXPECT_THAT(Error("queues:\n"
                    "  - {name: org, gurantee: 1}\n"),
              HasSubstr("gurantee"));
  EXPECT_THAT(Error("queues:\n"
                    "  - {name: org, guaranteed: {gpu_milli: 5000}}\n"),
              HasSubstr("queues: the top-level guarantees add up to 5000 GPU "
                        "milli, more than the cluster's 4000"));
  EXPECT_THAT(Error("queues:\n"
                    "  - {name: org, guaranteed: {gpu_memory: 200GiB}}\n"),
              HasSubstr("more than the cluster's 196608"));
  EXPECT_THAT(Error("queues: []\n"), HasSubstr("queues"));
}

}  // namespace
}  // namespace tessera::scheduler
