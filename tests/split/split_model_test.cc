// SplitModel end to end on small models: the files it writes (parts,
// manifest.json, device_map.json), the manifest's contents, and how it
// treats the output directory.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "graph/graph.h"
#include "split/split.h"
#include "tests/split/kept_models.h"
#include "tests/testlib/onnx_model_builder.h"

namespace tessera::split {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Json = nlohmann::json;
using testlib::Dim;
using testlib::ExternalData;
using testlib::kFloat;
using testlib::OnnxModelBuilder;
using testlib::TempDir;

using testing::LoadFile;

PlanAssignment PlanOf(std::vector<std::pair<std::string, int>> placement) {
  PlanAssignment plan;
  plan.source = "plan.json";
  plan.algorithm = "m-etf";
  plan.devices = {"node0/gpu0", "node0/gpu1"};
  plan.placement = std::move(placement);
  return plan;
}

// conv, relu on gpu0; flatten, fc on gpu1.
PlanAssignment CnnModelPlan() {
  return PlanOf({{"conv", 0}, {"relu", 0}, {"flatten", 1}, {"fc", 1}});
}

// conv on gpu0, relu on gpu1, flatten and fc back on gpu0: three parts.
PlanAssignment CyclePlan() {
  return PlanOf({{"conv", 0}, {"relu", 1}, {"flatten", 0}, {"fc", 0}});
}

PlanAssignment OneDevicePlan() {
  return PlanOf({{"conv", 1}, {"relu", 1}, {"flatten", 1}, {"fc", 1}});
}

std::string ReadText(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

Json ReadJson(const fs::path& path) { return Json::parse(ReadText(path)); }

// A directory with a model file in it, and a place for the parts.
struct Workspace {
  TempDir root;
  fs::path out = root.path() / "out";
  std::string Model(const OnnxModelBuilder& b) const {
    return root.Write("model.onnx", b);
  }
  SplitOptions Options(bool force = false) const {
    SplitOptions o;
    o.out_dir = out.string();
    o.force = force;
    o.plan_path = "plans/plan.json";
    return o;
  }
};

TEST(SplitModel, WritesPartsManifestAndDeviceMap) {
  Workspace ws;
  const graph::Model model = LoadFile(ws.Model(testlib::SmallCnn(1)));
  std::vector<std::string> stages;
  SplitOptions options = ws.Options();
  options.progress = [&](std::string_view s) { stages.emplace_back(s); };
  auto r = SplitModel(model, CnnModelPlan(), options);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_THAT(r->files, ElementsAre((ws.out / "part_0.onnx").string(),
                                    (ws.out / "part_1.onnx").string(),
                                    (ws.out / "manifest.json").string(),
                                    (ws.out / "device_map.json").string()));
  for (const std::string& file : r->files) {
    EXPECT_TRUE(fs::is_regular_file(file)) << file;
  }
  EXPECT_EQ(r->partition.parts.size(), 2u);
  EXPECT_TRUE(r->warnings.empty());
  EXPECT_EQ(ReadJson(ws.out / "manifest.json"), r->manifest);
  EXPECT_EQ(ReadJson(ws.out / "device_map.json"), r->device_map);
  EXPECT_EQ(r->device_map["format"], "tessera-device-map/1");
  EXPECT_GE(r->partition_s, 0);
  ASSERT_FALSE(stages.empty());
  EXPECT_EQ(stages.front(), "partitioning");
  EXPECT_THAT(stages, ::testing::Contains("building part 2 of 2"));
  EXPECT_THAT(stages.back(), HasSubstr("writing"));
}

// The parts on disk parse back as ONNX models, each with its own nodes.
TEST(SplitModel, WrittenPartsParseBack) {
  Workspace ws;
  const graph::Model model = LoadFile(ws.Model(testlib::SmallCnn(1)));
  auto r = SplitModel(model, CnnModelPlan(), ws.Options());
  ASSERT_TRUE(r) << r.error().message;
  const std::vector<std::vector<std::string>> nodes = {{"conv", "relu"},
                                                       {"flatten", "fc"}};
  for (int i = 0; i < 2; ++i) {
    onnx::ModelProto part;
    ASSERT_TRUE(part.ParseFromString(ReadText(ws.out / PartFileName(i)))) << i;
    std::vector<std::string> names;
    for (const auto& n : part.graph().node()) names.push_back(n.name());
    EXPECT_EQ(names, nodes[i]);
    EXPECT_EQ(part.ir_version(), 8);
    auto checked = CheckPart(part, i, ws.out.string());
    EXPECT_TRUE(checked) << checked.error().message;
  }
}

TEST(SplitModel, ManifestDescribesPartsTransfersAndOrder) {
  Workspace ws;
  const std::string path = ws.Model(testlib::SmallCnn(1));
  const graph::Model model = LoadFile(path);
  auto r = SplitModel(model, CnnModelPlan(), ws.Options());
  ASSERT_TRUE(r) << r.error().message;
  const Json& m = r->manifest;
  EXPECT_EQ(m["format"], "tessera-split/1");
  EXPECT_EQ(m["model"], path);
  EXPECT_EQ(m["plan"], "plans/plan.json");
  EXPECT_EQ(m["algorithm"], "m-etf");
  EXPECT_EQ(m["inputs"], Json::parse(R"(["x"])"));
  EXPECT_EQ(m["outputs"], Json::parse(R"(["logits"])"));
  EXPECT_EQ(m["devices"], Json::parse(R"(["node0/gpu0", "node0/gpu1"])"));
  EXPECT_EQ(m["devices_used"], 2);
  EXPECT_EQ(m["device_cycle"], false);
  ASSERT_EQ(m["parts"].size(), 2u);
  const Json& p0 = m["parts"][0];
  EXPECT_EQ(p0["index"], 0);
  EXPECT_EQ(p0["file"], "part_0.onnx");
  EXPECT_EQ(p0["device"], "node0/gpu0");
  EXPECT_EQ(p0["level"], 0);
  EXPECT_EQ(p0["ops"], 2);
  EXPECT_EQ(p0["inputs"], Json::parse(R"(["x"])"));
  EXPECT_EQ(p0["outputs"], Json::parse(R"(["relu_out"])"));
  EXPECT_EQ(p0["weight_bytes"], (4 * 3 * 3 * 3 + 4) * 4);  // w, b
  const Json& p1 = m["parts"][1];
  EXPECT_EQ(p1["file"], "part_1.onnx");
  EXPECT_EQ(p1["device"], "node0/gpu1");
  EXPECT_EQ(p1["level"], 1);
  EXPECT_EQ(p1["inputs"], Json::parse(R"(["relu_out"])"));
  EXPECT_EQ(p1["outputs"], Json::parse(R"(["logits"])"));
  EXPECT_EQ(p1["weight_bytes"], (10 * 256 + 10) * 4);  // fc_w, fc_b
  ASSERT_EQ(m["transfers"].size(), 1u);
  const Json& t = m["transfers"][0];
  EXPECT_EQ(t["tensor"], "relu_out");
  EXPECT_EQ(t["from_part"], 0);
  EXPECT_EQ(t["to_part"], 1);
  EXPECT_EQ(t["from_device"], "node0/gpu0");
  EXPECT_EQ(t["to_device"], "node0/gpu1");
  EXPECT_EQ(t["bytes"], 4 * 8 * 8 * 4);  // relu_out[1,4,8,8] float
  EXPECT_EQ(m["transfer_bytes"], 4 * 8 * 8 * 4);
  EXPECT_EQ(m["order"], Json::parse("[0, 1]"));
}

// A device cycle: three parts on two devices, flagged, in order.
TEST(SplitModel, ManifestOfADeviceCycle) {
  Workspace ws;
  const graph::Model model = LoadFile(ws.Model(testlib::SmallCnn(1)));
  auto r = SplitModel(model, CyclePlan(), ws.Options());
  ASSERT_TRUE(r) << r.error().message;
  const Json& m = r->manifest;
  EXPECT_EQ(m["device_cycle"], true);
  EXPECT_EQ(m["devices_used"], 2);
  ASSERT_EQ(m["parts"].size(), 3u);
  EXPECT_EQ(m["parts"][2]["device"], "node0/gpu0");
  EXPECT_EQ(m["parts"][2]["level"], 2);
  EXPECT_EQ(m["order"], Json::parse("[0, 1, 2]"));
  ASSERT_EQ(m["transfers"].size(), 2u);
  EXPECT_EQ(m["transfers"][0]["tensor"], "conv_out");
  EXPECT_EQ(m["transfers"][1]["tensor"], "relu_out");
  EXPECT_EQ(m["transfer_bytes"], 2 * 4 * 8 * 8 * 4);
  EXPECT_TRUE(fs::exists(ws.out / "part_2.onnx"));
}

// With a symbolic batch, a transfer's size is unknown: null, not a guess.
TEST(SplitModel, UnboundSymbolicDimsGiveNullBytes) {
  Workspace ws;
  const graph::Model model =
      LoadFile(ws.Model(testlib::SmallCnn(std::string("N"))));
  auto r = SplitModel(model, CnnModelPlan(), ws.Options());
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->manifest["transfers"].size(), 1u);
  EXPECT_TRUE(r->manifest["transfers"][0]["bytes"].is_null());
  EXPECT_TRUE(r->manifest["transfer_bytes"].is_null());
  // Weights have known sizes all the same.
  EXPECT_EQ(r->manifest["parts"][0]["weight_bytes"], (4 * 3 * 3 * 3 + 4) * 4);
}

// Binding the batch when loading makes the size known.
TEST(SplitModel, BoundSymbolicDimsGiveBytes) {
  Workspace ws;
  graph::LoadOptions options;
  options.keep_proto = true;
  options.batch = 2;
  auto model =
      graph::LoadModel(ws.Model(testlib::SmallCnn(std::string("N"))), options);
  ASSERT_TRUE(model) << model.error().message;
  auto r = SplitModel(*model, CnnModelPlan(), ws.Options());
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->manifest["transfers"][0]["bytes"], 2 * 4 * 8 * 8 * 4);
}

TEST(SplitModel, RefusesANonEmptyDirectory) {
  Workspace ws;
  fs::create_directories(ws.out);
  std::ofstream(ws.out / "notes.txt") << "mine";
  const graph::Model model = LoadFile(ws.Model(testlib::SmallCnn(1)));
  auto r = SplitModel(model, CnnModelPlan(), ws.Options());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kBadInput);
  EXPECT_THAT(r.error().message, HasSubstr(ws.out.string()));
  EXPECT_THAT(r.error().message, HasSubstr("not empty"));
  EXPECT_THAT(r.error().message, HasSubstr("--force"));
  EXPECT_FALSE(fs::exists(ws.out / "part_0.onnx"));
  EXPECT_EQ(ReadText(ws.out / "notes.txt"), "mine");
}

// An existing empty directory is fine without force.
TEST(SplitModel, WritesIntoAnEmptyDirectory) {
  Workspace ws;
  fs::create_directories(ws.out);
  const graph::Model model = LoadFile(ws.Model(testlib::SmallCnn(1)));
  auto r = SplitModel(model, CnnModelPlan(), ws.Options());
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(fs::exists(ws.out / "part_1.onnx"));
}

// force replaces an earlier split (three parts there, one now: the stale
// part files go) and leaves other files alone.
TEST(SplitModel, ForceReplacesAnEarlierSplitAndKeepsOtherFiles) {
  Workspace ws;
  const graph::Model model = LoadFile(ws.Model(testlib::SmallCnn(1)));
  auto first = SplitModel(model, CyclePlan(), ws.Options());
  ASSERT_TRUE(first) << first.error().message;
  ASSERT_TRUE(fs::exists(ws.out / "part_2.onnx"));
  std::ofstream(ws.out / "notes.txt") << "mine";
  std::ofstream(ws.out / "part_notes.txt") << "mine too";

  auto refused = SplitModel(model, OneDevicePlan(), ws.Options());
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kBadInput);

  auto second = SplitModel(model, OneDevicePlan(), ws.Options(true));
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_TRUE(fs::exists(ws.out / "part_0.onnx"));
  EXPECT_FALSE(fs::exists(ws.out / "part_1.onnx"));
  EXPECT_FALSE(fs::exists(ws.out / "part_2.onnx"));
  EXPECT_EQ(ReadText(ws.out / "notes.txt"), "mine");
  EXPECT_EQ(ReadText(ws.out / "part_notes.txt"), "mine too");
  EXPECT_EQ(ReadJson(ws.out / "manifest.json")["parts"].size(), 1u);
  onnx::ModelProto part;
  ASSERT_TRUE(part.ParseFromString(ReadText(ws.out / "part_0.onnx")));
  EXPECT_EQ(part.graph().node_size(), 4);
}

// "Leaves others" includes the user's symbolic links: force removes only
// what a split writes (weight links are re-made by name, or reused).
TEST(SplitModel, ForceKeepsTheUsersSymbolicLinks) {
  Workspace ws;
  const graph::Model model = LoadFile(ws.Model(testlib::SmallCnn(1)));
  fs::create_directories(ws.out);
  std::ofstream(ws.root.path() / "notes.txt") << "mine";
  fs::create_symlink(ws.root.path() / "notes.txt", ws.out / "notes_link.txt");
  auto r = SplitModel(model, CnnModelPlan(), ws.Options(true));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(fs::is_symlink(ws.out / "notes_link.txt"));
}

TEST(SplitModel, RefusesADirectoryPathThatIsAFile) {
  Workspace ws;
  std::ofstream(ws.out) << "a file";
  const graph::Model model = LoadFile(ws.Model(testlib::SmallCnn(1)));
  for (const bool force : {false, true}) {
    auto r = SplitModel(model, CnnModelPlan(), ws.Options(force));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, ErrorCode::kBadInput);
    EXPECT_THAT(r.error().message, HasSubstr("not a directory"));
  }
  EXPECT_EQ(ReadText(ws.out), "a file");
}

// A plan for another model fails before the directory is made.
TEST(SplitModel, APlanThatDoesNotMatchWritesNothing) {
  Workspace ws;
  const graph::Model model = LoadFile(ws.Model(testlib::SmallCnn(1)));
  PlanAssignment plan = CnnModelPlan();
  plan.placement.emplace_back("ghost", 0);
  auto r = SplitModel(model, plan, ws.Options());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kBadInput);
  EXPECT_THAT(r.error().message, HasSubstr("'ghost'"));
  EXPECT_FALSE(fs::exists(ws.out));

  plan = PlanOf({{"conv", 0}});
  r = SplitModel(model, plan, ws.Options());
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("leaves out 3"));
  EXPECT_FALSE(fs::exists(ws.out));
}

// SmallCnn(1) with w and fc_w in "weights.bin" beside the model.
OnnxModelBuilder ExternalCnn() {
  OnnxModelBuilder b = testlib::SmallCnn(1);
  b.proto().clear_initializer();
  b.AddInitializer("w", {4, 3, 3, 3}, kFloat,
                   ExternalData{"weights.bin", 0, 432});
  b.AddInitializer("b", {4});
  b.AddInitializer("fc_w", {10, 256}, kFloat,
                   ExternalData{"weights.bin", 432, 10240});
  b.AddInitializer("fc_b", {10});
  return b;
}

// External weights stay in their file: the parts point at a link to it in
// the output directory, and nothing is copied.
TEST(SplitModel, ExternalWeightsAreLinkedNotCopied) {
  Workspace ws;
  const std::string path = ws.Model(ExternalCnn());
  std::ofstream(ws.root.path() / "weights.bin", std::ios::binary)
      << std::string(432 + 10240, '\x02');
  const graph::Model model = LoadFile(path);
  auto r = SplitModel(model, CnnModelPlan(), ws.Options());
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->warnings.empty()) << r->warnings[0];
  for (int i = 0; i < 2; ++i) {
    onnx::ModelProto part;
    ASSERT_TRUE(part.ParseFromString(ReadText(ws.out / PartFileName(i))));
    const onnx::TensorProto& w = part.graph().initializer(0);
    ASSERT_EQ(w.data_location(), onnx::TensorProto::EXTERNAL);
    std::string location;
    for (const auto& e : w.external_data()) {
      if (e.key() == "location") location = e.value();
    }
    EXPECT_EQ(location, "weights.bin");
    EXPECT_TRUE(
        fs::equivalent(ws.out / location, ws.root.path() / "weights.bin"));
  }
}

// A structure-only model (its weights file absent) still splits into valid
// parts, with a warning naming the file.
TEST(SplitModel, MissingExternalDataIsAWarning) {
  Workspace ws;
  const graph::Model model = LoadFile(ws.Model(ExternalCnn()));
  auto r = SplitModel(model, CnnModelPlan(), ws.Options());
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_THAT(r->warnings[0], HasSubstr("weights.bin"));
  EXPECT_THAT(r->warnings[0], HasSubstr("does not exist"));
  EXPECT_TRUE(fs::exists(ws.out / "part_1.onnx"));
}

// With check off, parts are written without running the checker (here one
// the checker would reject: a node of an unknown ai.onnx operator).
TEST(SplitModel, CheckOffSkipsTheChecker) {
  Workspace ws;
  OnnxModelBuilder b("unknown_op");
  b.AddInput("x", kFloat, std::vector<Dim>{2, 3});
  b.AddNode("Relu", {"x"}, {"t"}, "a");
  b.AddNode("NoSuchOperator", {"t"}, {"y"}, "b");
  b.AddOutput("y", kFloat, std::vector<Dim>{2, 3});
  const graph::Model model = LoadFile(ws.Model(b));
  const PlanAssignment plan = PlanOf({{"a", 0}, {"b", 0}});
  auto checked = SplitModel(model, plan, ws.Options());
  ASSERT_FALSE(checked);
  EXPECT_THAT(checked.error().message, HasSubstr("checker"));
  // It made the directory, and removes it again.
  EXPECT_FALSE(fs::exists(ws.out));
  SplitOptions options = ws.Options();
  options.check = false;
  auto unchecked = SplitModel(model, plan, options);
  ASSERT_TRUE(unchecked) << unchecked.error().message;
  EXPECT_TRUE(fs::exists(ws.out / "part_0.onnx"));
}

// A split that fails after making its directory leaves nothing behind, even
// when it had linked the model's external weights there: a second try must
// not find a non-empty directory it did not ask for.
TEST(SplitModel, AFailedSplitRemovesTheDirectoryItMade) {
  Workspace ws;
  OnnxModelBuilder b = ExternalCnn();
  b.AddNode("NoSuchOperator", {"logits"}, {"bogus"}, "bogus");
  b.AddOutput("bogus", kFloat, std::vector<Dim>{1, 10});
  const std::string path = ws.Model(b);
  std::ofstream(ws.root.path() / "weights.bin", std::ios::binary)
      << std::string(432 + 10240, '\x02');
  const graph::Model model = LoadFile(path);
  PlanAssignment plan = OneDevicePlan();
  plan.placement.emplace_back("bogus", 1);
  auto r = SplitModel(model, plan, ws.Options());
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("fails ONNX's checker"));
  EXPECT_FALSE(fs::exists(ws.out))
      << "left behind, with the link to the weights in it";
  // The weights themselves are untouched.
  EXPECT_EQ(fs::file_size(ws.root.path() / "weights.bin"), 432u + 10240u);
}

}  // namespace
}  // namespace tessera::split
