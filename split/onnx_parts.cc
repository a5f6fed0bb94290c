// BuildPart / CheckPart: one part of a partition as a standalone ONNX model.
#include <algorithm>
#include <filesystem>
#include <unordered_map>
#include <unordered_set>

#include <onnx/checker.h>

#include "split/split.h"
#include "split/tensor_walk_internal.h"

namespace tessera::split {
namespace {

namespace fs = std::filesystem;
using graph::NodeId;
using graph::OpGraph;
using graph::TensorId;

// Name -> declared type, from the graph's inputs, outputs and value_info
// (which the loader filled with inferred types).
class ValueInfos {
 public:
  explicit ValueInfos(const onnx::GraphProto& g) {
    for (const auto& vi : g.value_info()) by_name_.emplace(vi.name(), &vi);
    for (const auto& vi : g.output()) by_name_[vi.name()] = &vi;
    for (const auto& vi : g.input()) by_name_[vi.name()] = &vi;
  }
  const onnx::ValueInfoProto* Find(const std::string& name) const {
    const auto it = by_name_.find(name);
    return it == by_name_.end() ? nullptr : it->second;
  }

 private:
  std::unordered_map<std::string, const onnx::ValueInfoProto*> by_name_;
};

bool HasElemType(const onnx::ValueInfoProto& vi) {
  return vi.has_type() && (!vi.type().has_tensor_type() ||
                           vi.type().tensor_type().elem_type() != 0);
}

// The declared value info of `t`, or one made from the OpGraph's type.
Result<onnx::ValueInfoProto> ValueInfoOf(const OpGraph& g, TensorId t,
                                         const ValueInfos& infos) {
  const graph::TensorView v = g.tensor(t);
  const std::string name(v.name);
  if (const onnx::ValueInfoProto* vi = infos.Find(name);
      vi && HasElemType(*vi)) {
    return *vi;
  }
  if (v.dtype == graph::DataType::kUndefined) {
    return Internal("the element type of tensor '" + name +
                    "' is unknown (not declared, and shape inference could "
                    "not tell); a part cannot declare it as an input or "
                    "output");
  }
  onnx::ValueInfoProto vi;
  vi.set_name(name);
  auto* tensor = vi.mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(static_cast<int32_t>(v.dtype));
  if (v.dims) {
    auto* shape = tensor->mutable_shape();
    for (const int64_t d : *v.dims) {
      auto* dim = shape->add_dim();
      if (graph::IsKnownDim(d)) {
        dim->set_dim_value(d);
      } else if (const std::string_view s = g.symbol(d); !s.empty()) {
        dim->set_dim_param(std::string(s));
      }
    }
  }
  return vi;
}

// Points an external tensor's location, relative to the original model's
// directory, at the same file from the parts' directory.
void RelocateTensor(onnx::TensorProto* t, const PartLocation& where) {
  if (t->data_location() != onnx::TensorProto_DataLocation_EXTERNAL) return;
  for (auto& entry : *t->mutable_external_data()) {
    if (entry.key() != "location") continue;
    if (const auto link = where.links.find(entry.value());
        link != where.links.end()) {
      entry.set_value(link->second);
      continue;
    }
    const fs::path original = fs::weakly_canonical(
        fs::absolute(fs::path(where.model_dir) / fs::path(entry.value())));
    const fs::path out = fs::weakly_canonical(fs::absolute(where.out_dir));
    fs::path relative = original.lexically_relative(out);
    entry.set_value((relative.empty() ? original : relative).generic_string());
  }
}

}  // namespace

struct PartBuilder::Index {
  explicit Index(const onnx::GraphProto& g) : infos(g) {
    for (int i = 0; i < g.initializer_size(); ++i) {
      dense.emplace(g.initializer(i).name(), i);
    }
    for (int i = 0; i < g.sparse_initializer_size(); ++i) {
      sparse.emplace(g.sparse_initializer(i).values().name(), i);
    }
  }
  std::unordered_map<std::string_view, int> dense, sparse;
  ValueInfos infos;
};

PartBuilder::PartBuilder(const graph::Model& model, PartLocation where)
    : model_(model), where_(std::move(where)) {
  if (model.proto) index_ = std::make_unique<Index>(model.proto->graph());
}

PartBuilder::~PartBuilder() = default;

Result<onnx::ModelProto> BuildPart(const graph::Model& model,
                                   const Partition& partition, int index,
                                   const PartLocation& where) {
  return PartBuilder(model, where).Build(partition, index);
}

Result<onnx::ModelProto> PartBuilder::Build(const Partition& partition,
                                            int index) const {
  const graph::Model& model = model_;
  const PartLocation& where = where_;
  if (!model.proto) {
    return Internal("BuildPart: the model was loaded without keep_proto");
  }
  if (index < 0 || static_cast<size_t>(index) >= partition.parts.size()) {
    return Internal("BuildPart: no part " + std::to_string(index));
  }
  const onnx::ModelProto& src = *model.proto;
  const onnx::GraphProto& sg = src.graph();
  const OpGraph& g = *model.graph;
  const Part& part = partition.parts[index];
  if (static_cast<size_t>(sg.node_size()) != g.num_nodes()) {
    return Internal("BuildPart: the kept model has " +
                    std::to_string(sg.node_size()) + " nodes, the graph " +
                    std::to_string(g.num_nodes()));
  }

  onnx::ModelProto out;
  out.set_ir_version(src.ir_version());
  *out.mutable_opset_import() = src.opset_import();
  out.set_producer_name("tessera split");
  out.set_producer_version(src.producer_name().empty()
                               ? src.producer_version()
                               : src.producer_name() + " " +
                                     src.producer_version());
  out.set_domain(src.domain());
  out.set_model_version(src.model_version());
  out.set_doc_string(src.doc_string());
  *out.mutable_metadata_props() = src.metadata_props();
  *out.mutable_functions() = src.functions();
  auto* meta = out.add_metadata_props();
  meta->set_key("tessera.part");
  meta->set_value(std::to_string(index));

  onnx::GraphProto* og = out.mutable_graph();
  og->set_name(sg.name() + "_part_" + std::to_string(index));
  for (const NodeId n : part.nodes) {
    onnx::NodeProto* node = og->add_node();
    *node = sg.node(static_cast<int>(n));
  }

  const auto& dense = index_->dense;
  const auto& sparse = index_->sparse;
  std::unordered_set<std::string_view> included;
  for (const TensorId t : part.initializers) {
    const std::string_view name = g.tensor(t).name;
    if (const auto it = dense.find(name); it != dense.end()) {
      *og->add_initializer() = sg.initializer(it->second);
    } else if (const auto s = sparse.find(name); s != sparse.end()) {
      *og->add_sparse_initializer() = sg.sparse_initializer(s->second);
    } else {
      return Internal("BuildPart: initializer '" + std::string(name) +
                      "' is not in the model file");
    }
    included.insert(name);
  }

  internal::ForEachMutableTensor(
      og, [&](onnx::TensorProto* t) { RelocateTensor(t, where); });
  const ValueInfos& infos = index_->infos;
  for (const TensorId t : part.inputs) {
    auto vi = ValueInfoOf(g, t, infos);
    if (!vi) return vi.error();
    *og->add_input() = std::move(vi).value();
  }
  // Initializers also listed as graph inputs (required before IR 4,
  // overridable defaults after) stay listed.
  for (const auto& vi : sg.input()) {
    if (included.count(vi.name())) *og->add_input() = vi;
  }
  std::unordered_set<std::string> boundary;
  for (const auto& vi : og->input()) boundary.insert(vi.name());
  for (const TensorId t : part.outputs) {
    auto vi = ValueInfoOf(g, t, infos);
    if (!vi) return vi.error();
    boundary.insert(vi->name());
    *og->add_output() = std::move(vi).value();
  }
  // Inferred types of the values that stay inside the part.
  for (const NodeId n : part.nodes) {
    for (const TensorId t : g.node(n).outputs) {
      if (t == graph::kNoTensor) continue;
      const std::string name(g.tensor(t).name);
      if (boundary.count(name)) continue;
      if (const onnx::ValueInfoProto* vi = infos.Find(name)) {
        *og->add_value_info() = *vi;
      }
    }
  }
  return out;
}

Result<std::vector<std::string>> CheckPart(const onnx::ModelProto& part,
                                           int index, const std::string& dir) {
  // Weights whose external file is absent (a structure-only model) get a
  // placeholder in a scratch copy, so the checker sees the rest.
  std::vector<std::string> missing;
  const onnx::ModelProto* checked = &part;
  onnx::ModelProto scratch;
  const auto absent = [&](const onnx::TensorProto& t) -> std::string {
    if (t.data_location() != onnx::TensorProto_DataLocation_EXTERNAL) {
      return "";
    }
    for (const auto& entry : t.external_data()) {
      if (entry.key() != "location") continue;
      std::error_code ec;
      if (fs::exists(fs::path(dir) / entry.value(), ec)) return "";
      return (fs::path(dir) / entry.value()).lexically_normal().string();
    }
    return "";
  };
  internal::ForEachTensor(part.graph(), [&](const onnx::TensorProto& t) {
    const std::string file = absent(t);
    if (!file.empty() &&
        std::find(missing.begin(), missing.end(), file) == missing.end()) {
      missing.push_back(file);
    }
  });
  if (!missing.empty()) {
    scratch = part;
    checked = &scratch;
    internal::ForEachMutableTensor(
        scratch.mutable_graph(), [&](onnx::TensorProto* t) {
          if (absent(*t).empty()) return;
          t->clear_external_data();
          t->set_data_location(onnx::TensorProto_DataLocation_DEFAULT);
          t->set_raw_data(
              std::string(1, '\0'));  // the checker does not size it
        });
  }
  // onnx::checker::check_model(ModelProto) resolves external data against
  // the working directory; this is its body with the parts' directory.
  try {
    const onnx::ModelProto& m = *checked;
    onnx::checker::CheckerContext ctx;
    if (m.ir_version() <= 0) {
      return Internal("part " + std::to_string(index) + " has no IR version");
    }
    ctx.set_ir_version(static_cast<int>(m.ir_version()));
    std::unordered_map<std::string, int> opsets;
    for (const auto& op : m.opset_import()) {
      opsets[op.domain()] = static_cast<int>(op.version());
    }
    if (opsets.empty()) opsets[onnx::ONNX_DOMAIN] = 1;  // before IR 3
    ctx.set_opset_imports(opsets);
    ctx.set_model_dir(dir);
    onnx::checker::LexicalScopeContext lex;
    onnx::checker::check_graph(m.graph(), ctx, lex);
    if (m.ir_version() >= 8) {
      onnx::checker::check_model_local_functions(m, ctx, lex);
    }
  } catch (const std::exception& e) {
    return Internal("part " + std::to_string(index) +
                    " fails ONNX's checker: " + e.what());
  }
  return missing;
}

}  // namespace tessera::split
