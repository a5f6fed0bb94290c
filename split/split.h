#ifndef TESSERA_SPLIT_SPLIT_H_
#define TESSERA_SPLIT_SPLIT_H_

// split/: turns a placement plan into runnable per-device sub-models. The
// public header of the component.
//
// A plan (plan.json) puts every node of a model on a device. Splitting cuts
// the model's graph into parts, one per (device, level): a node's level is
// the number of device changes on its longest path from the inputs, so the
// parts form a DAG even when the plan's device graph has a cycle (A -> B ->
// A), and ordering them by level gives a valid execution order in which
// parts of one level are independent of each other. Each part becomes a
// valid ONNX model (same opsets, the initializers and Constant nodes it
// needs; external weights stay external) whose inputs are the original
// inputs and the tensors it receives, and whose outputs are the original
// outputs it produces and the tensors later parts need. See docs/split.md.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>
#include <nlohmann/json.hpp>

#include "common/result.h"
#include "graph/graph.h"

namespace tessera::split {

// What split reads from a plan.json.
struct PlanAssignment {
  std::string source;                // where it came from, for messages
  std::string algorithm;             // "m-etf", ...; informational
  std::vector<std::string> devices;  // "devices"[i]["id"], in the plan's order
  // "placement": node name -> index into `devices`, as listed.
  std::vector<std::pair<std::string, int>> placement;
};

// Reads the keys split needs from a parsed plan.json. kBadInput, naming
// `source` and the key, for a missing or mistyped key, a device id listed
// twice, or a placement naming a device the plan does not list.
Result<PlanAssignment> ParsePlan(const nlohmann::json& plan,
                                 const std::string& source);
// Reads and parses the plan.json at `path`.
Result<PlanAssignment> LoadPlan(const std::string& path);

struct Part {
  int device = 0;  // index into PlanAssignment::devices
  int level = 0;   // parts of one level do not depend on each other
  int ops = 0;     // nodes placed here (Constant copies not counted)
  // Nodes in file order (NodeId), copies of the Constant nodes it reads
  // included: Constant values are copied to every part that reads them,
  // like initializers, never transferred.
  std::vector<graph::NodeId> nodes;
  // The original graph inputs it reads (in the graph's order), then the
  // tensors it receives from earlier parts (by TensorId).
  std::vector<graph::TensorId> inputs;
  // The original outputs it produces (in the graph's order), then the
  // tensors later parts read (by TensorId).
  std::vector<graph::TensorId> outputs;
  std::vector<graph::TensorId> initializers;  // initializers it reads
};

struct Transfer {
  graph::TensorId tensor = graph::kNoTensor;
  int from_part = 0, to_part = 0;
};

struct Partition {
  std::vector<int> node_device;     // per NodeId, index into the plan's devices
  std::vector<int> node_part;       // per NodeId; -1 for copied Constant nodes
  std::vector<Part> parts;          // in a valid execution order
  std::vector<Transfer> transfers;  // one per (tensor, receiving part)
  int devices_used = 0;
  // More parts than devices: the plan's device graph has a cycle.
  bool device_cycle() const {
    return parts.size() > static_cast<size_t>(devices_used);
  }
};

// Cuts `g` along `plan`. `names` are graph::UniqueNodeNames(g), the names
// plans use. kBadInput when the plan names a node the graph lacks or leaves
// one of its nodes out.
Result<Partition> PartitionGraph(const graph::OpGraph& g,
                                 std::span<const std::string> names,
                                 const PlanAssignment& plan);

// Where the parts will be written, for external weight data (whose
// `location` is relative to the model's directory).
struct PartLocation {
  std::string model_dir;  // the original model's directory
  std::string out_dir;    // the directory the parts are written to
  // External data location in the model -> its link in out_dir
  // (LinkExternalData); a location not here is rewritten as a path
  // relative to out_dir.
  std::map<std::string, std::string> links;
};

// The external data files `model`'s tensors live in, as their `location`s
// (relative to the model's directory), each once.
std::vector<std::string> ExternalDataFiles(const onnx::ModelProto& model);

// Links each existing file of `locations` (relative to `model_dir`) into
// `out_dir` under its own file name (made unique; a file already there under
// that name is left alone unless it is the same file): a hard link, so that the
// weights stay in their file and nothing is copied, while ONNX Runtime,
// which reads external data only from inside a model's directory, finds
// them. Across file systems, a symbolic link and a warning. Returns
// location -> link name.
Result<std::map<std::string, std::string>> LinkExternalData(
    const std::vector<std::string>& locations, const std::string& model_dir,
    const std::string& out_dir, std::vector<std::string>* warnings);

// Builds the parts of one model: indexes its initializers and value types
// once, so that a split into many parts stays linear in the model's size.
class PartBuilder {
 public:
  // `model.proto` must be set (graph::LoadOptions::keep_proto).
  PartBuilder(const graph::Model& model, PartLocation where);
  PartBuilder(const PartBuilder&) = delete;
  PartBuilder& operator=(const PartBuilder&) = delete;
  ~PartBuilder();
  // As BuildPart.
  Result<onnx::ModelProto> Build(const Partition& partition, int part) const;

 private:
  struct Index;
  const graph::Model& model_;
  PartLocation where_;
  std::unique_ptr<Index> index_;
};

// Part `part` of `partition` as an ONNX model. `model.proto` must be set
// (graph::LoadOptions::keep_proto). An external weight's location is
// rewritten to point from `where.out_dir` at the original file.
Result<onnx::ModelProto> BuildPart(const graph::Model& model,
                                   const Partition& partition, int part,
                                   const PartLocation& where);

// Runs ONNX's checker on a part to be written to `dir` (external weights
// are looked up from there). Returns the external data files that do not
// exist (their tensors are checked as placeholders: a structure-only model
// splits into valid parts that cannot run until the weights are there). The
// error carries the checker's message.
Result<std::vector<std::string>> CheckPart(const onnx::ModelProto& part,
                                           int index, const std::string& dir);

struct SplitOptions {
  std::string out_dir;
  bool force = false;     // write into a non-empty directory
  bool check = true;      // run ONNX's checker on every part
  std::string plan_path;  // recorded in the manifest
  // Called at each stage ("building part 3 of 7", "writing"), for a front
  // end's progress line.
  std::function<void(std::string_view stage)> progress;
};

struct SplitResult {
  Partition partition;
  nlohmann::json manifest;         // manifest.json
  nlohmann::json device_map;       // device_map.json
  std::vector<std::string> files;  // written, parts first
  std::vector<std::string> warnings;
  double partition_s = 0, build_s = 0, write_s = 0;  // wall time per stage
};

// Partitions, builds, checks and writes parts/part_<i>.onnx, manifest.json
// and device_map.json. kBadInput for a plan that does not match the model
// or an output directory that exists and is not empty (unless force, which
// replaces the part, manifest and device-map files and leaves others).
Result<SplitResult> SplitModel(const graph::Model& model,
                               const PlanAssignment& plan,
                               const SplitOptions& options);

// "part_<index>.onnx".
std::string PartFileName(int index);

// manifest.json (docs/split.md): parts, transfers, order.
nlohmann::json ManifestJson(const graph::Model& model,
                            const PlanAssignment& plan,
                            const Partition& partition,
                            const std::string& plan_path);

// The parts as a Graphviz DOT graph: a box per part in its device's colour,
// parts of one level side by side, an edge per pair of parts that exchange
// tensors, labelled with their count and bytes.
void WritePartsDot(const nlohmann::json& manifest, std::ostream& out);

// device_map.json: module paths recovered from PyTorch-exported node names
// ("/encoder/layer.3/attention/MatMul" -> "encoder.layer.3.attention")
// mapped to device indices at the coarsest level consistent with the plan,
// with the modules the plan splits below their boundary. Nodes whose
// `node_device` is negative (the copied constant nodes) and Constant nodes
// are left out.
nlohmann::json DeviceMapJson(const graph::OpGraph& g,
                             std::span<const int> node_device,
                             std::span<const std::string> devices);

// The module path of a PyTorch-exported node name, or "" when the name
// carries none: "/layer1/layer1.0/conv1/Conv" -> "layer1.0.conv1",
// "/encoder/layer.0/attention/self/MatMul" ->
// "encoder.layer.0.attention.self", "/Add" -> "" (the root module).
// `is_pytorch` tells whether the name had the "/scope/.../Op" form.
std::string ModulePath(std::string_view node_name, bool* is_pytorch);

}  // namespace tessera::split

#endif  // TESSERA_SPLIT_SPLIT_H_
