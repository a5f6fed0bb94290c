// End-to-end tests of `tessera inspect`: runs the built binary (TESSERA_BIN)
// and checks its exit code, stdout and stderr.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "tests/cli/cli_runner.h"
#include "tests/testlib/onnx_model_builder.h"
#include "tests/testlib/repo_paths.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

using testlib::RunResult;

class InspectCli : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = dir_.Write("cnn.onnx", testlib::SmallCnn("N"));
  }

  RunResult Run(const std::string& args) const {
    return testlib::RunTessera(args, dir_);
  }

  testlib::TempDir dir_;
  std::string model_;
};

TEST_F(InspectCli, DescribesAModel) {
  const RunResult r = Run("inspect '" + model_ + "' --batch 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, StartsWith(model_ + "\n"));
  EXPECT_THAT(r.out, HasSubstr("nodes"));
  EXPECT_THAT(r.out, HasSubstr("4 (4 with subgraphs)"));
  EXPECT_THAT(r.out, HasSubstr("weights"));
  EXPECT_THAT(r.out, HasSubstr("4 tensors, 2,682 elements, 10.5 KiB"));
  EXPECT_THAT(r.out, HasSubstr("all known"));
  EXPECT_THAT(r.out, HasSubstr("2x3x8x8"));
  EXPECT_EQ(r.err, "");
}

TEST_F(InspectCli, ListsUnknownShapesWhenInputsAreUnbound) {
  const RunResult r = Run("inspect '" + model_ + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("tensors with unknown shape"));
  EXPECT_THAT(r.out, HasSubstr("Conv conv"));
  EXPECT_THAT(r.out, HasSubstr("Nx3x8x8"));
}

TEST_F(InspectCli, PrintsJson) {
  const RunResult r = Run("inspect '" + model_ + "' --json --input x=1x3x8x8");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["nodes"], 4);
  EXPECT_EQ(j["nodes_with_subgraphs"], 4);
  EXPECT_EQ(j["edges"], 3);
  EXPECT_EQ(
      j["op_histogram"],
      nlohmann::json({{"Conv", 1}, {"Flatten", 1}, {"Gemm", 1}, {"Relu", 1}}));
  EXPECT_EQ(j["weights"]["tensors"], 4);
  EXPECT_EQ(j["weights"]["elements"], 2682);
  EXPECT_EQ(j["weights"]["bytes"], 10728);
  ASSERT_EQ(j["inputs"].size(), 1u);
  EXPECT_EQ(j["inputs"][0]["name"], "x");
  EXPECT_EQ(j["inputs"][0]["dtype"], "float32");
  EXPECT_EQ(j["inputs"][0]["shape"], nlohmann::json({1, 3, 8, 8}));
  ASSERT_EQ(j["outputs"].size(), 1u);
  EXPECT_EQ(j["outputs"][0]["name"], "logits");
  EXPECT_EQ(j["outputs"][0]["shape"], nlohmann::json({1, 10}));
  EXPECT_EQ(j["unknown_shapes"], 0);
}

TEST_F(InspectCli, WritesDotToStdout) {
  const RunResult r = Run("inspect '" + model_ + "' --dot -");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, StartsWith("digraph"));
  EXPECT_THAT(r.out, HasSubstr("n0 -> n1"));
}

TEST_F(InspectCli, WritesDotToAFile) {
  const std::string dot = dir_.File("graph.dot");
  const RunResult r = Run("inspect '" + model_ + "' --dot '" + dot + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(testlib::ReadFile(dot), StartsWith("digraph"));
  EXPECT_THAT(r.out, HasSubstr("nodes"));  // the description still prints
}

TEST_F(InspectCli, UnwritableDotFileExitsTwo) {
  const std::string dot = dir_.File("no_such_dir/graph.dot");
  const RunResult r = Run("inspect '" + model_ + "' --dot '" + dot + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr(dot));
}

TEST_F(InspectCli, MissingFileExitsTwoNamingTheFile) {
  const std::string missing = dir_.File("missing.onnx");
  const RunResult r = Run("inspect '" + missing + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("tessera: error: " + missing));
  EXPECT_EQ(r.out, "");
}

TEST_F(InspectCli, BadInputBindingExitsTwo) {
  for (const char* binding : {"x=1xa", "nope=1x2", "x=1x3"}) {
    const RunResult r = Run("inspect '" + model_ + "' --input " + binding);
    EXPECT_EQ(r.exit_code, 2) << binding;
    EXPECT_THAT(r.err, HasSubstr("--input '")) << binding;
    EXPECT_THAT(r.err, Not(HasSubstr("inputs."))) << binding;
  }
}

TEST_F(InspectCli, BadBatchExitsTwo) {
  const RunResult r = Run("inspect '" + model_ + "' --batch 0");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--batch: must be a positive integer, got 0"));
}

TEST_F(InspectCli, UnknownFlagExitsTwo) {
  const RunResult r = Run("inspect '" + model_ + "' --frobnicate");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--frobnicate"));
}

TEST_F(InspectCli, MissingCommandExitsTwo) { EXPECT_EQ(Run("").exit_code, 2); }

TEST_F(InspectCli, HelpExitsZeroWithExamples) {
  const RunResult r = Run("inspect --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("Examples"));
  EXPECT_THAT(r.out, HasSubstr("--batch"));
}

TEST_F(InspectCli, WarningsGoToStderr) {
  testlib::OnnxModelBuilder m = testlib::SmallCnn(1);
  m.SetOpset("", 99);
  const std::string path = dir_.Write("future.onnx", m);
  const RunResult r = Run("inspect '" + path + "' --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("tessera: warning: " + path));
  EXPECT_TRUE(nlohmann::json::accept(r.out)) << r.out;
}

}  // namespace
}  // namespace tessera
