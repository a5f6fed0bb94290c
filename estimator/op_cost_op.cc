// Op: the shape and attribute reads every cost formula uses, with unknowns
// read as 1 and flagged, and arithmetic that saturates instead of wrapping.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include "estimator/op_cost_internal.h"

namespace tessera::estimator::internal {

using graph::TensorView;

namespace {

// More reasons than this make a note unreadable; the cost stays flagged.
constexpr int kMaxNoteReasons = 4;

}  // namespace

int64_t SaturatingMul(int64_t a, int64_t b, bool* overflow) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r) || r < 0) {
    *overflow = true;
    return std::numeric_limits<int64_t>::max();
  }
  return r;
}

int64_t SaturatingAdd(int64_t a, int64_t b, bool* overflow) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r) || r < 0) {
    *overflow = true;
    return std::numeric_limits<int64_t>::max();
  }
  return r;
}

void Flag(OpCost& cost, std::string_view why, bool first) {
  cost.exact = false;
  if (cost.note.find(why) != std::string::npos) return;
  if (first) {
    cost.note.insert(0, std::string(why) + (cost.note.empty() ? "" : "; "));
    return;
  }
  const auto reasons = std::count(cost.note.begin(), cost.note.end(), ';');
  if (!cost.note.empty() && reasons + 1 >= kMaxNoteReasons) {
    if (!cost.note.ends_with("; ...")) cost.note += "; ...";
    return;
  }
  if (!cost.note.empty()) cost.note += "; ";
  cost.note += why;
}

Op::Op(const graph::OpGraph& g, graph::NodeId id, OpCost* cost,
       int64_t per_element)
    : g_(g),
      id_(id),
      node_(g.node(id)),
      cost_(cost),
      per_element_(per_element) {}

bool Op::has_input(size_t i) const {
  return i < node_.inputs.size() && node_.inputs[i] != graph::kNoTensor;
}

bool Op::has_output(size_t i) const {
  return i < node_.outputs.size() && node_.outputs[i] != graph::kNoTensor;
}

TensorView Op::input(size_t i) const { return g_.tensor(node_.inputs[i]); }

TensorView Op::output(size_t i) const { return g_.tensor(node_.outputs[i]); }

void Op::FlagUnknown(const TensorView& t) const {
  Flag("shape of '" + std::string(t.name) +
       "' unknown: unknown extents counted as 1");
}

int Op::Rank(const TensorView& t) const {
  if (t.dims) return static_cast<int>(t.dims->size());
  Flag("rank of '" + std::string(t.name) + "' unknown: not counted");
  return -1;
}

int64_t Op::Dim(const TensorView& t, int axis) const {
  const int rank = Rank(t);
  if (rank < 0) return 1;
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank || !graph::IsKnownDim((*t.dims)[axis])) {
    FlagUnknown(t);
    return 1;
  }
  return (*t.dims)[axis];
}

int64_t Op::DimProduct(const TensorView& t, int from) const {
  int64_t product = 1;
  const int rank = Rank(t);
  for (int axis = std::max(from, 0); axis < rank; ++axis) {
    product = Mul(product, Dim(t, axis));
  }
  return product;
}

int64_t Op::Elements(const TensorView& t) const {
  if (t.elements >= 0) return t.elements;
  if (!t.dims) {
    Rank(t);  // flags
    return 0;
  }
  return DimProduct(t, 0);
}

int64_t Op::InputElements(size_t i) const {
  return has_input(i) ? Elements(input(i)) : 0;
}

int64_t Op::OutputElements(size_t i) const {
  return has_output(i) ? Elements(output(i)) : 0;
}

int64_t Op::Int(std::string_view attr, int64_t fallback) const {
  return g_.GetInt(id_, attr).value_or(fallback);
}

std::span<const int64_t> Op::Ints(std::string_view attr) const {
  return g_.GetInts(id_, attr);
}

std::string_view Op::String(std::string_view attr,
                            std::string_view fallback) const {
  return g_.GetString(id_, attr).value_or(fallback);
}

int64_t Op::Mul(int64_t a, int64_t b) const {
  bool overflow = false;
  const int64_t r = SaturatingMul(std::max<int64_t>(a, 0),
                                  std::max<int64_t>(b, 0), &overflow);
  if (overflow) Flag("overflow: count saturated at INT64_MAX");
  return r;
}

int64_t Op::Add(int64_t a, int64_t b) const {
  bool overflow = false;
  const int64_t r = SaturatingAdd(std::max<int64_t>(a, 0),
                                  std::max<int64_t>(b, 0), &overflow);
  if (overflow) Flag("overflow: count saturated at INT64_MAX");
  return r;
}

void Op::Flag(std::string_view why, bool first) const {
  internal::Flag(*cost_, why, first);
}

void Op::AddMacs(int64_t macs) const {
  cost_->macs = Add(cost_->macs, macs);
  cost_->flops = Add(cost_->flops, Mul(macs, 2));
}

void Op::AddFlops(int64_t flops) const {
  cost_->flops = Add(cost_->flops, flops);
}

}  // namespace tessera::estimator::internal
