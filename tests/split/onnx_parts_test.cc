// BuildPart / CheckPart and the external-data helpers: each part of a split
// is a valid ONNX model (ONNX's checker) with the original's opsets and IR
// version, the weights it reads and typed inputs and outputs; external
// weights keep pointing at the original file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
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
using testlib::Dim;
using testlib::ExternalData;
using testlib::kFloat;
using testlib::OnnxModelBuilder;
using testlib::TempDir;

using testing::Load;
using testing::LoadFile;

PlanAssignment MakePlan(int num_devices,
                        std::vector<std::pair<std::string, int>> placement) {
  PlanAssignment plan;
  plan.source = "plan.json";
  for (int d = 0; d < num_devices; ++d) {
    plan.devices.push_back("d" + std::to_string(d));
  }
  plan.placement = std::move(placement);
  return plan;
}

Partition Cut(const graph::Model& model, const PlanAssignment& plan) {
  const std::vector<std::string> names = graph::UniqueNodeNames(*model.graph);
  auto p = PartitionGraph(*model.graph, names, plan);
  if (!p) throw std::runtime_error(p.error().message);
  return std::move(p).value();
}

// conv, relu on d0; flatten, fc on d1: relu_out flows from part 0 to part 1.
PlanAssignment CnnPlan() {
  return MakePlan(2, {{"conv", 0}, {"relu", 0}, {"flatten", 1}, {"fc", 1}});
}

PartLocation Where(const std::string& model_dir, const std::string& out_dir) {
  PartLocation where;
  where.model_dir = model_dir;
  where.out_dir = out_dir;
  return where;
}

onnx::ModelProto Build(const graph::Model& model, const Partition& p, int i,
                       const PartLocation& where = Where(".", ".")) {
  auto part = BuildPart(model, p, i, where);
  if (!part) throw std::runtime_error(part.error().message);
  return std::move(part).value();
}

std::vector<std::string> Names(
    const google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>& vis) {
  std::vector<std::string> names;
  for (const auto& vi : vis) names.push_back(vi.name());
  return names;
}

std::vector<std::string> InitializerNames(const onnx::ModelProto& m) {
  std::vector<std::string> names;
  for (const auto& t : m.graph().initializer()) names.push_back(t.name());
  return names;
}

const onnx::ValueInfoProto* FindValue(
    const google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>& vis,
    const std::string& name) {
  for (const auto& vi : vis) {
    if (vi.name() == name) return &vi;
  }
  return nullptr;
}

// "1x4x8x8", symbols by name ("Nx4x8x8"), "?" for a dim with neither.
std::string Shape(const onnx::ValueInfoProto& vi) {
  if (!vi.type().tensor_type().has_shape()) return "<none>";
  std::string text;
  for (const auto& d : vi.type().tensor_type().shape().dim()) {
    if (!text.empty()) text += "x";
    text += d.has_dim_value()   ? std::to_string(d.dim_value())
            : d.has_dim_param() ? d.dim_param()
                                : "?";
  }
  return text;
}

std::string Location(const onnx::TensorProto& t) {
  for (const auto& e : t.external_data()) {
    if (e.key() == "location") return e.value();
  }
  return "";
}

std::map<std::string, std::string> ExternalEntries(const onnx::TensorProto& t) {
  std::map<std::string, std::string> entries;
  for (const auto& e : t.external_data()) entries[e.key()] = e.value();
  return entries;
}

const onnx::TensorProto* FindInitializer(const onnx::ModelProto& m,
                                         const std::string& name) {
  for (const auto& t : m.graph().initializer()) {
    if (t.name() == name) return &t;
  }
  return nullptr;
}

// The parts carry the original's IR version and opset imports (unused
// domains included) and say which part they are.
TEST(BuildPart, PartsPassTheCheckerWithTheOriginalsOpsets) {
  OnnxModelBuilder b = testlib::SmallCnn(1);
  b.SetIrVersion(7);
  b.SetOpset("", 12);
  b.SetOpset("com.example", 3);
  const graph::Model model = Load(b);
  const Partition p = Cut(model, CnnPlan());
  ASSERT_EQ(p.parts.size(), 2u);
  TempDir out;
  for (int i = 0; i < 2; ++i) {
    SCOPED_TRACE("part " + std::to_string(i));
    const onnx::ModelProto part = Build(model, p, i);
    EXPECT_EQ(part.ir_version(), 7);
    ASSERT_EQ(part.opset_import_size(), 2);
    EXPECT_EQ(part.opset_import(0).domain(), "");
    EXPECT_EQ(part.opset_import(0).version(), 12);
    EXPECT_EQ(part.opset_import(1).domain(), "com.example");
    EXPECT_EQ(part.opset_import(1).version(), 3);
    EXPECT_EQ(part.graph().name(), "small_cnn_part_" + std::to_string(i));
    bool has_index = false;
    for (const auto& prop : part.metadata_props()) {
      if (prop.key() == "tessera.part") {
        has_index = true;
        EXPECT_EQ(prop.value(), std::to_string(i));
      }
    }
    EXPECT_TRUE(has_index);
    auto missing = CheckPart(part, i, out.path().string());
    ASSERT_TRUE(missing) << missing.error().message;
    EXPECT_TRUE(missing->empty());
  }
  const onnx::ModelProto first = Build(model, p, 0);
  ASSERT_EQ(first.graph().node_size(), 2);
  EXPECT_EQ(first.graph().node(0).name(), "conv");
  EXPECT_EQ(first.graph().node(1).name(), "relu");
  // Attributes travel with the node.
  EXPECT_EQ(first.graph().node(0).attribute_size(),
            model.proto->graph().node(0).attribute_size());
}

// Each part gets exactly the initializers its nodes read, bytes and all.
TEST(BuildPart, CopiesOnlyTheInitializersAPartReads) {
  OnnxModelBuilder b = testlib::SmallCnn(1);
  std::string pattern(4 * 3 * 3 * 3 * 4, '\0');
  for (size_t i = 0; i < pattern.size(); ++i) {
    pattern[i] = static_cast<char>(i * 7 + 1);
  }
  b.proto().mutable_initializer(0)->set_raw_data(pattern);  // w
  const graph::Model model = Load(b);
  const Partition p = Cut(model, CnnPlan());
  const onnx::ModelProto part0 = Build(model, p, 0);
  const onnx::ModelProto part1 = Build(model, p, 1);
  EXPECT_THAT(InitializerNames(part0), ElementsAre("w", "b"));
  EXPECT_THAT(InitializerNames(part1), ElementsAre("fc_w", "fc_b"));
  const onnx::TensorProto* w = FindInitializer(part0, "w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->raw_data(), pattern);
  EXPECT_THAT(w->dims(), ElementsAre(4, 3, 3, 3));
  EXPECT_EQ(w->data_type(), kFloat);
  const onnx::TensorProto* fc_w = FindInitializer(part1, "fc_w");
  ASSERT_NE(fc_w, nullptr);
  EXPECT_EQ(fc_w->raw_data().size(), 10u * 256 * 4);
}

// Inputs and outputs are declared with their element type and the shape
// inference found, cut tensors included.
TEST(BuildPart, InputsAndOutputsCarryTypesAndShapes) {
  const graph::Model model = Load(testlib::SmallCnn(1));
  const Partition p = Cut(model, CnnPlan());
  const onnx::ModelProto part0 = Build(model, p, 0);
  const onnx::ModelProto part1 = Build(model, p, 1);
  EXPECT_THAT(Names(part0.graph().input()), ElementsAre("x"));
  EXPECT_THAT(Names(part0.graph().output()), ElementsAre("relu_out"));
  EXPECT_THAT(Names(part1.graph().input()), ElementsAre("relu_out"));
  EXPECT_THAT(Names(part1.graph().output()), ElementsAre("logits"));
  for (const onnx::ValueInfoProto* vi :
       {&part0.graph().input(0), &part0.graph().output(0),
        &part1.graph().input(0), &part1.graph().output(0)}) {
    EXPECT_EQ(vi->type().tensor_type().elem_type(), kFloat) << vi->name();
  }
  EXPECT_EQ(Shape(part0.graph().input(0)), "1x3x8x8");
  EXPECT_EQ(Shape(part0.graph().output(0)), "1x4x8x8");
  EXPECT_EQ(Shape(part1.graph().input(0)), "1x4x8x8");
  EXPECT_EQ(Shape(part1.graph().output(0)), "1x10");
  // conv_out stays inside part 0, with its inferred type.
  const onnx::ValueInfoProto* conv_out =
      FindValue(part0.graph().value_info(), "conv_out");
  ASSERT_NE(conv_out, nullptr);
  EXPECT_EQ(Shape(*conv_out), "1x4x8x8");
  EXPECT_EQ(FindValue(part0.graph().value_info(), "relu_out"), nullptr);
}

// A symbolic batch stays a named dim (dim_param) across the cut.
TEST(BuildPart, SymbolicDimsStaySymbolic) {
  const graph::Model model = Load(testlib::SmallCnn(std::string("batch")));
  const Partition p = Cut(model, CnnPlan());
  const onnx::ModelProto part0 = Build(model, p, 0);
  const onnx::ModelProto part1 = Build(model, p, 1);
  EXPECT_EQ(Shape(part0.graph().input(0)), "batchx3x8x8");
  EXPECT_EQ(Shape(part0.graph().output(0)), "batchx4x8x8");
  EXPECT_EQ(Shape(part1.graph().input(0)), "batchx4x8x8");
  EXPECT_EQ(Shape(part1.graph().output(0)), "batchx10");
  TempDir out;
  for (int i = 0; i < 2; ++i) {
    auto checked = CheckPart(Build(model, p, i), i, out.path().string());
    EXPECT_TRUE(checked) << checked.error().message;
  }
}

// A cut tensor with no declared value info gets one made from the graph's
// type (here with its value_info removed), symbolic dims by name.
TEST(BuildPart, DeclaresCutTensorsWithoutValueInfo) {
  OnnxModelBuilder b("no_value_info");
  b.AddInput("x", kFloat, std::vector<Dim>{2, std::string("S")});
  b.AddNode("Relu", {"x"}, {"t"}, "a");
  b.AddNode("Sigmoid", {"t"}, {"y"}, "b");
  b.AddOutput("y");
  graph::Model model = Load(b);
  // Forget the inferred value_info of t: BuildPart must use the OpGraph's.
  auto proto = std::make_shared<onnx::ModelProto>(*model.proto);
  proto->mutable_graph()->clear_value_info();
  model.proto = proto;
  const Partition p = Cut(model, MakePlan(2, {{"a", 0}, {"b", 1}}));
  const onnx::ModelProto part1 = Build(model, p, 1);
  ASSERT_EQ(part1.graph().input_size(), 1);
  EXPECT_EQ(part1.graph().input(0).name(), "t");
  EXPECT_EQ(part1.graph().input(0).type().tensor_type().elem_type(), kFloat);
  EXPECT_EQ(Shape(part1.graph().input(0)), "2xS");
  TempDir out;
  auto checked = CheckPart(part1, 1, out.path().string());
  EXPECT_TRUE(checked) << checked.error().message;
}

// IR 3 requires every initializer to be a graph input too: each part lists
// the ones it reads (after its own inputs), and only those.
TEST(BuildPart, Ir3InitializersStayListedAsInputs) {
  OnnxModelBuilder b("ir3");
  b.SetIrVersion(3);
  b.SetOpset("", 7);
  b.AddInput("x", kFloat, std::vector<Dim>{2, 3});
  b.AddInput("w1", kFloat, std::vector<Dim>{3});
  b.AddInput("w2", kFloat, std::vector<Dim>{3});
  b.AddInitializer("w1", {3});
  b.AddInitializer("w2", {3});
  b.AddNode("Add", {"x", "w1"}, {"t"}, "a");
  b.AddNode("Mul", {"t", "w2"}, {"y"}, "b");
  b.AddOutput("y");
  const graph::Model model = Load(b);
  const Partition p = Cut(model, MakePlan(2, {{"a", 0}, {"b", 1}}));
  ASSERT_EQ(p.parts.size(), 2u);
  const onnx::ModelProto part0 = Build(model, p, 0);
  const onnx::ModelProto part1 = Build(model, p, 1);
  EXPECT_EQ(part0.ir_version(), 3);
  EXPECT_THAT(Names(part0.graph().input()), ElementsAre("x", "w1"));
  EXPECT_THAT(InitializerNames(part0), ElementsAre("w1"));
  EXPECT_THAT(Names(part1.graph().input()), ElementsAre("t", "w2"));
  EXPECT_THAT(InitializerNames(part1), ElementsAre("w2"));
  TempDir out;
  for (int i = 0; i < 2; ++i) {
    auto checked = CheckPart(i == 0 ? part0 : part1, i, out.path().string());
    EXPECT_TRUE(checked) << "part " << i << ": " << checked.error().message;
  }
}

// A Constant read in two parts is in both, with its value.
TEST(BuildPart, CopiedConstantsAreInEveryReadingPart) {
  OnnxModelBuilder b("constants");
  b.AddInput("x", kFloat, std::vector<Dim>{2, 3});
  b.AddConstant("k", {3});
  b.AddNode("Add", {"x", "k"}, {"t"}, "a");
  b.AddNode("Mul", {"t", "k"}, {"y"}, "b");
  b.AddOutput("y");
  const graph::Model model = Load(b);
  const Partition p =
      Cut(model, MakePlan(2, {{"k_node", 0}, {"a", 0}, {"b", 1}}));
  TempDir out;
  for (int i = 0; i < 2; ++i) {
    const onnx::ModelProto part = Build(model, p, i);
    ASSERT_EQ(part.graph().node_size(), 2) << i;
    EXPECT_EQ(part.graph().node(0).op_type(), "Constant");
    EXPECT_EQ(part.graph().node(0).attribute(0).t().raw_data().size(), 12u);
    auto checked = CheckPart(part, i, out.path().string());
    EXPECT_TRUE(checked) << checked.error().message;
  }
}

TEST(BuildPart, RejectsAModelWithoutProtoAndABadIndex) {
  graph::Model model = Load(testlib::SmallCnn(1));
  const Partition p = Cut(model, CnnPlan());
  auto bad_index = BuildPart(model, p, 2, Where(".", "."));
  ASSERT_FALSE(bad_index);
  EXPECT_EQ(bad_index.error().code, ErrorCode::kInternal);
  EXPECT_FALSE(BuildPart(model, p, -1, Where(".", ".")));
  model.proto.reset();
  auto no_proto = BuildPart(model, p, 0, Where(".", "."));
  ASSERT_FALSE(no_proto);
  EXPECT_THAT(no_proto.error().message, HasSubstr("keep_proto"));
}

// The checker's complaint comes back with the part's index.
TEST(CheckPart, ReportsTheCheckersError) {
  const graph::Model model = Load(testlib::SmallCnn(1));
  const Partition p = Cut(model, CnnPlan());
  onnx::ModelProto part = Build(model, p, 1);
  auto* bogus = part.mutable_graph()->add_node();
  bogus->set_op_type("NoSuchOperator");
  bogus->add_input("logits");
  bogus->add_output("nothing");
  TempDir out;
  auto checked = CheckPart(part, 1, out.path().string());
  ASSERT_FALSE(checked);
  EXPECT_THAT(checked.error().message,
              HasSubstr("part 1 fails ONNX's checker"));
  EXPECT_THAT(checked.error().message, HasSubstr("NoSuchOperator"));
}

// ---------------------------------------------------------------------------
// External weights.

constexpr int64_t kWBytes = 4 * 3 * 3 * 3 * 4;  // w[4,3,3,3] float
constexpr int64_t kFcBytes = 10 * 256 * 4;      // fc_w[10,256] float

// SmallCnn(1) with w and fc_w in `location` (relative to the model): w at
// offset 0, fc_w after it.
OnnxModelBuilder ExternalCnn(const std::string& location) {
  OnnxModelBuilder b = testlib::SmallCnn(1);
  onnx::GraphProto& g = b.proto();
  g.clear_initializer();
  b.AddInitializer("w", {4, 3, 3, 3}, kFloat,
                   ExternalData{location, 0, kWBytes});
  b.AddInitializer("b", {4});
  b.AddInitializer("fc_w", {10, 256}, kFloat,
                   ExternalData{location, kWBytes, kFcBytes});
  b.AddInitializer("fc_b", {10});
  return b;
}

// root/model/m.onnx with its weights in root/model/weights.bin, parts to be
// written to root/parts.
struct ExternalLayout {
  TempDir root;
  fs::path model_dir = root.path() / "model";
  fs::path out_dir = root.path() / "parts";
  fs::path data = model_dir / "weights.bin";
  ExternalLayout() {
    fs::create_directories(model_dir);
    fs::create_directories(out_dir);
    std::ofstream(data, std::ios::binary)
        << std::string(static_cast<size_t>(kWBytes + kFcBytes), '\x01');
  }
};

// Without links, the location is rewritten relative to the parts'
// directory, so that out_dir/location is the original file; the other
// external_data entries are kept.
TEST(BuildPart, ExternalLocationsPointFromTheOutputDirectory) {
  ExternalLayout layout;
  const graph::Model model =
      LoadFile(ExternalCnn("weights.bin").WriteTo(layout.model_dir / "m.onnx"));
  const Partition p = Cut(model, CnnPlan());
  const PartLocation where =
      Where(layout.model_dir.string(), layout.out_dir.string());
  for (int i = 0; i < 2; ++i) {
    SCOPED_TRACE("part " + std::to_string(i));
    const onnx::ModelProto part = Build(model, p, i, where);
    const onnx::TensorProto* t = FindInitializer(part, i == 0 ? "w" : "fc_w");
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->data_location(), onnx::TensorProto::EXTERNAL);
    const std::string location = Location(*t);
    EXPECT_FALSE(fs::path(location).is_absolute()) << location;
    EXPECT_TRUE(fs::equivalent(layout.out_dir / location, layout.data))
        << location;
    const auto entries = ExternalEntries(*t);
    EXPECT_EQ(entries.at("offset"), i == 0 ? "0" : std::to_string(kWBytes));
    EXPECT_EQ(entries.at("length"),
              std::to_string(i == 0 ? kWBytes : kFcBytes));
    // The inline weight stays inline.
    const onnx::TensorProto* bias =
        FindInitializer(part, i == 0 ? "b" : "fc_b");
    ASSERT_NE(bias, nullptr);
    EXPECT_NE(bias->data_location(), onnx::TensorProto::EXTERNAL);
    auto missing = CheckPart(part, i, layout.out_dir.string());
    ASSERT_TRUE(missing) << missing.error().message;
    EXPECT_TRUE(missing->empty());
  }
}

// A location in a subdirectory of the model's resolves too.
TEST(BuildPart, ExternalLocationInASubdirectory) {
  ExternalLayout layout;
  fs::create_directories(layout.model_dir / "data");
  fs::rename(layout.data, layout.model_dir / "data" / "weights.bin");
  const graph::Model model = LoadFile(
      ExternalCnn("data/weights.bin").WriteTo(layout.model_dir / "m.onnx"));
  const Partition p = Cut(model, CnnPlan());
  const onnx::ModelProto part = Build(
      model, p, 1, Where(layout.model_dir.string(), layout.out_dir.string()));
  const std::string location = Location(*FindInitializer(part, "fc_w"));
  EXPECT_TRUE(fs::equivalent(layout.out_dir / location,
                             layout.model_dir / "data" / "weights.bin"))
      << location;
  auto missing = CheckPart(part, 1, layout.out_dir.string());
  ASSERT_TRUE(missing) << missing.error().message;
  EXPECT_TRUE(missing->empty());
}

// With the data file gone, the part still passes (its tensors checked as
// placeholders) and CheckPart names the file, once.
TEST(CheckPart, ReturnsMissingExternalDataFiles) {
  ExternalLayout layout;
  const graph::Model model =
      LoadFile(ExternalCnn("weights.bin").WriteTo(layout.model_dir / "m.onnx"));
  fs::remove(layout.data);
  // Both external tensors in one part: the file is reported once.
  const Partition p =
      Cut(model,
          MakePlan(1, {{"conv", 0}, {"relu", 0}, {"flatten", 0}, {"fc", 0}}));
  const onnx::ModelProto part = Build(
      model, p, 0, Where(layout.model_dir.string(), layout.out_dir.string()));
  auto missing = CheckPart(part, 0, layout.out_dir.string());
  ASSERT_TRUE(missing) << missing.error().message;
  ASSERT_EQ(missing->size(), 1u);
  EXPECT_EQ(fs::weakly_canonical((*missing)[0]),
            fs::weakly_canonical(layout.data));
  // The part itself is unchanged: still external.
  EXPECT_EQ(FindInitializer(part, "w")->data_location(),
            onnx::TensorProto::EXTERNAL);
}

// With links (LinkExternalData), the location is the link's name.
TEST(BuildPart, LinkedLocationsUseTheLinkName) {
  ExternalLayout layout;
  const graph::Model model =
      LoadFile(ExternalCnn("weights.bin").WriteTo(layout.model_dir / "m.onnx"));
  const Partition p = Cut(model, CnnPlan());
  PartLocation where =
      Where(layout.model_dir.string(), layout.out_dir.string());
  where.links = {{"weights.bin", "weights_1.bin"}};
  const onnx::ModelProto part = Build(model, p, 0, where);
  EXPECT_EQ(Location(*FindInitializer(part, "w")), "weights_1.bin");
}

// A Constant node "k_node" making `name` ([3] float) whose value is stored
// in `location`.
void AddExternalConstant(OnnxModelBuilder& b, const std::string& name,
                         const std::string& location) {
  onnx::NodeProto& k = b.AddConstant(name, {3});
  onnx::TensorProto* value = k.mutable_attribute(0)->mutable_t();
  value->clear_raw_data();
  value->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* entry = value->add_external_data();
  entry->set_key("location");
  entry->set_value(location);
}

// External data in a Constant's value: the Constant is copied into the part
// and its location rewritten like an initializer's.
TEST(BuildPart, ExternalConstantValuesAreRelocated) {
  ExternalLayout layout;
  OnnxModelBuilder b("external_constant");
  b.AddInput("x", kFloat, std::vector<Dim>{2, 3});
  AddExternalConstant(b, "k", "weights.bin");
  b.AddNode("Add", {"x", "k"}, {"t"}, "a");
  b.AddNode("Mul", {"t", "k"}, {"y"}, "b");
  b.AddOutput("y");
  const graph::Model model = LoadFile(b.WriteTo(layout.model_dir / "m.onnx"));
  const Partition p =
      Cut(model, MakePlan(2, {{"k_node", 0}, {"a", 0}, {"b", 1}}));
  const onnx::ModelProto part = Build(
      model, p, 1, Where(layout.model_dir.string(), layout.out_dir.string()));
  ASSERT_EQ(part.graph().node(0).op_type(), "Constant");
  const std::string location = Location(part.graph().node(0).attribute(0).t());
  EXPECT_TRUE(fs::equivalent(layout.out_dir / location, layout.data))
      << location;
  auto missing = CheckPart(part, 1, layout.out_dir.string());
  ASSERT_TRUE(missing) << missing.error().message;
  EXPECT_TRUE(missing->empty());
}

// A structure-only model whose Constant values are external (as
// onnx.save_model(..., save_as_external_data=True) writes large ones) splits
// like one with external initializers: the missing file is reported and the
// Constant is checked as a placeholder.
TEST(CheckPart, ReturnsMissingFilesOfExternalConstants) {
  ExternalLayout layout;
  OnnxModelBuilder b("external_constant");
  b.AddInput("x", kFloat, std::vector<Dim>{2, 3});
  AddExternalConstant(b, "k", "weights.bin");
  b.AddNode("Add", {"x", "k"}, {"y"}, "a");
  b.AddOutput("y");
  const graph::Model model = LoadFile(b.WriteTo(layout.model_dir / "m.onnx"));
  fs::remove(layout.data);
  const Partition p = Cut(model, MakePlan(1, {{"k_node", 0}, {"a", 0}}));
  const onnx::ModelProto part = Build(
      model, p, 0, Where(layout.model_dir.string(), layout.out_dir.string()));
  auto missing = CheckPart(part, 0, layout.out_dir.string());
  ASSERT_TRUE(missing) << missing.error().message;
  ASSERT_EQ(missing->size(), 1u);
  EXPECT_EQ(fs::weakly_canonical((*missing)[0]),
            fs::weakly_canonical(layout.data));
}

TEST(ExternalDataFiles, ListsEachLocationOnce) {
  OnnxModelBuilder b = ExternalCnn("weights.bin");
  b.AddInitializer("extra", {2}, kFloat, ExternalData{"more/extra.bin", 0, 8});
  onnx::NodeProto& k = b.AddConstant("k", {3});
  onnx::TensorProto* value = k.mutable_attribute(0)->mutable_t();
  value->clear_raw_data();
  value->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* entry = value->add_external_data();
  entry->set_key("location");
  entry->set_value("consts.bin");
  EXPECT_THAT(ExternalDataFiles(b.Build()),
              ElementsAre("consts.bin", "more/extra.bin", "weights.bin"));
  EXPECT_TRUE(ExternalDataFiles(testlib::SmallCnn(1).Build()).empty());
}

// Links are hard links to the same file, named after it, made unique; a
// location whose file is missing gets none; linking again reuses the link.
TEST(LinkExternalData, LinksExistingFilesUnderUniqueNames) {
  TempDir root;
  const fs::path model_dir = root.path() / "model";
  const fs::path out_dir = root.path() / "out";
  fs::create_directories(model_dir / "a");
  fs::create_directories(model_dir / "b");
  fs::create_directories(out_dir);
  std::ofstream(model_dir / "a" / "w.bin") << "aaaa";
  std::ofstream(model_dir / "b" / "w.bin") << "bbbb";
  std::vector<std::string> warnings;
  auto links =
      LinkExternalData({"a/w.bin", "b/w.bin", "absent.bin"}, model_dir.string(),
                       out_dir.string(), &warnings);
  ASSERT_TRUE(links) << links.error().message;
  EXPECT_TRUE(warnings.empty());
  ASSERT_EQ(links->size(), 2u);
  EXPECT_EQ(links->at("a/w.bin"), "w.bin");
  EXPECT_EQ(links->at("b/w.bin"), "w_1.bin");
  EXPECT_EQ(links->count("absent.bin"), 0u);
  EXPECT_TRUE(fs::equivalent(out_dir / "w.bin", model_dir / "a" / "w.bin"));
  EXPECT_TRUE(fs::equivalent(out_dir / "w_1.bin", model_dir / "b" / "w.bin"));
  EXPECT_FALSE(fs::is_symlink(out_dir / "w.bin"));

  auto again = LinkExternalData({"a/w.bin", "b/w.bin"}, model_dir.string(),
                                out_dir.string(), &warnings);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(*again, *links);
  EXPECT_TRUE(fs::equivalent(out_dir / "w_1.bin", model_dir / "b" / "w.bin"));
}

}  // namespace
}  // namespace tessera::split
