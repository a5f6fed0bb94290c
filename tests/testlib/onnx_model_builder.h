#ifndef TESSERA_TESTS_TESTLIB_ONNX_MODEL_BUILDER_H_
#define TESSERA_TESTS_TESTLIB_ONNX_MODEL_BUILDER_H_

// Test helpers that write ONNX models in code: OnnxGraphBuilder assembles a
// GraphProto (the main graph or an If branch), OnnxModelBuilder wraps it in a
// ModelProto with opset imports, and TempDir gives each test a private
// directory that is removed when it goes out of scope. Not thread-safe.

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace tessera::testlib {

// A dimension: a fixed extent or a symbol such as "batch".
using Dim = std::variant<int64_t, std::string>;

// Element type codes (onnx::TensorProto::DataType), shortened for tests.
inline constexpr int32_t kFloat = onnx::TensorProto::FLOAT;
inline constexpr int32_t kFloat16 = onnx::TensorProto::FLOAT16;
inline constexpr int32_t kInt64 = onnx::TensorProto::INT64;
inline constexpr int32_t kBool = onnx::TensorProto::BOOL;

// Where an initializer's bytes live when they are outside the model file.
struct ExternalData {
  std::string location;  // relative to the model file
  int64_t offset = 0;
  int64_t length = -1;  // -1: omit the length entry
};

// Attribute makers for AddNode.
onnx::AttributeProto IntAttr(const std::string& name, int64_t v);
onnx::AttributeProto FloatAttr(const std::string& name, float v);
onnx::AttributeProto StringAttr(const std::string& name, const std::string& v);
onnx::AttributeProto IntsAttr(const std::string& name,
                              const std::vector<int64_t>& v);
onnx::AttributeProto GraphAttr(const std::string& name,
                               const onnx::GraphProto& g);

// A zero-filled tensor (raw_data) of `dims` and `elem_type`.
onnx::TensorProto ZeroTensor(const std::string& name, int32_t elem_type,
                             const std::vector<int64_t>& dims);

// Builds one GraphProto. Methods return the added proto so that a test can
// adjust what the builder does not cover.
class OnnxGraphBuilder {
 public:
  explicit OnnxGraphBuilder(const std::string& name);

  // A graph input; `dims` nullopt leaves the shape out (rank unknown).
  onnx::ValueInfoProto& AddInput(const std::string& name, int32_t elem_type,
                                 std::optional<std::vector<Dim>> dims);
  // A graph output; `dims` nullopt leaves the shape to inference.
  onnx::ValueInfoProto& AddOutput(
      const std::string& name, int32_t elem_type = kFloat,
      std::optional<std::vector<Dim>> dims = std::nullopt);
  // A zero-filled initializer, or one whose data is in `external` (no bytes
  // are written anywhere for it).
  onnx::TensorProto& AddInitializer(
      const std::string& name, const std::vector<int64_t>& dims,
      int32_t elem_type = kFloat,
      const std::optional<ExternalData>& external = std::nullopt);
  onnx::NodeProto& AddNode(const std::string& op_type,
                           const std::vector<std::string>& inputs,
                           const std::vector<std::string>& outputs,
                           const std::string& name = "",
                           const std::vector<onnx::AttributeProto>& attrs = {},
                           const std::string& domain = "");
  // A Constant node with a zero-filled `value` tensor; named "<output>_node".
  onnx::NodeProto& AddConstant(const std::string& output,
                               const std::vector<int64_t>& dims,
                               int32_t elem_type = kFloat);
  // An If node reading `cond`, with the given branches.
  onnx::NodeProto& AddIf(const std::string& cond,
                         const std::vector<std::string>& outputs,
                         const std::string& name,
                         const onnx::GraphProto& then_branch,
                         const onnx::GraphProto& else_branch);

  onnx::GraphProto& proto() { return graph_; }
  const onnx::GraphProto& proto() const { return graph_; }

 private:
  onnx::GraphProto graph_;
};

// Builds a ModelProto: IR version 8, ai.onnx opset 13 unless changed.
class OnnxModelBuilder : public OnnxGraphBuilder {
 public:
  explicit OnnxModelBuilder(const std::string& graph_name = "test");

  // Sets (or adds) the imported version of `domain` ("" is ai.onnx).
  void SetOpset(const std::string& domain, int64_t version);
  void SetIrVersion(int64_t version) { ir_version_ = version; }

  onnx::ModelProto Build() const;
  std::string Serialize() const;
  // Writes the serialized model to `path`; returns `path`.
  std::string WriteTo(const std::filesystem::path& path) const;

 private:
  int64_t ir_version_ = 8;
  std::vector<std::pair<std::string, int64_t>> opsets_;
};

// A fresh directory under the system temp dir, removed with its contents on
// destruction. Each test makes its own, so tests may run in parallel.
class TempDir {
 public:
  TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir();

  const std::filesystem::path& path() const { return path_; }
  // path() / name, as a string.
  std::string File(const std::string& name) const;
  // Writes `bytes` to path() / name; returns the file's path.
  std::string Write(const std::string& name, const std::string& bytes) const;
  // Writes `model` to path() / name; returns the file's path.
  std::string Write(const std::string& name,
                    const OnnxModelBuilder& model) const;

 private:
  std::filesystem::path path_;
};

// A small CNN used by many tests:
//   x[batch,3,8,8] -Conv(w[4,3,3,3], b[4], pads 1)-> conv_out[batch,4,8,8]
//   -Relu-> relu_out -Flatten-> flat[batch,256] -Gemm(fc_w[10,256], fc_b[10],
//   transB 1)-> logits[batch,10]
// `batch` is the leading dim of x ("N" by default). Weights: 4 tensors, 2,682
// float32 elements. Nodes are named conv, relu, flatten, fc.
OnnxModelBuilder SmallCnn(const Dim& batch = std::string("N"));

}  // namespace tessera::testlib

#endif  // TESSERA_TESTS_TESTLIB_ONNX_MODEL_BUILDER_H_
