// Read-only accessors of OpGraph; construction lives in builder.cc.
#include <algorithm>
#include <functional>

#include "graph/graph.h"
#include "graph/graph_internal.h"

namespace tessera::graph {

OpGraph::OpGraph() = default;
OpGraph::OpGraph(OpGraph&&) noexcept = default;
OpGraph& OpGraph::operator=(OpGraph&&) noexcept = default;
OpGraph::~OpGraph() = default;

std::string_view OpGraph::str(uint32_t id) const {
  return {arena_.data() + str_offset_[id]};
}

std::string_view OpGraph::name() const { return str(name_); }

size_t OpGraph::num_nodes_with_subgraphs() const {
  size_t n = nodes_.size();
  for (const auto& sub : subgraphs_) n += sub->num_nodes_with_subgraphs();
  return n;
}

size_t OpGraph::num_edges() const { return boost::num_edges(*dag_); }

NodeView OpGraph::node(NodeId id) const {
  const NodeRecord& r = nodes_[id];
  const TensorId* base = node_tensors_.data() + r.in_begin;
  return NodeView{
      .name = str(r.name),
      .op_type = str(r.op_type),
      .domain = str(r.domain),
      .inputs = {base, r.in_count},
      .implicit_inputs = {base + r.in_count, r.implicit_count},
      .outputs = {node_tensors_.data() + r.out_begin, r.out_count},
      .subgraphs = {node_subgraphs_.data() + r.sub_begin, r.sub_count},
  };
}

TensorView OpGraph::tensor(TensorId id) const {
  const TensorRecord& r = tensors_[id];
  std::optional<std::span<const int64_t>> dims;
  if (r.rank >= 0) {
    dims = std::span<const int64_t>(dims_.data() + r.dim_begin,
                                    static_cast<size_t>(r.rank));
  }
  return TensorView{.name = str(r.name),
                    .dtype = r.dtype,
                    .kind = r.kind,
                    .dims = dims,
                    .elements = r.elements,
                    .bytes = r.bytes,
                    .producer = r.producer};
}

std::span<const NodeId> OpGraph::consumers(TensorId id) const {
  return {consumers_.data() + consumer_offset_[id],
          consumer_offset_[id + 1] - consumer_offset_[id]};
}

namespace {
std::optional<uint32_t> LookUp(
    const std::vector<std::pair<uint32_t, uint32_t>>& index,
    std::string_view name,
    const std::function<std::string_view(uint32_t)>& name_of) {
  const uint32_t h = internal::HashName(name);
  auto it = std::lower_bound(index.begin(), index.end(),
                             std::make_pair(h, uint32_t{0}));
  for (; it != index.end() && it->first == h; ++it) {
    if (name_of(it->second) == name) return it->second;
  }
  return std::nullopt;
}
}  // namespace

std::optional<TensorId> OpGraph::FindTensor(std::string_view name) const {
  return LookUp(tensor_index_, name,
                [this](uint32_t id) { return str(tensors_[id].name); });
}

std::optional<NodeId> OpGraph::FindNode(std::string_view name) const {
  return LookUp(node_index_, name,
                [this](uint32_t id) { return str(nodes_[id].name); });
}

std::string_view OpGraph::symbol(int64_t dim) const {
  if (dim >= 0) return {};
  const auto k = static_cast<size_t>(-(dim + 1));
  return k < symbols_.size() ? str(symbols_[k]) : std::string_view{};
}

const OpGraph::AttrRecord* OpGraph::FindAttr(NodeId node, std::string_view attr,
                                             AttrType type) const {
  const NodeRecord& r = nodes_[node];
  for (uint32_t i = r.attr_begin; i < r.attr_begin + r.attr_count; ++i) {
    if (str(attrs_[i].name) == attr) {
      return attrs_[i].type == type ? &attrs_[i] : nullptr;
    }
  }
  return nullptr;
}

std::optional<int64_t> OpGraph::GetInt(NodeId node,
                                       std::string_view attr) const {
  const AttrRecord* a = FindAttr(node, attr, AttrType::kInt);
  return a ? std::optional<int64_t>(a->i) : std::nullopt;
}

std::optional<double> OpGraph::GetFloat(NodeId node,
                                        std::string_view attr) const {
  const AttrRecord* a = FindAttr(node, attr, AttrType::kFloat);
  return a ? std::optional<double>(a->f) : std::nullopt;
}

std::optional<std::string_view> OpGraph::GetString(
    NodeId node, std::string_view attr) const {
  const AttrRecord* a = FindAttr(node, attr, AttrType::kString);
  return a ? std::optional<std::string_view>(str(a->begin)) : std::nullopt;
}

std::span<const int64_t> OpGraph::GetInts(NodeId node,
                                          std::string_view attr) const {
  const AttrRecord* a = FindAttr(node, attr, AttrType::kInts);
  if (!a) return {};
  return {attr_ints_.data() + a->begin, a->count};
}

std::span<const float> OpGraph::GetFloats(NodeId node,
                                          std::string_view attr) const {
  const AttrRecord* a = FindAttr(node, attr, AttrType::kFloats);
  if (!a) return {};
  return {attr_floats_.data() + a->begin, a->count};
}

}  // namespace tessera::graph
