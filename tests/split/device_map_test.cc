// ModulePath / DeviceMapJson: PyTorch module paths recovered from exported
// node names, and the split expressed as a device map over them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "graph/graph.h"
#include "split/split.h"
#include "tests/testlib/onnx_model_builder.h"

namespace tessera::split {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;
using testlib::Dim;
using testlib::kFloat;
using testlib::OnnxModelBuilder;
using testlib::TempDir;

std::string Path(std::string_view name, bool expect_pytorch = true) {
  bool pytorch = !expect_pytorch;
  std::string path = ModulePath(name, &pytorch);
  EXPECT_EQ(pytorch, expect_pytorch) << name;
  return path;
}

TEST(ModulePath, JoinsAttributeNamesAndFullPaths) {
  // torchvision ResNet: a child written by its full path from its parent.
  EXPECT_EQ(Path("/layer1/layer1.0/conv1/Conv"), "layer1.0.conv1");
  // Hugging Face BERT: children written by attribute name.
  EXPECT_EQ(Path("/encoder/layer.0/attention/self/MatMul"),
            "encoder.layer.0.attention.self");
  // Nested Sequentials: full paths twice.
  EXPECT_EQ(Path("/features/features.0/features.0.0/Conv"), "features.0.0");
  EXPECT_EQ(Path("/fc/Gemm"), "fc");
  // A prefix that is not at a dot boundary is an attribute name.
  EXPECT_EQ(Path("/layer1/layer10/Relu"), "layer1.layer10");
}

TEST(ModulePath, RootOpsHaveTheEmptyPath) {
  EXPECT_EQ(Path("/Add"), "");
  EXPECT_EQ(Path("/Constant_3"), "");
}

TEST(ModulePath, OtherNamesAreNotPyTorchPaths) {
  EXPECT_EQ(Path("conv1_weight", false), "");
  EXPECT_EQ(Path("Conv_12", false), "");
  EXPECT_EQ(Path("", false), "");
  EXPECT_EQ(Path("/", false), "");
  EXPECT_EQ(Path("/encoder/", false), "");  // no op name
}

// A chain of Relus, one per name, in order; returns the loaded graph.
graph::Model ReluChain(const std::vector<std::string>& names,
                       const std::vector<std::string>& constants = {}) {
  OnnxModelBuilder m("named");
  m.AddInput("x", kFloat, std::vector<Dim>{2, 3});
  std::string last = "x";
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string out = "t" + std::to_string(i);
    m.AddNode("Relu", {last}, {out}, names[i]);
    last = out;
  }
  for (size_t i = 0; i < constants.size(); ++i) {
    const std::string k = "k" + std::to_string(i);
    m.AddConstant(k, {3}).set_name(constants[i]);
    const std::string out = "s" + std::to_string(i);
    m.AddNode("Add", {last, k}, {out}, "");
    last = out;
  }
  m.AddOutput(last);
  TempDir dir;
  auto model = graph::LoadModel(dir.Write("m.onnx", m), {});
  if (!model) throw std::runtime_error(model.error().message);
  return std::move(model).value();
}

const std::vector<std::string> kDevices = {"gpu0", "gpu1", "gpu2"};

TEST(DeviceMapJson, OneDeviceMapsTheRoot) {
  const graph::Model model =
      ReluChain({"/layer1/layer1.0/conv1/Conv", "/layer1/layer1.0/relu/Relu",
                 "/fc/Gemm", "/Add"});
  const std::vector<int> device(4, 1);
  const Json j = DeviceMapJson(*model.graph, device, kDevices);
  EXPECT_EQ(j["format"], "tessera-device-map/1");
  EXPECT_EQ(j["devices"], Json(kDevices));
  EXPECT_EQ(j["device_map"], Json::parse(R"({"": 1})"));
  EXPECT_EQ(j["split_below_module"], Json::array());
  EXPECT_EQ(j["mapped_nodes"], 4);
  EXPECT_EQ(j["unmapped_nodes"], 0);
  EXPECT_THAT(j["note"].get<std::string>(), HasSubstr("values index"));
}

// Each top-level module on its own device: both listed, nothing finer.
TEST(DeviceMapJson, TopLevelModulesOnTwoDevices) {
  const graph::Model model = ReluChain(
      {"/encoder/layer.0/attention/MatMul", "/encoder/layer.1/output/Add",
       "/decoder/layer.0/MatMul", "/decoder/Relu"});
  const Json j =
      DeviceMapJson(*model.graph, std::vector<int>{0, 0, 2, 2}, kDevices);
  EXPECT_EQ(j["device_map"], Json::parse(R"({"encoder": 0, "decoder": 2})"));
  EXPECT_EQ(j["split_below_module"], Json::array());
  EXPECT_EQ(j["mapped_nodes"], 4);
}

// The coarsest consistent level: encoder is split, so its layers are
// listed; decoder is whole.
TEST(DeviceMapJson, SplitModulesAreMappedByTheirChildren) {
  const graph::Model model = ReluChain(
      {"/encoder/layer.0/attention/MatMul", "/encoder/layer.0/output/Add",
       "/encoder/layer.1/attention/MatMul", "/decoder/Relu"});
  const Json j =
      DeviceMapJson(*model.graph, std::vector<int>{0, 0, 1, 1}, kDevices);
  EXPECT_EQ(j["device_map"], Json::parse(R"({"encoder.layer.0": 0,
                                             "encoder.layer.1": 1,
                                             "decoder": 1})"));
  // encoder has no ops of its own: not a split below a module.
  EXPECT_EQ(j["split_below_module"], Json::array());
}

// encoder's own ops (outside its layers) are on two devices: it is listed
// in split_below_module with its own op counts, and its children are still
// mapped.
TEST(DeviceMapJson, OwnOpsOnTwoDevicesAreSplitBelowTheModule) {
  const graph::Model model = ReluChain(
      {"/encoder/layer.0/attention/MatMul", "/encoder/Add", "/encoder/Mul",
       "/encoder/Mul_1", "/encoder/layer.1/attention/MatMul"});
  const Json j =
      DeviceMapJson(*model.graph, std::vector<int>{0, 0, 1, 1, 1}, kDevices);
  EXPECT_EQ(j["device_map"], Json::parse(R"({"encoder.layer.0": 0,
                                             "encoder.layer.1": 1})"));
  ASSERT_EQ(j["split_below_module"].size(), 1u);
  const Json& split = j["split_below_module"][0];
  EXPECT_EQ(split["module"], "encoder");
  EXPECT_EQ(split["devices"], Json::parse("[0, 1]"));
  EXPECT_EQ(split["own_ops_per_device"], Json::parse(R"({"0": 1, "1": 2})"));
}

// Constant nodes are copied to every reader, so their placement says
// nothing about modules: they are not counted.
TEST(DeviceMapJson, IgnoresConstantNodes) {
  const graph::Model model =
      ReluChain({"/encoder/layer.0/MatMul", "/encoder/layer.1/MatMul"},
                {"/encoder/layer.1/Constant"});
  // The Constant is node 2, the unnamed Add node 3.
  const Json j =
      DeviceMapJson(*model.graph, std::vector<int>{0, 0, 1, 0}, kDevices);
  EXPECT_EQ(j["device_map"], Json::parse(R"({"": 0})"));
  EXPECT_EQ(j["mapped_nodes"], 2);
  EXPECT_EQ(j["unmapped_nodes"], 1);  // the unnamed Add
  EXPECT_THAT(j["note"].get<std::string>(),
              HasSubstr("1 operator(s) have names without a module path"));
}

TEST(DeviceMapJson, NamesWithoutModulePathsMapNothing) {
  const graph::Model model = ReluChain({"conv1", "relu1", "fc"});
  const Json j =
      DeviceMapJson(*model.graph, std::vector<int>{0, 1, 1}, kDevices);
  EXPECT_EQ(j["device_map"], Json::object());
  EXPECT_EQ(j["split_below_module"], Json::array());
  EXPECT_EQ(j["mapped_nodes"], 0);
  EXPECT_EQ(j["unmapped_nodes"], 3);
  EXPECT_THAT(j["note"].get<std::string>(),
              HasSubstr("carry no PyTorch module paths"));
}

}  // namespace
}  // namespace tessera::split
