// Golden figures for the model zoo (models/zoo/, written by
// models/export_zoo.py): one instance per model, so a change in loading shows
// up as a named model. The literals below agree with models/zoo/figures.json
// (computed in Python from the same files); MatchesFiguresJson keeps them in
// step when the zoo is re-exported. Weight bytes were cross-checked in Python
// (elements x dtype size over initializers and Constant values).
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "tests/testlib/onnx_model_builder.h"
#include "tests/testlib/repo_paths.h"

namespace tessera::graph {
namespace {

struct Value {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;  // at batch 1; the leading dim is the batch
};

struct ZooModel {
  std::string name;
  size_t nodes;
  int64_t weight_tensors, weight_elements, weight_bytes;
  std::vector<Value> inputs, outputs;
};

// Names the model in test output instead of dumping the struct's bytes.
void PrintTo(const ZooModel& z, std::ostream* os) { *os << z.name; }

const std::vector<int64_t> kImage224 = {1, 3, 224, 224};
const Value kLogits = {"logits", "float32", {1, 1000}};

const ZooModel kZoo[] = {
    {.name = "resnet50",
     .nodes = 175,
     .weight_tensors = 267,
     .weight_elements = 25'610'152,
     .weight_bytes = 102'440'608,
     .inputs = {{"input", "float32", kImage224}},
     .outputs = {kLogits}},
    {.name = "mobilenet_v2",
     .nodes = 222,
     .weight_tensors = 332,
     .weight_elements = 3'539'054,
     .weight_bytes = 14'156'216,
     .inputs = {{"input", "float32", kImage224}},
     .outputs = {kLogits}},
    {.name = "inception_v3",
     .nodes = 327,
     .weight_tensors = 481,
     .weight_elements = 23'869'072,
     .weight_bytes = 95'476'576,
     .inputs = {{"input", "float32", {1, 3, 299, 299}}},
     .outputs = {kLogits}},
    {.name = "vgg16",
     .nodes = 38,
     .weight_tensors = 32,
     .weight_elements = 138'357'544,
     .weight_bytes = 553'430'176,
     .inputs = {{"input", "float32", kImage224}},
     .outputs = {kLogits}},
    {.name = "vit_b_16",
     .nodes = 756,
     .weight_tensors = 413,
     .weight_elements = 86'567'941,
     .weight_bytes = 346'272'712,
     .inputs = {{"input", "float32", kImage224}},
     .outputs = {kLogits}},
    {.name = "gpt2",
     .nodes = 810,
     .weight_tensors = 416,
     .weight_elements = 164'087'073,
     .weight_bytes = 653'207'572,
     .inputs = {{"input_ids", "int64", {1, 1024}}},
     .outputs = {{"logits", "float32", {1, 1024, 50257}}}},
    {.name = "bert_base",
     .nodes = 787,
     .weight_tensors = 445,
     .weight_elements = 109'482'613,
     .weight_bytes = 437'931'744,
     .inputs = {{"input_ids", "int64", {1, 128}},
                {"attention_mask", "int64", {1, 128}},
                {"token_type_ids", "int64", {1, 128}}},
     .outputs = {{"last_hidden_state", "float32", {1, 128, 768}},
                 {"pooler_output", "float32", {1, 768}}}},
};

std::string ZooDir() { return std::string(TESSERA_SOURCE_DIR) + "/models/zoo"; }

std::vector<Value> Values(const OpGraph& g, std::span<const TensorId> ids) {
  std::vector<Value> out;
  for (const TensorId t : ids) {
    const TensorView v = g.tensor(t);
    Value value{std::string(v.name), std::string(DataTypeName(v.dtype)), {}};
    if (v.dims) value.shape.assign(v.dims->begin(), v.dims->end());
    out.push_back(std::move(value));
  }
  return out;
}

// The expected values with their leading dimension set to `batch`.
std::vector<Value> AtBatch(std::vector<Value> values, int64_t batch) {
  for (Value& v : values) v.shape[0] = batch;
  return values;
}

void ExpectValues(const std::vector<Value>& actual,
                  const std::vector<Value>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_EQ(actual[i].name, expected[i].name);
    EXPECT_EQ(actual[i].dtype, expected[i].dtype) << expected[i].name;
    EXPECT_EQ(actual[i].shape, expected[i].shape) << expected[i].name;
  }
}

class ZooGolden : public ::testing::TestWithParam<ZooModel> {
 protected:
  std::string Path() const {
    return ZooDir() + "/" + GetParam().name + ".onnx";
  }

  void ExpectFigures(int64_t batch) {
    const ZooModel& z = GetParam();
    LoadOptions options;
    if (batch != 1) options.batch = batch;
    auto model = LoadModel(Path(), options);
    ASSERT_TRUE(model) << model.error().message;
    const OpGraph& g = *model->graph;
    EXPECT_EQ(g.num_nodes(), z.nodes);
    EXPECT_EQ(g.num_nodes_with_subgraphs(), z.nodes);
    EXPECT_EQ(model->weights.tensors, z.weight_tensors);
    EXPECT_EQ(model->weights.elements, z.weight_elements);
    EXPECT_EQ(model->weights.bytes, z.weight_bytes);
    ExpectValues(Values(g, g.inputs()), AtBatch(z.inputs, batch));
    ExpectValues(Values(g, g.outputs()), AtBatch(z.outputs, batch));
    EXPECT_EQ(model->unknown_shapes.size(), 0u)
        << model->unknown_shapes.front().tensor;
    EXPECT_TRUE(model->warnings.empty()) << model->warnings.front();
  }
};

TEST_P(ZooGolden, LoadsAtBatch1) { ExpectFigures(1); }

TEST_P(ZooGolden, LoadsAtBatch8) { ExpectFigures(8); }

TEST_P(ZooGolden, MatchesFiguresJson) {
  std::ifstream in(ZooDir() + "/figures.json");
  ASSERT_TRUE(in) << ZooDir() << "/figures.json is missing";
  const auto figures = nlohmann::json::parse(in);
  const ZooModel& z = GetParam();
  ASSERT_TRUE(figures.contains(z.name));
  const auto& f = figures[z.name];
  EXPECT_EQ(f["nodes"], z.nodes);
  EXPECT_EQ(f["weight_tensors"], z.weight_tensors);
  EXPECT_EQ(f["weight_elements"], z.weight_elements);
  std::vector<Value> inputs;
  for (const auto& v : f["inputs"]) {
    inputs.push_back({v["name"], v["dtype"], v["shape"]});
  }
  ExpectValues(inputs, z.inputs);
  std::vector<Value> outputs;
  for (const auto& v : f["outputs"]) {
    outputs.push_back({v["name"], v["dtype"], v["shape"]});
  }
  ExpectValues(outputs, z.outputs);
}

// A real exported model cut at many lengths: every prefix either loads or
// fails with kBadInput naming the file; none may crash.
TEST(ZooTruncation, ResNet50PrefixesLoadOrFailCleanly) {
  std::ifstream in(ZooDir() + "/resnet50.onnx", std::ios::binary);
  ASSERT_TRUE(in);
  const std::string bytes((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
  testlib::TempDir dir;
  constexpr size_t kCuts = 300;
  int failed = 0;
  for (size_t i = 0; i < kCuts; ++i) {
    const size_t length = i < 64 ? i : bytes.size() * i / kCuts;
    const std::string path = dir.Write("cut.onnx", bytes.substr(0, length));
    auto model = LoadModel(path, {});
    if (model) continue;
    ++failed;
    EXPECT_EQ(model.error().code, ErrorCode::kBadInput) << length;
    EXPECT_NE(model.error().message.find(path), std::string::npos) << length;
  }
  EXPECT_GT(failed, 0);
}

// Corruptions the fuzzer found that crash ONNX 1.12's own shape inference
// (Python's onnx crashes on them too): tessera loads with a warning instead.
TEST(ZooCorruption, ShapeInferenceCrashBecomesAWarning) {
  onnx::ModelProto m;
  {
    std::ifstream in(ZooDir() + "/gpt2.onnx", std::ios::binary);
    ASSERT_TRUE(m.ParseFromIstream(&in));
  }
  // A shape constant feeding Concat -> Reshape becomes ~1.6e14.
  bool changed = false;
  for (auto& node : *m.mutable_graph()->mutable_node()) {
    if (node.name() != "/h.2/attn/Constant_12") continue;
    std::string* raw =
        node.mutable_attribute(0)->mutable_t()->mutable_raw_data();
    (*raw)[5] = static_cast<char>(0x93);
    changed = true;
  }
  ASSERT_TRUE(changed);
  testlib::TempDir dir;
  const std::string path = dir.Write("corrupt.onnx", m.SerializeAsString());
  auto model = LoadModel(path, {});
  ASSERT_TRUE(model) << model.error().message;
  bool warned = false;
  for (const std::string& w : model->warnings) {
    warned |= w.find("shape inference crashed") != std::string::npos;
  }
  EXPECT_TRUE(warned);
  EXPECT_FALSE(model->unknown_shapes.empty());
}

TEST(ZooCorruption, UnknownStandardOperatorIsAWarning) {
  onnx::ModelProto m;
  {
    std::ifstream in(ZooDir() + "/gpt2.onnx", std::ios::binary);
    ASSERT_TRUE(m.ParseFromIstream(&in));
  }
  m.mutable_graph()->mutable_node(71)->set_op_type("LayerNormalUzation");
  testlib::TempDir dir;
  const std::string path = dir.Write("typo.onnx", m.SerializeAsString());
  auto model = LoadModel(path, {});
  ASSERT_TRUE(model) << model.error().message;
  ASSERT_FALSE(model->warnings.empty());
  EXPECT_NE(model->warnings.front().find("ai.onnx:LayerNormalUzation"),
            std::string::npos)
      << model->warnings.front();
}

std::string ModelName(const ::testing::TestParamInfo<ZooModel>& param) {
  return param.param.name;
}

INSTANTIATE_TEST_SUITE_P(Zoo, ZooGolden, ::testing::ValuesIn(kZoo), ModelName);

}  // namespace
}  // namespace tessera::graph
