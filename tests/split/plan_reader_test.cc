// ParsePlan / LoadPlan: the keys of plan.json that split reads, and the
// errors (kBadInput, naming the source and the key) for plans it cannot use.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "split/split.h"
#include "tests/testlib/onnx_model_builder.h"

namespace tessera::split {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;
using testlib::TempDir;

// Two devices, three nodes, as `tessera plan -o` writes it (with keys split
// does not read).
Json ValidPlan() {
  return Json::parse(R"({
    "model": "m.onnx",
    "algorithm": "m-etf",
    "step_time_ms": 1.5,
    "devices": [{"id": "gpu1", "memory_bytes": 100},
                {"id": "gpu0", "memory_bytes": 100}],
    "placement": {"conv": "gpu0", "relu": "gpu1", "fc": "gpu0"},
    "transfers": []
  })");
}

// Parses `plan` expecting kBadInput; returns the message.
std::string ParseError(const Json& plan) {
  auto r = ParsePlan(plan, "plan.json");
  if (r) return "<parsed>";
  EXPECT_EQ(r.error().code, ErrorCode::kBadInput) << r.error().message;
  return r.error().message;
}

// The devices keep the plan's order (not sorted), and placement values are
// indices into that order.
TEST(ParsePlan, ReadsDevicesPlacementAndAlgorithm) {
  auto r = ParsePlan(ValidPlan(), "p.json");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->source, "p.json");
  EXPECT_EQ(r->algorithm, "m-etf");
  EXPECT_EQ(r->devices, (std::vector<std::string>{"gpu1", "gpu0"}));
  std::vector<std::pair<std::string, int>> placement(r->placement.begin(),
                                                     r->placement.end());
  std::sort(placement.begin(), placement.end());
  EXPECT_EQ(placement, (std::vector<std::pair<std::string, int>>{
                           {"conv", 1}, {"fc", 1}, {"relu", 0}}));
}

// "algorithm" is informational: a plan without it still parses.
TEST(ParsePlan, AlgorithmIsOptional) {
  Json plan = ValidPlan();
  plan.erase("algorithm");
  auto r = ParsePlan(plan, "p.json");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->algorithm, "");
  EXPECT_EQ(r->placement.size(), 3u);
}

TEST(ParsePlan, RejectsANonObject) {
  const std::string message = ParseError(Json::array({1, 2}));
  EXPECT_THAT(message, HasSubstr("plan.json"));
  EXPECT_THAT(message, HasSubstr("not a plan"));
}

TEST(ParsePlan, RejectsMissingDevices) {
  Json plan = ValidPlan();
  plan.erase("devices");
  const std::string message = ParseError(plan);
  EXPECT_THAT(message, HasSubstr("plan.json"));
  EXPECT_THAT(message, HasSubstr("devices"));
  EXPECT_THAT(message, HasSubstr("missing"));
}

TEST(ParsePlan, RejectsMistypedOrEmptyDevices) {
  for (const Json& devices :
       {Json("gpu0"), Json::array(), Json::object({{"id", "gpu0"}})}) {
    Json plan = ValidPlan();
    plan["devices"] = devices;
    const std::string message = ParseError(plan);
    EXPECT_THAT(message, HasSubstr("plan.json: devices: expected a non-empty "
                                   "array"))
        << devices.dump();
  }
}

// A device entry without a string "id" is named by its index.
TEST(ParsePlan, RejectsADeviceWithoutAStringId) {
  for (const Json& device : {Json("gpu0"), Json::object({{"name", "gpu0"}}),
                             Json::object({{"id", 3}})}) {
    Json plan = ValidPlan();
    plan["devices"][1] = device;
    EXPECT_THAT(ParseError(plan), HasSubstr("plan.json: devices[1]"))
        << device.dump();
  }
  Json plan = ValidPlan();
  plan["devices"][0]["id"] = "";
  EXPECT_THAT(ParseError(plan), HasSubstr("devices[0].id"));
}

// The second listing is the one named, with a pointer to the first.
TEST(ParsePlan, RejectsADeviceListedTwice) {
  Json plan = ValidPlan();
  plan["devices"].push_back({{"id", "gpu1"}});
  const std::string message = ParseError(plan);
  EXPECT_THAT(message, HasSubstr("plan.json"));
  EXPECT_THAT(message, HasSubstr("devices[2].id"));
  EXPECT_THAT(message, HasSubstr("'gpu1'"));
  EXPECT_THAT(message, HasSubstr("devices[0]"));
}

TEST(ParsePlan, RejectsMissingOrMistypedPlacement) {
  Json plan = ValidPlan();
  plan.erase("placement");
  std::string message = ParseError(plan);
  EXPECT_THAT(message, HasSubstr("plan.json: placement"));
  EXPECT_THAT(message, HasSubstr("missing"));

  plan["placement"] = Json::array({"gpu0"});
  message = ParseError(plan);
  EXPECT_THAT(message, HasSubstr("plan.json: placement"));
  EXPECT_THAT(message, HasSubstr("expected an object"));
}

// A placement value must be a device id string the plan lists; the message
// names the node's key.
TEST(ParsePlan, RejectsAPlacementOnAnUnknownDevice) {
  Json plan = ValidPlan();
  plan["placement"]["relu"] = "gpu7";
  std::string message = ParseError(plan);
  EXPECT_THAT(message, HasSubstr("plan.json"));
  EXPECT_THAT(message, HasSubstr("placement.relu"));
  EXPECT_THAT(message, HasSubstr("'gpu7'"));

  plan["placement"]["relu"] = 1;
  message = ParseError(plan);
  EXPECT_THAT(message, HasSubstr("placement.relu"));
  EXPECT_THAT(message, HasSubstr("number"));
}

TEST(LoadPlan, ReadsAFile) {
  TempDir dir;
  const std::string path = dir.Write("plan.json", ValidPlan().dump(2));
  auto r = LoadPlan(path);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->source, path);
  EXPECT_EQ(r->devices.size(), 2u);
  EXPECT_EQ(r->placement.size(), 3u);
}

// The path, not "plan.json", names the source of errors found in the file.
TEST(LoadPlan, ErrorsInTheFileNameItsPath) {
  TempDir dir;
  Json plan = ValidPlan();
  plan["placement"]["fc"] = "tpu";
  const std::string path = dir.Write("my_plan.json", plan.dump());
  auto r = LoadPlan(path);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kBadInput);
  EXPECT_THAT(r.error().message, HasSubstr(path + ": placement.fc"));
}

TEST(LoadPlan, RejectsAMissingFile) {
  TempDir dir;
  const std::string path = dir.File("absent.json");
  auto r = LoadPlan(path);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kBadInput);
  EXPECT_THAT(r.error().message, HasSubstr(path));
}

TEST(LoadPlan, RejectsInvalidJson) {
  TempDir dir;
  const std::string path = dir.Write("plan.json", "{\"devices\": [");
  auto r = LoadPlan(path);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kBadInput);
  EXPECT_THAT(r.error().message, HasSubstr(path));
  EXPECT_THAT(r.error().message, HasSubstr("not valid JSON"));
}

}  // namespace
}  // namespace tessera::split
