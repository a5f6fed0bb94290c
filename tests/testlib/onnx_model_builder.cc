#include "tests/testlib/onnx_model_builder.h"

#include <stdlib.h>

#include <cerrno>
#include <fstream>
#include <stdexcept>
#include <system_error>

namespace tessera::testlib {
namespace {

int64_t BytesPerElement(int32_t elem_type) {
  switch (elem_type) {
    case onnx::TensorProto::BOOL:
    case onnx::TensorProto::INT8:
    case onnx::TensorProto::UINT8:
      return 1;
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16:
    case onnx::TensorProto::INT16:
    case onnx::TensorProto::UINT16:
      return 2;
    case onnx::TensorProto::FLOAT:
    case onnx::TensorProto::INT32:
    case onnx::TensorProto::UINT32:
      return 4;
    case onnx::TensorProto::DOUBLE:
    case onnx::TensorProto::INT64:
    case onnx::TensorProto::UINT64:
      return 8;
    default:
      return 0;
  }
}

void SetType(onnx::ValueInfoProto* v, int32_t elem_type,
             const std::optional<std::vector<Dim>>& dims) {
  auto* tensor = v->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(elem_type);
  if (!dims) return;
  auto* shape = tensor->mutable_shape();
  for (const Dim& d : *dims) {
    auto* dim = shape->add_dim();
    if (const auto* value = std::get_if<int64_t>(&d)) {
      dim->set_dim_value(*value);
    } else {
      dim->set_dim_param(std::get<std::string>(d));
    }
  }
}

}  // namespace

onnx::AttributeProto IntAttr(const std::string& name, int64_t v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INT);
  a.set_i(v);
  return a;
}

onnx::AttributeProto FloatAttr(const std::string& name, float v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::FLOAT);
  a.set_f(v);
  return a;
}

onnx::AttributeProto StringAttr(const std::string& name, const std::string& v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::STRING);
  a.set_s(v);
  return a;
}

onnx::AttributeProto IntsAttr(const std::string& name,
                              const std::vector<int64_t>& v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INTS);
  for (const int64_t i : v) a.add_ints(i);
  return a;
}

onnx::AttributeProto GraphAttr(const std::string& name,
                               const onnx::GraphProto& g) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::GRAPH);
  *a.mutable_g() = g;
  return a;
}

onnx::TensorProto ZeroTensor(const std::string& name, int32_t elem_type,
                             const std::vector<int64_t>& dims) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(elem_type);
  int64_t elements = 1;
  for (const int64_t d : dims) {
    t.add_dims(d);
    elements *= d;
  }
  t.set_raw_data(std::string(
      static_cast<size_t>(elements * BytesPerElement(elem_type)), '\0'));
  return t;
}

OnnxGraphBuilder::OnnxGraphBuilder(const std::string& name) {
  graph_.set_name(name);
}

onnx::ValueInfoProto& OnnxGraphBuilder::AddInput(
    const std::string& name, int32_t elem_type,
    std::optional<std::vector<Dim>> dims) {
  onnx::ValueInfoProto* v = graph_.add_input();
  v->set_name(name);
  SetType(v, elem_type, dims);
  return *v;
}

onnx::ValueInfoProto& OnnxGraphBuilder::AddOutput(
    const std::string& name, int32_t elem_type,
    std::optional<std::vector<Dim>> dims) {
  onnx::ValueInfoProto* v = graph_.add_output();
  v->set_name(name);
  SetType(v, elem_type, dims);
  return *v;
}

onnx::TensorProto& OnnxGraphBuilder::AddInitializer(
    const std::string& name, const std::vector<int64_t>& dims,
    int32_t elem_type, const std::optional<ExternalData>& external) {
  onnx::TensorProto* t = graph_.add_initializer();
  if (!external) {
    *t = ZeroTensor(name, elem_type, dims);
    return *t;
  }
  t->set_name(name);
  t->set_data_type(elem_type);
  for (const int64_t d : dims) t->add_dims(d);
  t->set_data_location(onnx::TensorProto::EXTERNAL);
  auto add_entry = [t](const std::string& key, const std::string& value) {
    auto* entry = t->add_external_data();
    entry->set_key(key);
    entry->set_value(value);
  };
  add_entry("location", external->location);
  add_entry("offset", std::to_string(external->offset));
  if (external->length >= 0) {
    add_entry("length", std::to_string(external->length));
  }
  return *t;
}

onnx::NodeProto& OnnxGraphBuilder::AddNode(
    const std::string& op_type, const std::vector<std::string>& inputs,
    const std::vector<std::string>& outputs, const std::string& name,
    const std::vector<onnx::AttributeProto>& attrs, const std::string& domain) {
  onnx::NodeProto* n = graph_.add_node();
  n->set_op_type(op_type);
  n->set_name(name);
  n->set_domain(domain);
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outputs) n->add_output(o);
  for (const auto& a : attrs) *n->add_attribute() = a;
  return *n;
}

onnx::NodeProto& OnnxGraphBuilder::AddConstant(const std::string& output,
                                               const std::vector<int64_t>& dims,
                                               int32_t elem_type) {
  onnx::AttributeProto value;
  value.set_name("value");
  value.set_type(onnx::AttributeProto::TENSOR);
  *value.mutable_t() = ZeroTensor("", elem_type, dims);
  return AddNode("Constant", {}, {output}, output + "_node", {value});
}

onnx::NodeProto& OnnxGraphBuilder::AddIf(
    const std::string& cond, const std::vector<std::string>& outputs,
    const std::string& name, const onnx::GraphProto& then_branch,
    const onnx::GraphProto& else_branch) {
  return AddNode("If", {cond}, outputs, name,
                 {GraphAttr("then_branch", then_branch),
                  GraphAttr("else_branch", else_branch)});
}

OnnxModelBuilder::OnnxModelBuilder(const std::string& graph_name)
    : OnnxGraphBuilder(graph_name), opsets_{{"", 13}} {}

void OnnxModelBuilder::SetOpset(const std::string& domain, int64_t version) {
  for (auto& [d, v] : opsets_) {
    if (d == domain) {
      v = version;
      return;
    }
  }
  opsets_.emplace_back(domain, version);
}

onnx::ModelProto OnnxModelBuilder::Build() const {
  onnx::ModelProto m;
  m.set_ir_version(ir_version_);
  m.set_producer_name("tessera_testlib");
  for (const auto& [domain, version] : opsets_) {
    auto* op = m.add_opset_import();
    op->set_domain(domain);
    op->set_version(version);
  }
  *m.mutable_graph() = proto();
  return m;
}

std::string OnnxModelBuilder::Serialize() const {
  return Build().SerializeAsString();
}

std::string OnnxModelBuilder::WriteTo(const std::filesystem::path& path) const {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << Serialize();
  if (!out) throw std::runtime_error("cannot write " + path.string());
  return path.string();
}

TempDir::TempDir() {
  std::string pattern =
      (std::filesystem::temp_directory_path() / "tessera_test_XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) {
    throw std::system_error(errno, std::generic_category(), "mkdtemp");
  }
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string TempDir::File(const std::string& name) const {
  return (path_ / name).string();
}

std::string TempDir::Write(const std::string& name,
                           const std::string& bytes) const {
  const std::string file = File(name);
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out << bytes;
  if (!out) throw std::runtime_error("cannot write " + file);
  return file;
}

std::string TempDir::Write(const std::string& name,
                           const OnnxModelBuilder& model) const {
  return model.WriteTo(path_ / name);
}

OnnxModelBuilder SmallCnn(const Dim& batch) {
  OnnxModelBuilder m("small_cnn");
  m.AddInput("x", kFloat, std::vector<Dim>{batch, 3, 8, 8});
  m.AddInitializer("w", {4, 3, 3, 3});
  m.AddInitializer("b", {4});
  m.AddInitializer("fc_w", {10, 256});
  m.AddInitializer("fc_b", {10});
  m.AddNode("Conv", {"x", "w", "b"}, {"conv_out"}, "conv",
            {IntsAttr("pads", {1, 1, 1, 1}), IntsAttr("kernel_shape", {3, 3}),
             IntAttr("group", 1), StringAttr("auto_pad", "NOTSET")});
  m.AddNode("Relu", {"conv_out"}, {"relu_out"}, "relu");
  m.AddNode("Flatten", {"relu_out"}, {"flat"}, "flatten", {IntAttr("axis", 1)});
  m.AddNode("Gemm", {"flat", "fc_w", "fc_b"}, {"logits"}, "fc",
            {IntAttr("transB", 1), FloatAttr("alpha", 1.0f)});
  m.AddOutput("logits");
  return m;
}

}  // namespace tessera::testlib
