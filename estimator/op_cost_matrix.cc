// Matrix work: Gemm, MatMul and its quantized and fused forms, Einsum, Det
// and the attention operators. MACs follow the convention that reproduces
// torchvision's published GMACs: M x N x K per matrix product, times the
// (broadcast) batch; bias adds are flops, not MACs.
#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "estimator/op_cost_internal.h"

namespace tessera::estimator::internal {

using graph::TensorView;

namespace {

// LU factorization of an n x n matrix: n^3 / 3 multiply-adds.
constexpr int64_t kLuMacsDivisor = 3;
// Softmax over attention scores: max, subtract, exp, sum, divide.
constexpr int64_t kSoftmaxFlops = 5;

bool RequireInputs(const Op& op, std::initializer_list<size_t> indices) {
  for (const size_t i : indices) {
    if (!op.has_input(i)) {
      op.Flag(std::string(op.node().op_type) + ": input " + std::to_string(i) +
              " missing: not counted");
      return false;
    }
  }
  return true;
}

// Elements of a numpy-style matmul of `a` by `b`, from the operands:
// broadcast batch x M x N (a 1-D operand has no M or N).
int64_t BroadcastMatMulElements(const Op& op, const TensorView& a,
                                const TensorView& b, bool trans_a,
                                bool trans_b) {
  const int ra = op.Rank(a);
  const int rb = op.Rank(b);
  if (ra < 1 || rb < 1) return 0;
  int64_t elements = 1;
  if (ra > 1) elements = op.Mul(elements, op.Dim(a, trans_a ? -1 : -2));
  if (rb > 1) elements = op.Mul(elements, op.Dim(b, trans_b ? -2 : -1));
  const int batch_rank = std::max(ra, rb) - 2;
  for (int i = 1; i <= batch_rank; ++i) {
    const int64_t da = ra - 2 - i >= 0 ? op.Dim(a, ra - 2 - i) : 1;
    const int64_t db = rb - 2 - i >= 0 ? op.Dim(b, rb - 2 - i) : 1;
    elements = op.Mul(elements, std::max(da, db));
  }
  return elements;
}

// Numpy-style matmul of inputs `ia` by `ib`: MACs = output elements x K,
// i.e. batch x M x N x K. The output count comes from the inferred output
// shape when known (it already holds the broadcast batch), else from the
// operands.
void MatMulMacs(const Op& op, size_t ia, size_t ib, bool trans_a,
                bool trans_b) {
  if (!RequireInputs(op, {ia, ib})) return;
  const TensorView a = op.input(ia);
  const TensorView b = op.input(ib);
  const int ra = op.Rank(a);
  if (ra < 1) return;
  const int64_t k = op.Dim(a, ra == 1 || !trans_a ? -1 : -2);
  const int64_t outputs =
      op.has_output(0) && op.output(0).elements >= 0
          ? op.output(0).elements
          : BroadcastMatMulElements(op, a, b, trans_a, trans_b);
  op.AddMacs(op.Mul(outputs, k));
}

}  // namespace

// Gemm: Y[M, N] = alpha * A'[M, K] * B'[K, N] + beta * C, A' and B' after
// transA/transB. MACs = M * N * K; the C bias adds M * N flops, and alpha or
// beta other than 1 add M * N multiplies each.
void CostGemm(const Op& op) {
  if (!RequireInputs(op, {0, 1})) return;
  const TensorView a = op.input(0);
  const TensorView b = op.input(1);
  const bool trans_a = op.Int("transA", 0) != 0;
  const bool trans_b = op.Int("transB", 0) != 0;
  const int64_t m = op.Dim(a, trans_a ? 1 : 0);
  const int64_t k = op.Dim(a, trans_a ? 0 : 1);
  const int64_t n = op.Dim(b, trans_b ? 0 : 1);
  const int64_t mn = op.Mul(m, n);
  op.AddMacs(op.Mul(mn, k));
  const double alpha = op.graph().GetFloat(op.id(), "alpha").value_or(1.0);
  const double beta = op.graph().GetFloat(op.id(), "beta").value_or(1.0);
  if (alpha != 1.0) op.AddFlops(mn);
  if (op.has_input(2)) op.AddFlops(beta != 1.0 ? op.Mul(mn, 2) : mn);
}

// MatMul: numpy semantics (batched, broadcast, 1-D operands).
void CostMatMul(const Op& op) { MatMulMacs(op, 0, 1, false, false); }

// MatMulInteger(A, B, a_zero_point, b_zero_point): int8 MACs as MatMul.
void CostMatMulInteger(const Op& op) { MatMulMacs(op, 0, 1, false, false); }

// QLinearMatMul(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp): int8
// MACs as MatMul, plus requantizing each output (one flop).
void CostQLinearMatMul(const Op& op) {
  MatMulMacs(op, 0, 3, false, false);
  op.AddFlops(op.OutputElements(0));
}

// com.microsoft FusedMatMul: MatMul with transA/transB and an alpha scale.
void CostFusedMatMul(const Op& op) {
  MatMulMacs(op, 0, 1, op.Int("transA", 0) != 0, op.Int("transB", 0) != 0);
  const double alpha = op.graph().GetFloat(op.id(), "alpha").value_or(1.0);
  if (alpha != 1.0) op.AddFlops(op.OutputElements(0));
}

// Det of [..., M, M]: LU factorization, M^3 / 3 MACs per matrix.
void CostDet(const Op& op) {
  if (!RequireInputs(op, {0})) return;
  const TensorView x = op.input(0);
  const int rank = op.Rank(x);
  if (rank < 2) return;
  const int64_t m = op.Dim(x, -1);
  const int64_t batch =
      op.DimProduct(x, 0) / std::max<int64_t>(op.Mul(m, m), 1);
  op.AddMacs(op.Mul(batch, op.Mul(op.Mul(m, m), m)) / kLuMacsDivisor);
}

namespace {

// Einsum index extents gathered from the operands: one per letter, plus the
// broadcast extents of the "..." dimensions (right-aligned).
struct EinsumIndices {
  std::array<int64_t, 128> letter{};  // 0: letter not used
  std::vector<int64_t> ellipsis;      // innermost last
};

// Records the extents of operand `t` labelled by `term` ("bij", "...ij").
// False if the term does not fit the operand's rank.
bool ReadEinsumTerm(const Op& op, std::string_view term, const TensorView& t,
                    EinsumIndices* indices) {
  const size_t dots = term.find("...");
  const std::string letters = dots == std::string_view::npos
                                  ? std::string(term)
                                  : std::string(term.substr(0, dots)) +
                                        std::string(term.substr(dots + 3));
  const int rank = op.Rank(t);
  if (rank < 0) return true;  // flagged; its letters read as 1 here
  const int count = static_cast<int>(letters.size());
  const int ellipsis = rank - count;
  if (ellipsis < 0 || (dots == std::string_view::npos && ellipsis != 0)) {
    return false;
  }
  const int before =
      dots == std::string_view::npos ? count : static_cast<int>(dots);
  for (int i = 0; i < count; ++i) {
    const unsigned char c = static_cast<unsigned char>(letters[i]);
    if (c >= indices->letter.size() || !std::isalpha(c)) return false;
    const int64_t extent = op.Dim(t, i < before ? i : i + ellipsis);
    indices->letter[c] = std::max(indices->letter[c], extent);
  }
  if (static_cast<int>(indices->ellipsis.size()) < ellipsis) {
    indices->ellipsis.insert(indices->ellipsis.begin(),
                             ellipsis - indices->ellipsis.size(), 1);
  }
  for (int i = 0; i < ellipsis; ++i) {
    int64_t& e = indices->ellipsis[indices->ellipsis.size() - ellipsis + i];
    e = std::max(e, op.Dim(t, before + i));
  }
  return true;
}

}  // namespace

// Einsum: every point of the full index space (all distinct indices, plus
// the broadcast "..." dims) multiplies one element of each operand and
// accumulates: MACs = (operands - 1) x product of the index extents, which
// for two operands is the plain product ("bij,bjk->bik": b*i*j*k). With
// one operand (transpose, trace, sum) there are no MACs: one flop per point.
void CostEinsum(const Op& op) {
  std::string equation(op.String("equation", ""));
  std::erase(equation, ' ');
  const std::string lhs = equation.substr(0, equation.find("->"));
  std::vector<std::string_view> terms;
  for (size_t begin = 0;;) {
    const size_t comma = lhs.find(',', begin);
    terms.push_back(std::string_view(lhs).substr(begin, comma - begin));
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  EinsumIndices indices;
  bool ok = !lhs.empty() && terms.size() == op.node().inputs.size();
  for (size_t i = 0; ok && i < terms.size(); ++i) {
    ok = op.has_input(i) && ReadEinsumTerm(op, terms[i], op.input(i), &indices);
  }
  if (!ok) {
    op.Flag("Einsum equation '" + equation +
            "' does not match its operands: memory-bound cost");
    op.AddFlops(op.OutputElements(0));
    return;
  }
  int64_t points = 1;
  for (const int64_t e : indices.letter)
    points = e > 0 ? op.Mul(points, e) : points;
  for (const int64_t e : indices.ellipsis) points = op.Mul(points, e);
  if (terms.size() == 1) {
    op.AddFlops(points);
    return;
  }
  op.AddMacs(op.Mul(points, static_cast<int64_t>(terms.size()) - 1));
}

namespace {

// Sizes that fix the cost of softmax(Q K^T) V.
struct AttentionSizes {
  int64_t batch = 1, heads = 1, seq_q = 1, seq_kv = 1;
  int64_t q_elements = 0;  // B x S x hidden of Q
};

// Adds QK^T (q_elements x S_kv MACs), AV (output elements x S_kv MACs) and
// the softmax over B x heads x S x S_kv scores.
void AddAttentionCore(const Op& op, const AttentionSizes& s) {
  op.AddMacs(op.Mul(s.q_elements, s.seq_kv));
  op.AddMacs(op.Mul(op.OutputElements(0), s.seq_kv));
  const int64_t scores =
      op.Mul(op.Mul(s.batch, s.heads), op.Mul(s.seq_q, s.seq_kv));
  op.AddFlops(op.Mul(scores, kSoftmaxFlops));
}

// Key/value length of a K input: [B, S_kv, hidden], [B, heads, S_kv, head]
// or packed KV [B, S_kv, heads, 2, head]; plus a past [B, heads, P, head].
int64_t KeyLength(const Op& op, size_t key, size_t past_key, int64_t seq_q) {
  int64_t length = seq_q;
  if (op.has_input(key)) {
    const TensorView k = op.input(key);
    length = op.Dim(k, op.Rank(k) == 4 ? 2 : 1);
  }
  if (op.has_input(past_key))
    length = op.Add(length, op.Dim(op.input(past_key), 2));
  return length;
}

}  // namespace

// com.microsoft Attention(input [B, S, Hin], weights [Hin, Hq + Hk + Hv],
// bias, mask, past [2, B, heads, P, head]): the QKV projection
// (B x S x Hin x (Hq + Hk + Hv) MACs) plus softmax(Q K^T) V over S + P keys.
void CostFusedAttention(const Op& op) {
  if (!RequireInputs(op, {0, 1})) return;
  const TensorView x = op.input(0);
  const TensorView w = op.input(1);
  AttentionSizes s;
  s.batch = op.Dim(x, 0);
  s.seq_q = op.Dim(x, 1);
  s.heads = op.Int("num_heads", 1);
  const int64_t tokens = op.Mul(s.batch, s.seq_q);
  const int64_t qkv = op.Dim(w, 1);
  op.AddMacs(op.Mul(op.Mul(tokens, op.Dim(x, 2)), qkv));
  if (op.has_input(2)) op.AddFlops(op.Mul(tokens, qkv));
  const auto sizes = op.Ints("qkv_hidden_sizes");
  const int64_t hidden_q = sizes.size() == 3 ? sizes[0] : qkv / 3;
  s.q_elements = op.Mul(tokens, hidden_q);
  s.seq_kv = s.seq_q;
  if (op.has_input(4)) s.seq_kv = op.Add(s.seq_kv, op.Dim(op.input(4), 3));
  AddAttentionCore(op, s);
}

// Attention on projected Q, K, V: ai.onnx Attention (Q [B, heads, S, head]
// or [B, S, hidden]; past_key input 4) and com.microsoft MultiHeadAttention
// (query [B, S, hidden] or packed QKV [B, S, heads, 3, head]; past_key
// input 6). MACs = S_kv x (Q elements + output elements).
void CostScaledDotProductAttention(const Op& op) {
  if (!RequireInputs(op, {0})) return;
  const bool microsoft = op.node().domain == "com.microsoft";
  const TensorView q = op.input(0);
  const int rank = op.Rank(q);
  AttentionSizes s;
  s.batch = op.Dim(q, 0);
  s.seq_q = op.Dim(q, rank == 4 ? 2 : 1);
  s.heads =
      rank == 4 ? op.Dim(q, 1) : op.Int("num_heads", op.Int("q_num_heads", 1));
  s.q_elements = op.Elements(q) / (rank == 5 ? 3 : 1);
  s.seq_kv = KeyLength(op, 1, microsoft ? 6 : 4, s.seq_q);
  AddAttentionCore(op, s);
}

}  // namespace tessera::estimator::internal
