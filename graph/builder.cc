#include "graph/builder.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <utility>

#include "graph/graph_internal.h"

namespace tessera::graph {

OpGraphBuilder::OpGraphBuilder(std::string_view graph_name)
    : g_(new OpGraph()) {
  g_->str_offset_.reserve(1024);
  Intern("");                 // string id 0 is the empty string
  g_->symbols_.push_back(0);  // symbol 0 is the anonymous unknown dim
  g_->name_ = Append(graph_name);
}

OpGraphBuilder::~OpGraphBuilder() = default;

uint32_t OpGraphBuilder::Append(std::string_view s) {
  const auto id = static_cast<uint32_t>(g_->str_offset_.size());
  g_->str_offset_.push_back(static_cast<uint32_t>(g_->arena_.size()));
  g_->arena_.insert(g_->arena_.end(), s.begin(), s.end());
  g_->arena_.push_back('\0');
  return id;
}

uint32_t OpGraphBuilder::Intern(std::string_view s) {
  auto [it, inserted] = interned_.try_emplace(std::string(s), 0);
  if (inserted) it->second = Append(s);
  return it->second;
}

int64_t OpGraphBuilder::Symbol(std::string_view name) {
  if (name.empty()) return kUnknownDim;
  const uint32_t id = Intern(name);
  auto& symbols = g_->symbols_;
  auto it = std::find(symbols.begin(), symbols.end(), id);
  if (it == symbols.end()) it = symbols.insert(symbols.end(), id);
  return -static_cast<int64_t>(it - symbols.begin()) - 1;
}

TensorId OpGraphBuilder::AddTensor(std::string_view name, DataType dtype,
                                   std::optional<std::span<const int64_t>> dims,
                                   TensorKind kind) {
  auto [it, inserted] = tensor_ids_.try_emplace(std::string(name), kNoTensor);
  if (!inserted) return it->second;
  const auto id = static_cast<TensorId>(g_->tensors_.size());
  it->second = id;
  g_->tensors_.push_back(OpGraph::TensorRecord{.name = Append(name),
                                               .dim_begin = 0,
                                               .rank = -1,
                                               .dtype = dtype,
                                               .kind = kind,
                                               .producer = kNoNode,
                                               .elements = -1,
                                               .bytes = -1});
  SetShape(id, dtype, dims);
  return id;
}

std::optional<TensorId> OpGraphBuilder::Find(std::string_view name) const {
  auto it = tensor_ids_.find(std::string(name));
  if (it == tensor_ids_.end()) return std::nullopt;
  return it->second;
}

void OpGraphBuilder::SetShape(TensorId t, DataType dtype,
                              std::optional<std::span<const int64_t>> dims) {
  OpGraph::TensorRecord& r = g_->tensors_[t];
  if (float_type_ && IsFloat(dtype)) dtype = *float_type_;
  r.dtype = dtype;
  r.rank = -1;
  r.elements = -1;
  r.bytes = -1;
  if (!dims) return;
  r.rank = static_cast<int32_t>(dims->size());
  r.dim_begin = static_cast<uint32_t>(g_->dims_.size());
  g_->dims_.insert(g_->dims_.end(), dims->begin(), dims->end());
  // Sizes that overflow int64 (only a corrupt file has them) stay unknown
  // rather than wrapping around to something small.
  int64_t elements = 1;
  for (const int64_t d : *dims) {
    if (!IsKnownDim(d) || __builtin_mul_overflow(elements, d, &elements)) {
      return;
    }
  }
  r.elements = elements;
  const int bits = DataTypeBits(dtype);
  int64_t total_bits = 0;
  if (bits > 0 &&
      !__builtin_mul_overflow(elements, int64_t{bits}, &total_bits) &&
      total_bits <= INT64_MAX - 7) {
    r.bytes = (total_bits + 7) / 8;
  }
}

NodeId OpGraphBuilder::AddNode(std::string_view name, std::string_view op_type,
                               std::string_view domain,
                               std::span<const TensorId> inputs,
                               std::span<const TensorId> outputs,
                               std::span<const TensorId> implicit_inputs) {
  const auto id = static_cast<NodeId>(g_->nodes_.size());
  auto& nt = g_->node_tensors_;
  OpGraph::NodeRecord r{};
  r.name = Append(name);
  r.op_type = Intern(op_type);
  r.domain = Intern(domain);
  r.in_begin = static_cast<uint32_t>(nt.size());
  r.in_count = static_cast<uint32_t>(inputs.size());
  r.implicit_count = static_cast<uint32_t>(implicit_inputs.size());
  nt.insert(nt.end(), inputs.begin(), inputs.end());
  nt.insert(nt.end(), implicit_inputs.begin(), implicit_inputs.end());
  r.out_begin = static_cast<uint32_t>(nt.size());
  r.out_count = static_cast<uint32_t>(outputs.size());
  nt.insert(nt.end(), outputs.begin(), outputs.end());
  r.sub_begin = static_cast<uint32_t>(g_->node_subgraphs_.size());
  r.attr_begin = static_cast<uint32_t>(g_->attrs_.size());
  for (const TensorId t : outputs) {
    if (t == kNoTensor) continue;
    NodeId& producer = g_->tensors_[t].producer;
    const TensorKind kind = g_->tensors_[t].kind;
    if (producer != kNoNode || kind == TensorKind::kInitializer ||
        kind == TensorKind::kInput || kind == TensorKind::kOuterScope) {
      double_producers_.emplace_back(t, id);
    }
    producer = id;
  }
  g_->nodes_.push_back(r);
  return id;
}

OpGraph::AttrRecord& OpGraphBuilder::PushAttr(std::string_view attr,
                                              AttrType type) {
  ++g_->nodes_.back().attr_count;
  return g_->attrs_.emplace_back(OpGraph::AttrRecord{.name = Intern(attr),
                                                     .type = type,
                                                     .begin = 0,
                                                     .count = 0,
                                                     .i = 0,
                                                     .f = 0});
}

void OpGraphBuilder::AddInt(std::string_view attr, int64_t v) {
  PushAttr(attr, AttrType::kInt).i = v;
}

void OpGraphBuilder::AddFloat(std::string_view attr, double v) {
  PushAttr(attr, AttrType::kFloat).f = v;
}

void OpGraphBuilder::AddString(std::string_view attr, std::string_view v) {
  const uint32_t id = Intern(v);
  PushAttr(attr, AttrType::kString).begin = id;
}

void OpGraphBuilder::AddInts(std::string_view attr,
                             std::span<const int64_t> v) {
  auto& a = PushAttr(attr, AttrType::kInts);
  a.begin = static_cast<uint32_t>(g_->attr_ints_.size());
  a.count = static_cast<uint32_t>(v.size());
  g_->attr_ints_.insert(g_->attr_ints_.end(), v.begin(), v.end());
}

void OpGraphBuilder::AddFloats(std::string_view attr,
                               std::span<const float> v) {
  auto& a = PushAttr(attr, AttrType::kFloats);
  a.begin = static_cast<uint32_t>(g_->attr_floats_.size());
  a.count = static_cast<uint32_t>(v.size());
  g_->attr_floats_.insert(g_->attr_floats_.end(), v.begin(), v.end());
}

void OpGraphBuilder::AddStrings(std::string_view attr,
                                std::span<const std::string> v) {
  std::vector<uint32_t> ids;
  for (const std::string& s : v) ids.push_back(Intern(s));
  auto& a = PushAttr(attr, AttrType::kStrings);
  a.begin = static_cast<uint32_t>(g_->attr_strings_.size());
  a.count = static_cast<uint32_t>(ids.size());
  g_->attr_strings_.insert(g_->attr_strings_.end(), ids.begin(), ids.end());
}

void OpGraphBuilder::AddSubgraph(std::unique_ptr<OpGraph> subgraph) {
  g_->node_subgraphs_.push_back(static_cast<uint32_t>(g_->subgraphs_.size()));
  g_->subgraphs_.push_back(std::move(subgraph));
  ++g_->nodes_.back().sub_count;
}

void OpGraphBuilder::MarkInput(TensorId t) { g_->inputs_.push_back(t); }
void OpGraphBuilder::MarkOutput(TensorId t) { g_->outputs_.push_back(t); }

Status OpGraphBuilder::CheckProducers() const {
  const OpGraph& g = *g_;
  const std::string where = "graph '" + std::string(g.name()) + "': ";
  if (!double_producers_.empty()) {
    const auto [t, n] = double_producers_.front();
    return BadInput(where + "tensor '" + std::string(g.tensor(t).name) +
                    "' is defined twice (again as an output of node " +
                    DescribeNode(g, n) + ")");
  }
  for (NodeId n = 0; n < g.nodes_.size(); ++n) {
    const NodeView v = g.node(n);
    for (const TensorId t : v.inputs) {
      if (t == kNoTensor) continue;
      const TensorView tv = g.tensor(t);
      if (tv.kind == TensorKind::kActivation && tv.producer == kNoNode) {
        return BadInput(where + "node " + DescribeNode(g, n) +
                        " consumes tensor '" + std::string(tv.name) +
                        "', which no node produces and which is neither a "
                        "graph input nor an initializer");
      }
    }
  }
  for (const TensorId t : g.outputs_) {
    const TensorView tv = g.tensor(t);
    if (tv.kind == TensorKind::kActivation && tv.producer == kNoNode) {
      return BadInput(where + "graph output '" + std::string(tv.name) +
                      "' is never produced");
    }
  }
  return {};
}

void OpGraphBuilder::BuildConsumersAndDag() {
  OpGraph& g = *g_;
  // (tensor, consumer) pairs, each once even if a node reads a tensor twice.
  std::vector<std::pair<TensorId, NodeId>> uses;
  for (NodeId n = 0; n < g.nodes_.size(); ++n) {
    const NodeView v = g.node(n);
    const size_t first = uses.size();
    auto add = [&](TensorId t) {
      if (t != kNoTensor) uses.emplace_back(t, n);
    };
    std::for_each(v.inputs.begin(), v.inputs.end(), add);
    std::for_each(v.implicit_inputs.begin(), v.implicit_inputs.end(), add);
    std::sort(uses.begin() + static_cast<ptrdiff_t>(first), uses.end());
    uses.erase(
        std::unique(uses.begin() + static_cast<ptrdiff_t>(first), uses.end()),
        uses.end());
  }
  g.consumer_offset_.assign(g.tensors_.size() + 1, 0);
  for (const auto& [t, n] : uses) ++g.consumer_offset_[t + 1];
  for (size_t i = 1; i < g.consumer_offset_.size(); ++i) {
    g.consumer_offset_[i] += g.consumer_offset_[i - 1];
  }
  g.consumers_.resize(uses.size());
  std::vector<uint32_t> fill(g.consumer_offset_.begin(),
                             g.consumer_offset_.end() - 1);
  for (const auto& [t, n] : uses) g.consumers_[fill[t]++] = n;

  std::vector<std::pair<uint32_t, uint32_t>> edges;
  std::vector<DagEdge> props;
  for (const auto& [t, n] : uses) {
    const NodeId p = g.tensors_[t].producer;
    if (p == kNoNode) continue;
    edges.emplace_back(p, n);
    props.push_back(DagEdge{t});
  }
  g.dag_ = std::make_unique<Dag>(boost::edges_are_unsorted_multi_pass,
                                 edges.begin(), edges.end(), props.begin(),
                                 static_cast<uint32_t>(g.nodes_.size()));
}

std::string OpGraphBuilder::DescribeCycle(
    const std::vector<uint32_t>& indegree) const {
  // Every node left with indegree > 0 has a predecessor also left; walking
  // predecessors from one of them must revisit a node: that is a cycle.
  const OpGraph& g = *g_;
  const Dag& dag = *g.dag_;
  NodeId start = 0;
  while (indegree[start] == 0) ++start;
  std::vector<int> seen_at(g.nodes_.size(), -1);
  std::vector<NodeId> path;
  NodeId n = start;
  while (seen_at[n] < 0) {
    seen_at[n] = static_cast<int>(path.size());
    path.push_back(n);
    for (auto [it, end] = boost::in_edges(n, dag); it != end; ++it) {
      const auto p = static_cast<NodeId>(boost::source(*it, dag));
      if (indegree[p] > 0) {
        n = p;
        break;
      }
    }
  }
  std::vector<NodeId> cycle(path.begin() + seen_at[n], path.end());
  std::reverse(cycle.begin(), cycle.end());
  cycle.push_back(cycle.front());
  std::string text;
  constexpr size_t kMaxShown = 8;
  for (size_t i = 0; i < cycle.size(); ++i) {
    if (i == kMaxShown && cycle.size() > kMaxShown + 1) {
      text += " -> ... (" + std::to_string(cycle.size() - 1) + " nodes)";
      break;
    }
    text += (i ? " -> " : "") + DescribeNode(g, cycle[i]);
  }
  return text;
}

Status OpGraphBuilder::ComputeTopologicalOrder() {
  // Kahn's algorithm taking the smallest ready index first, so that a file
  // already in topological order keeps its order.
  OpGraph& g = *g_;
  const Dag& dag = *g.dag_;
  const auto n = static_cast<uint32_t>(g.nodes_.size());
  std::vector<uint32_t> indegree(n, 0);
  for (uint32_t v = 0; v < n; ++v) {
    indegree[v] = static_cast<uint32_t>(boost::in_degree(v, dag));
  }
  std::priority_queue<uint32_t, std::vector<uint32_t>, std::greater<>> ready;
  for (uint32_t v = 0; v < n; ++v) {
    if (indegree[v] == 0) ready.push(v);
  }
  g.topo_.reserve(n);
  while (!ready.empty()) {
    const uint32_t v = ready.top();
    ready.pop();
    g.topo_.push_back(v);
    for (auto [it, end] = boost::out_edges(v, dag); it != end; ++it) {
      const auto w = static_cast<uint32_t>(boost::target(*it, dag));
      if (--indegree[w] == 0) ready.push(w);
    }
  }
  if (g.topo_.size() == n) return {};
  return BadInput("graph '" + std::string(g.name()) +
                  "' has a cycle: " + DescribeCycle(indegree));
}

void OpGraphBuilder::BuildIndices() {
  OpGraph& g = *g_;
  g.tensor_index_.reserve(g.tensors_.size());
  for (TensorId t = 0; t < g.tensors_.size(); ++t) {
    g.tensor_index_.emplace_back(internal::HashName(g.str(g.tensors_[t].name)),
                                 t);
    if (IsWeight(g.tensors_[t].kind)) g.weights_.push_back(t);
  }
  std::sort(g.tensor_index_.begin(), g.tensor_index_.end());
  g.node_index_.reserve(g.nodes_.size());
  for (NodeId n = 0; n < g.nodes_.size(); ++n) {
    g.node_index_.emplace_back(internal::HashName(g.str(g.nodes_[n].name)), n);
  }
  std::sort(g.node_index_.begin(), g.node_index_.end());
}

void OpGraphBuilder::ShrinkToFit() {
  // Growth by doubling leaves up to half of each array unused; the graph is
  // frozen now, so give that back.
  OpGraph& g = *g_;
  g.arena_.shrink_to_fit();
  g.str_offset_.shrink_to_fit();
  g.nodes_.shrink_to_fit();
  g.tensors_.shrink_to_fit();
  g.node_tensors_.shrink_to_fit();
  g.dims_.shrink_to_fit();
  g.attrs_.shrink_to_fit();
  g.attr_ints_.shrink_to_fit();
  g.attr_floats_.shrink_to_fit();
  g.attr_strings_.shrink_to_fit();
  g.weights_.shrink_to_fit();
}

Result<std::unique_ptr<OpGraph>> OpGraphBuilder::Build() && {
  TESSERA_RETURN_IF_ERROR(CheckProducers());
  BuildConsumersAndDag();
  TESSERA_RETURN_IF_ERROR(ComputeTopologicalOrder());
  BuildIndices();
  tensor_ids_.clear();
  interned_.clear();
  ShrinkToFit();
  return std::move(g_);
}

}  // namespace tessera::graph
