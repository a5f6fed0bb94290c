// LoadModel rejects bad files with kBadInput errors that name the file and
// the node or tensor at fault, and never crashes on damaged input.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>

#include "graph/graph.h"
#include "tests/testlib/onnx_model_builder.h"

namespace tessera::graph {
namespace {

using ::testing::HasSubstr;
using testlib::Dim;
using testlib::kFloat;
using testlib::OnnxModelBuilder;
using testlib::TempDir;

// Mutated models tried per run; TESSERA_MUTATIONS=N runs a longer fuzz.
int Mutations() {
  const char* n = std::getenv("TESSERA_MUTATIONS");
  return n ? std::atoi(n) : 500;
}

// Loads `path` expecting a kBadInput error whose message names the file.
std::string ExpectBadInput(const std::string& path) {
  auto model = LoadModel(path, {});
  if (model) {
    ADD_FAILURE() << path << " loaded, but an error was expected";
    return "";
  }
  EXPECT_EQ(model.error().code, ErrorCode::kBadInput);
  EXPECT_THAT(model.error().message, HasSubstr(path));
  return model.error().message;
}

TEST(LoadModel, RejectsMissingFile) {
  TempDir dir;
  const std::string message = ExpectBadInput(dir.File("absent.onnx"));
  EXPECT_THAT(message, HasSubstr("no such file"));
}

TEST(LoadModel, RejectsDirectory) {
  TempDir dir;
  std::filesystem::create_directory(dir.File("model.onnx"));
  const std::string message = ExpectBadInput(dir.File("model.onnx"));
  EXPECT_THAT(message, HasSubstr("is a directory"));
}

TEST(LoadModel, RejectsEmptyFile) {
  TempDir dir;
  const std::string message = ExpectBadInput(dir.Write("empty.onnx", ""));
  EXPECT_THAT(message, HasSubstr("empty file"));
}

TEST(LoadModel, RejectsRandomBytes) {
  TempDir dir;
  for (const uint32_t seed : {1u, 2u, 3u, 42u, 1234u, 99999u}) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> byte(0, 255);
    std::string bytes(64 + seed % 4096, '\0');
    for (char& c : bytes) c = static_cast<char>(byte(rng));
    SCOPED_TRACE("seed " + std::to_string(seed));
    ExpectBadInput(dir.Write("random.onnx", bytes));
  }
}

// The bytes entry point (uploads, the fuzz target) loads what the file
// would, and names `source` where LoadModel names the path.
TEST(LoadModelFromBytes, LoadsAsTheFileDoes) {
  TempDir dir;
  const OnnxModelBuilder m = testlib::SmallCnn(1);
  auto from_file = LoadModel(dir.Write("cnn.onnx", m), {});
  ASSERT_TRUE(from_file) << from_file.error().message;
  auto from_bytes = LoadModelFromBytes(m.Serialize(), "upload:cnn", {});
  ASSERT_TRUE(from_bytes) << from_bytes.error().message;
  EXPECT_EQ(from_bytes->path, "upload:cnn");
  EXPECT_EQ(from_bytes->graph->num_nodes(), from_file->graph->num_nodes());
  EXPECT_EQ(from_bytes->weights.elements, from_file->weights.elements);
  auto bad = LoadModelFromBytes("graph { node { } }\n", "upload:text", {});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ErrorCode::kBadInput);
  EXPECT_THAT(bad.error().message, HasSubstr("upload:text: not an ONNX model"));
}

TEST(LoadModel, RejectsTextFile) {
  TempDir dir;
  const std::string message =
      ExpectBadInput(dir.Write("model.onnx", "graph { node { } }\n"));
  EXPECT_THAT(message, HasSubstr("not an ONNX model"));
}

TEST(LoadModel, RejectsModelWithoutOpsetImport) {
  OnnxModelBuilder m = testlib::SmallCnn(1);
  onnx::ModelProto proto = m.Build();
  proto.clear_opset_import();
  TempDir dir;
  const std::string message =
      ExpectBadInput(dir.Write("model.onnx", proto.SerializeAsString()));
  EXPECT_THAT(message, HasSubstr("imports no operator set"));
}

// Every prefix of a real model either loads or fails cleanly.
void LoadEveryTruncation(const std::string& bytes, size_t step) {
  TempDir dir;
  const std::string path = dir.File("truncated.onnx");
  int loaded = 0;
  for (size_t length = 0; length < bytes.size(); length += step) {
    dir.Write("truncated.onnx", bytes.substr(0, length));
    auto model = LoadModel(path, {});
    if (model) {
      ++loaded;
      continue;
    }
    EXPECT_EQ(model.error().code, ErrorCode::kBadInput) << length;
    EXPECT_THAT(model.error().message, HasSubstr(path)) << length;
  }
  // Most prefixes cut a field in half; the full file loads.
  EXPECT_LT(loaded, static_cast<int>(bytes.size() / step));
  dir.Write("truncated.onnx", bytes);
  EXPECT_TRUE(LoadModel(path, {}));
}

TEST(LoadModel, SurvivesEveryTruncationOfASmallModel) {
  OnnxModelBuilder m = testlib::SmallCnn();
  // Without weight bytes the file is small enough to cut at every length.
  for (auto& t : *m.proto().mutable_initializer()) t.clear_raw_data();
  LoadEveryTruncation(m.Serialize(), 1);
}

TEST(LoadModel, SurvivesTruncationsOfAModelWithWeightsAndBranches) {
  OnnxModelBuilder m = testlib::SmallCnn();
  testlib::OnnxGraphBuilder then_branch("then");
  then_branch.AddConstant("c", {2, 2});
  then_branch.AddNode("Add", {"c", "logits"}, {"t"}, "then_add");
  then_branch.AddOutput("t");
  testlib::OnnxGraphBuilder else_branch("else");
  else_branch.AddNode("Neg", {"logits"}, {"e"}, "else_neg");
  else_branch.AddOutput("e");
  m.AddInput("cond", testlib::kBool, std::vector<Dim>{});
  m.AddIf("cond", {"out"}, "if", then_branch.proto(), else_branch.proto());
  m.AddOutput("out");
  const std::string bytes = m.Serialize();
  ASSERT_GT(bytes.size(), 10000u);
  LoadEveryTruncation(bytes, 7);
}

// Models with a few bytes changed (seeded) parse into odd but valid protos
// as often as not: each must load or fail cleanly.
TEST(LoadModel, SurvivesRandomByteChanges) {
  OnnxModelBuilder m = testlib::SmallCnn();
  for (auto& t : *m.proto().mutable_initializer()) t.clear_raw_data();
  const std::string original = m.Serialize();
  TempDir dir;
  const std::string path = dir.File("mutated.onnx");
  std::mt19937 rng(7);
  const int mutations = Mutations();
  for (int i = 0; i < mutations; ++i) {
    std::string bytes = original;
    const int changes = 1 + static_cast<int>(rng() % 4);
    for (int c = 0; c < changes; ++c) {
      bytes[rng() % bytes.size()] = static_cast<char>(rng() % 256);
    }
    dir.Write("mutated.onnx", bytes);
    auto model = LoadModel(path, {});
    if (model) continue;
    EXPECT_EQ(model.error().code, ErrorCode::kBadInput) << i;
    EXPECT_THAT(model.error().message, HasSubstr(path)) << i;
  }
}

TEST(LoadModel, RejectsCycleNamingTheNodes) {
  OnnxModelBuilder m;
  m.AddInput("x", kFloat, std::vector<Dim>{2});
  m.AddNode("Add", {"x", "t2"}, {"t1"}, "first");
  m.AddNode("Relu", {"t1"}, {"t2"}, "second");
  m.AddOutput("t1");
  TempDir dir;
  const std::string message = ExpectBadInput(dir.Write("cycle.onnx", m));
  EXPECT_THAT(message, HasSubstr("cycle"));
  EXPECT_THAT(message, HasSubstr("'first' (Add)"));
  EXPECT_THAT(message, HasSubstr("'second' (Relu)"));
}

TEST(LoadModel, RejectsSelfLoop) {
  OnnxModelBuilder m;
  m.AddInput("x", kFloat, std::vector<Dim>{2});
  m.AddNode("Add", {"x", "t"}, {"t"}, "loop");
  m.AddOutput("t");
  TempDir dir;
  const std::string message = ExpectBadInput(dir.Write("loop.onnx", m));
  EXPECT_THAT(message, HasSubstr("'loop' (Add) -> 'loop' (Add)"));
}

TEST(LoadModel, RejectsTensorNeverProducedNamingTensorAndNode) {
  OnnxModelBuilder m;
  m.AddInput("x", kFloat, std::vector<Dim>{2});
  m.AddNode("Add", {"x", "ghost"}, {"y"}, "adder");
  m.AddOutput("y");
  TempDir dir;
  const std::string message = ExpectBadInput(dir.Write("dangling.onnx", m));
  EXPECT_THAT(message, HasSubstr("'ghost'"));
  EXPECT_THAT(message, HasSubstr("'adder' (Add)"));
}

// ONNX 1.12's shape inference crashes on Shape of an undefined tensor (found
// by mutating models/zoo/gpt2.onnx): LoadModel must validate first.
TEST(LoadModel, RejectsShapeOfUndefinedTensorWithoutCrashing) {
  OnnxModelBuilder m;
  m.SetOpset("", 17);
  m.AddInput("x", kFloat, std::vector<Dim>{2});
  m.AddNode("Shape", {"ghost"}, {"s"}, "shape");
  m.AddOutput("s", testlib::kInt64);
  TempDir dir;
  const std::string message = ExpectBadInput(dir.Write("shape.onnx", m));
  EXPECT_THAT(message, HasSubstr("'ghost'"));
}

TEST(LoadModel, RejectsTensorNeverProducedInsideABranch) {
  testlib::OnnxGraphBuilder branch("then");
  branch.AddNode("Relu", {"nowhere"}, {"r"}, "inner");
  branch.AddOutput("r");
  OnnxModelBuilder m;
  m.AddInput("cond", testlib::kBool, std::vector<Dim>{});
  m.AddIf("cond", {"y"}, "if", branch.proto(), branch.proto());
  m.AddOutput("y");
  TempDir dir;
  const std::string message = ExpectBadInput(dir.Write("branch.onnx", m));
  EXPECT_THAT(message, HasSubstr("'nowhere'"));
  EXPECT_THAT(message, HasSubstr("'inner' (Relu)"));
  EXPECT_THAT(message, HasSubstr("'if' (If)"));
}

TEST(LoadModel, RejectsGraphOutputNeverProduced) {
  OnnxModelBuilder m = testlib::SmallCnn(1);
  m.AddOutput("phantom");
  TempDir dir;
  const std::string message = ExpectBadInput(dir.Write("output.onnx", m));
  EXPECT_THAT(message, HasSubstr("graph output 'phantom' is never produced"));
}

TEST(LoadModel, RejectsTensorProducedTwice) {
  OnnxModelBuilder m;
  m.AddInput("x", kFloat, std::vector<Dim>{2});
  m.AddNode("Relu", {"x"}, {"t"}, "one");
  m.AddNode("Neg", {"x"}, {"t"}, "two");
  m.AddOutput("t");
  TempDir dir;
  const std::string message = ExpectBadInput(dir.Write("twice.onnx", m));
  EXPECT_THAT(message, HasSubstr("'t' is defined twice"));
  EXPECT_THAT(message, HasSubstr("'two' (Neg)"));
}

TEST(LoadModel, RejectsNodeOverwritingAGraphInput) {
  OnnxModelBuilder m;
  m.AddInput("x", kFloat, std::vector<Dim>{2});
  m.AddNode("Relu", {"x"}, {"x"}, "overwrite");
  m.AddOutput("x");
  TempDir dir;
  const std::string message = ExpectBadInput(dir.Write("input.onnx", m));
  EXPECT_THAT(message, HasSubstr("'x' is defined twice"));
}

TEST(LoadModel, RejectsNodeOverwritingAnInitializer) {
  OnnxModelBuilder m = testlib::SmallCnn(1);
  m.AddNode("Relu", {"logits"}, {"fc_w"}, "clobber");
  TempDir dir;
  const std::string message = ExpectBadInput(dir.Write("init.onnx", m));
  EXPECT_THAT(message, HasSubstr("'fc_w' is defined twice"));
  EXPECT_THAT(message, HasSubstr("'clobber' (Relu)"));
}

}  // namespace
}  // namespace tessera::graph

namespace tessera::graph {
namespace {

// LoadModelFromBytes loads what LoadModel would; max_nodes refuses a larger
// graph (subgraphs' nodes counted) before shape inference.
TEST(LoadModelFromBytes, LoadsLikeTheFileAndCapsTheNodes) {
  const std::string bytes = testlib::SmallCnn(int64_t{2}).Serialize();
  LoadOptions options;
  auto model = LoadModelFromBytes(bytes, "upload", options);
  ASSERT_TRUE(model) << model.error().message;
  EXPECT_EQ(model->graph->num_nodes(), 4u);
  EXPECT_EQ(model->path, "upload");
  options.max_nodes = 4;
  EXPECT_TRUE(LoadModelFromBytes(bytes, "upload", options));
  options.max_nodes = 3;
  auto capped = LoadModelFromBytes(bytes, "upload", options);
  ASSERT_FALSE(capped);
  EXPECT_THAT(capped.error().message,
              HasSubstr("upload: 4 nodes, more than the 3 allowed"));
  // A flood of fields (here empty input names, 2 bytes each) is refused
  // before parsing allocates them.
  testlib::OnnxModelBuilder flood = testlib::SmallCnn(int64_t{2});
  for (int i = 0; i < 1000; ++i) flood.proto().mutable_node(1)->add_input("");
  const std::string flooded = flood.Serialize();
  options.max_nodes = 0;
  options.max_fields = 500;
  auto refused = LoadModelFromBytes(flooded, "upload", options);
  ASSERT_FALSE(refused);
  EXPECT_THAT(refused.error().message,
              HasSubstr("upload: more than 500 protobuf fields"));
  options.max_fields = 200;  // the model itself has fewer
  EXPECT_TRUE(LoadModelFromBytes(bytes, "upload", options));
  auto garbage = LoadModelFromBytes("garbage", "upload", options);
  ASSERT_FALSE(garbage);
  EXPECT_THAT(garbage.error().message, HasSubstr("not an ONNX model"));
}

}  // namespace
}  // namespace tessera::graph
