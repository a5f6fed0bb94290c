// LoadModel: read, parse, validate, bind, infer shapes, convert.
#include <algorithm>
#include <climits>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <onnx/defs/schema.h>

#include "graph/noop.h"
#include "graph/onnx_internal.h"

namespace tessera::graph {
namespace {

Result<std::string> ReadFile(const std::string& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) {
    return BadInput(path + ": no such file");
  }
  if (std::filesystem::is_directory(status)) {
    return BadInput(path + ": is a directory, not an ONNX model file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return BadInput(path + ": cannot be opened for reading");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (in.bad()) return BadInput(path + ": read error");
  return std::move(bytes).str();
}

Result<onnx::ModelProto> ParseModel(const std::string& path,
                                    const std::string& bytes) {
  if (bytes.empty()) return BadInput(path + ": empty file, not an ONNX model");
  if (bytes.size() > static_cast<size_t>(INT32_MAX)) {
    return BadInput(path +
                    ": larger than 2 GiB, which protobuf cannot parse; save "
                    "the weights as external data (onnx.save_model(..., "
                    "save_as_external_data=True))");
  }
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes)) {
    return BadInput(path +
                    ": not an ONNX model (the bytes do not parse as an ONNX "
                    "ModelProto; is the file truncated or of another "
                    "format?)");
  }
  if (!model.has_graph() || model.ir_version() <= 0) {
    return BadInput(path + ": not an ONNX model (" +
                    (model.has_graph() ? "no IR version" : "no graph") +
                    "; is the file truncated or of another format?)");
  }
  if (model.ir_version() >= 3 && model.opset_import_size() == 0) {
    return BadInput(path + ": the model imports no operator set (IR version " +
                    std::to_string(model.ir_version()) +
                    " requires one; is the file truncated?)");
  }
  return model;
}

void CollectDomains(const onnx::GraphProto& g,
                    std::map<std::string, int>* nodes_per_domain) {
  for (const auto& node : g.node()) {
    ++(*nodes_per_domain)[node.domain()];
    for (const auto& a : node.attribute()) {
      if (a.has_g()) CollectDomains(a.g(), nodes_per_domain);
      for (const auto& sub : a.graphs()) CollectDomains(sub, nodes_per_domain);
    }
  }
}

std::string DomainName(const std::string& d) {
  return d.empty() || d == "ai.onnx" ? "ai.onnx" : d;
}

// Unknown domains and opsets newer than this build's ONNX: warnings only.
void CheckOpsets(const onnx::ModelProto& model,
                 std::vector<std::string>* warnings) {
  const auto& known = onnx::OpSchemaRegistry::DomainToVersionRange::Instance();
  std::map<std::string, int> nodes_per_domain;
  CollectDomains(model.graph(), &nodes_per_domain);
  for (const auto& op : model.opset_import()) {
    const std::string domain = op.domain() == "ai.onnx" ? "" : op.domain();
    auto it = known.Map().find(domain);
    if (it == known.Map().end()) continue;  // reported per node below
    if (op.version() > it->second.second) {
      warnings->push_back("opset " + DomainName(domain) + " " +
                          std::to_string(op.version()) +
                          " is newer than this build of ONNX knows (up to " +
                          std::to_string(it->second.second) +
                          "); operators may lack shape inference");
    }
  }
  for (const auto& [domain, count] : nodes_per_domain) {
    if (known.Map().contains(domain) || domain == "ai.onnx") continue;
    warnings->push_back("unknown operator domain '" + domain + "' (" +
                        std::to_string(count) +
                        " nodes): their shapes cannot be inferred and later "
                        "costing uses a flagged fallback");
  }
}

bool HasUnknownShapes(const OpGraph& g) {
  for (TensorId t = 0; t < g.num_tensors(); ++t) {
    if (!g.tensor(t).shape_known()) return true;
  }
  return false;
}

// Where ONNX's data propagation left shapes unknown, folds the integer shape
// computations in a scratch copy, re-infers it, and copies the inferred
// shapes back into `model` (whose structure stays as it was). Returns whether
// anything was folded.
bool FoldShapesInto(onnx::ModelProto* model) {
  // Each round can expose new Shape inputs; a handful of rounds reach the
  // fixed point on every model we have seen (PaddleOCR's take two).
  constexpr int kMaxRounds = 8;
  onnx::ModelProto scratch = *model;
  bool any = false;
  std::vector<std::string> scratch_warnings;  // the first pass reported
  for (int round = 0; round < kMaxRounds; ++round) {
    if (internal::FoldShapeComputations(scratch.mutable_graph()) == 0) break;
    any = true;
    // Folded values are int64; a stored int32 type would conflict.
    internal::ClearInferredShapes(scratch.mutable_graph());
    internal::InferShapes(&scratch, &scratch_warnings);
  }
  if (!any) return false;
  onnx::GraphProto* g = model->mutable_graph();
  *g->mutable_value_info() = scratch.graph().value_info();
  // Folded tensors are initializers in the scratch copy: keep their types.
  for (int i = g->initializer_size(); i < scratch.graph().initializer_size();
       ++i) {
    const onnx::TensorProto& t = scratch.graph().initializer(i);
    onnx::ValueInfoProto* vi = g->add_value_info();
    vi->set_name(t.name());
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(t.data_type());
    auto* shape = tt->mutable_shape();
    for (const int64_t d : t.dims()) shape->add_dim()->set_dim_value(d);
  }
  for (int i = 0; i < g->output_size(); ++i) {
    *g->mutable_output(i)->mutable_type() = scratch.graph().output(i).type();
  }
  return true;
}

void AddWeights(const OpGraph& g, std::set<std::string_view>* seen,
                WeightStats* stats) {
  for (const TensorId t : g.weights()) {
    const TensorView v = g.tensor(t);
    // A weight read only through aliases (IsWeightAlias) is counted as
    // each alias: the framework holds those, the exporter merged them.
    const auto readers = g.consumers(t);
    if (!readers.empty() &&
        std::all_of(readers.begin(), readers.end(),
                    [&](NodeId n) { return IsWeightAlias(g, n); })) {
      continue;
    }
    if (!seen->insert(v.name).second) continue;
    ++stats->tensors;
    stats->elements += std::max<int64_t>(v.elements, 0);
    stats->bytes += std::max<int64_t>(v.bytes, 0);
  }
  for (size_t s = 0; s < g.num_subgraphs(); ++s) {
    AddWeights(g.subgraph(static_cast<uint32_t>(s)), seen, stats);
  }
}

void AddUnknownShapes(const OpGraph& g, bool is_main,
                      std::vector<UnknownShape>* out) {
  for (TensorId t = 0; t < g.num_tensors(); ++t) {
    const TensorView v = g.tensor(t);
    if (v.shape_known() || v.kind == TensorKind::kOuterScope) continue;
    UnknownShape u{
        std::string(v.name), is_main ? "" : std::string(g.name()), {}};
    for (const NodeId n : g.consumers(t)) {
      const NodeView nv = g.node(n);
      u.consumers.push_back(std::string(nv.op_type) + " " +
                            std::string(nv.name));
    }
    out->push_back(std::move(u));
  }
  for (size_t s = 0; s < g.num_subgraphs(); ++s) {
    AddUnknownShapes(g.subgraph(static_cast<uint32_t>(s)), false, out);
  }
}

}  // namespace

Result<Model> LoadModel(const std::string& path, const LoadOptions& options) {
  if (options.progress) options.progress("reading");
  auto bytes = ReadFile(path);
  if (!bytes) return bytes.error();
  return LoadModelFromBytes(std::move(bytes).value(), path, options);
}

namespace {

bool ReadVarint(const unsigned char** p, const unsigned char* end,
                uint64_t* value) {
  *value = 0;
  for (int shift = 0; shift < 64 && *p < end; shift += 7) {
    const unsigned char c = *(*p)++;
    *value |= static_cast<uint64_t>(c & 0x7f) << shift;
    if ((c & 0x80) == 0) return true;
  }
  return false;
}

// Protobuf parses at most this deep; so does the count.
constexpr int kMaxWireDepth = 100;

// Counts the fields of the serialized message in [p, end) at every depth,
// without allocating: a length-delimited field counts as a nested message
// when its bytes read as one (a string that happens to read as one is
// over-counted, which is safe). False when the bytes are no message or the
// count passes `limit`. Time: at most kMaxWireDepth passes over the bytes.
bool CountWireFields(const unsigned char* p, const unsigned char* end,
                     int depth, int64_t limit, int64_t* count) {
  while (p < end) {
    uint64_t tag = 0, value = 0;
    if (!ReadVarint(&p, end, &tag) || (tag >> 3) == 0) return false;
    if (++*count > limit) return false;
    switch (tag & 7) {
      case 0:
        if (!ReadVarint(&p, end, &value)) return false;
        break;
      case 1:
        if (end - p < 8) return false;
        p += 8;
        break;
      case 5:
        if (end - p < 4) return false;
        p += 4;
        break;
      case 2: {
        if (!ReadVarint(&p, end, &value) ||
            value > static_cast<uint64_t>(end - p)) {
          return false;
        }
        const unsigned char* next = p + value;
        if (depth < kMaxWireDepth && value > 0) {
          const int64_t before = *count;
          if (!CountWireFields(p, next, depth + 1, limit, count)) {
            if (*count > limit) return false;
            *count = before;  // not a message: one field, counted above
          }
        }
        p = next;
        break;
      }
      default:
        return false;  // groups (deprecated) or no wire type
    }
  }
  return true;
}

int64_t CountOnnxNodes(const onnx::GraphProto& g) {
  int64_t n = g.node_size();
  for (const auto& node : g.node()) {
    for (const auto& a : node.attribute()) {
      if (a.has_g()) n += CountOnnxNodes(a.g());
      for (const auto& sub : a.graphs()) n += CountOnnxNodes(sub);
    }
  }
  return n;
}

}  // namespace

Result<Model> LoadModelFromBytes(std::string bytes, const std::string& path,
                                 const LoadOptions& options) {
  const auto stage = [&](std::string_view what) {
    if (options.progress) options.progress(what);
  };
  stage("parsing");
  if (options.max_fields > 0) {
    // Parsing allocates per field (a 2-byte empty string becomes a
    // std::string): refuse a flood of them before it does.
    int64_t fields = 0;
    const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
    CountWireFields(data, data + bytes.size(), 0, options.max_fields, &fields);
    if (fields > options.max_fields) {
      return BadInput(path + ": more than " +
                      std::to_string(options.max_fields) +
                      " protobuf fields (a model has about ten per node), "
                      "more than allowed here");
    }
  }
  auto parsed = ParseModel(path, bytes);
  if (!parsed) return parsed.error();
  bytes = std::string();  // release the file's bytes early
  onnx::ModelProto& proto = *parsed;
  if (options.max_nodes > 0) {
    const int64_t nodes = CountOnnxNodes(proto.graph());
    if (nodes > options.max_nodes) {
      return BadInput(path + ": " + std::to_string(nodes) +
                      " nodes, more than the " +
                      std::to_string(options.max_nodes) + " allowed here");
    }
  }

  Model model;
  model.path = path;
  CheckOpsets(proto, &model.warnings);
  for (std::string& w : internal::DescribeUnknownOperators(&proto)) {
    model.warnings.push_back(std::move(w));
  }
  auto changed =
      internal::BindInputs(options, proto.mutable_graph(), &model.warnings);
  if (!changed) return changed.error().WithContext(path);
  if (*changed) internal::ClearInferredShapes(proto.mutable_graph());

  // Validate the structure before ONNX's shape inference sees it: ONNX 1.12
  // crashes on some malformed graphs (e.g. Shape of an undefined tensor).
  stage("validating the graph");
  auto graph = internal::ConvertGraph(proto.graph());
  if (!graph) return graph.error().WithContext(path);
  if (!internal::IsTopologicallySorted(**graph)) {
    // ONNX requires sorted nodes and shape inference relies on it.
    internal::SortNodes(**graph, proto.mutable_graph());
  }
  stage("inferring shapes");
  internal::InferShapes(&proto, &model.warnings);
  stage("building the graph");
  graph = internal::ConvertGraph(proto.graph(), options.float_type);
  if (!graph) return graph.error().WithContext(path);
  if (HasUnknownShapes(**graph)) {
    stage("folding shape computations");
    if (FoldShapesInto(&proto)) {
      graph = internal::ConvertGraph(proto.graph(), options.float_type);
      if (!graph) return graph.error().WithContext(path);
    }
  }
  model.graph = std::move(graph).value();

  model.producer_name = proto.producer_name();
  model.producer_version = proto.producer_version();
  model.graph_name = proto.graph().name();
  model.domain = proto.domain();
  model.ir_version = proto.ir_version();
  model.model_version = proto.model_version();
  for (const auto& op : proto.opset_import()) {
    model.opsets.push_back({op.domain(), op.version()});
  }
  std::set<std::string_view> seen;
  AddWeights(*model.graph, &seen, &model.weights);
  AddUnknownShapes(*model.graph, true, &model.unknown_shapes);
  if (options.keep_proto) {
    model.proto = std::make_shared<const onnx::ModelProto>(std::move(proto));
  }
  return model;
}

}  // namespace tessera::graph
