// Recurrent layers: LSTM, GRU, RNN. Per direction, per time step and per
// batch row, the gates take W x (input) and R h (hidden): MACs = directions
// x seq x batch x gates x hidden x (input + hidden). sequence_lens is
// ignored (every sequence runs the full length: an upper bound).
#include <cstdint>
#include <string>

#include "estimator/op_cost_internal.h"

namespace tessera::estimator::internal {

using graph::TensorView;

namespace {

// Gates per layer kind.
constexpr int64_t kLstmGates = 4;  // input, output, forget, cell
constexpr int64_t kGruGates = 3;   // update, reset, hidden
constexpr int64_t kRnnGates = 1;

// Point-wise flops per hidden unit per step, besides the MACs:
// LSTM: Wx + Rh per gate (4), gate activations (4), c = f*c + i*g (3),
// tanh(c) (1), h = o * tanh(c) (1) = 13.
constexpr int64_t kLstmPointwiseFlops = 13;
// GRU: Wx + Rh per gate (3), activations (3), r * (Rh) (1),
// h = (1 - z) * n + z * h (4) = 11.
constexpr int64_t kGruPointwiseFlops = 11;
// RNN: Wx + Rh (1), activation (1) = 2.
constexpr int64_t kRnnPointwiseFlops = 2;
// LSTM peepholes (input P): a multiply-add on each of 3 gates.
constexpr int64_t kPeepholeFlops = 6;

// The recurrent cost of `gates` gates with `pointwise` flops per unit.
// Inputs: X [seq, batch, input] (layout 0) or [batch, seq, input]
// (layout 1), W [dirs, gates * hidden, input], R, B (Wb and Rb: 2 adds per
// gate unit), ..., P (LSTM input 7, peepholes).
void Recurrent(const Op& op, int64_t gates, int64_t pointwise) {
  if (!op.has_input(0) || !op.has_input(1)) {
    op.Flag(std::string(op.node().op_type) +
            ": X or W input missing: not counted");
    return;
  }
  const TensorView x = op.input(0);
  const bool batch_first = op.Int("layout", 0) != 0;
  const int64_t seq = op.Dim(x, batch_first ? 1 : 0);
  const int64_t batch = op.Dim(x, batch_first ? 0 : 1);
  const int64_t directions =
      op.String("direction", "forward") == "bidirectional" ? 2 : 1;
  int64_t hidden = op.Int("hidden_size", -1);
  if (hidden < 0) {
    hidden = op.has_input(2) ? op.Dim(op.input(2), 2)
                             : op.Dim(op.input(1), 1) / gates;
  }
  const int64_t rows = op.Mul(op.Mul(directions, seq), batch);
  const int64_t units = op.Mul(rows, hidden);
  const int64_t fan_in = op.Add(op.Dim(x, 2), hidden);
  op.AddMacs(op.Mul(op.Mul(units, gates), fan_in));
  int64_t per_unit = pointwise;
  if (op.has_input(3)) per_unit += 2 * gates;
  if (gates == kLstmGates && op.has_input(7)) per_unit += kPeepholeFlops;
  op.AddFlops(op.Mul(units, per_unit));
}

}  // namespace

void CostLstm(const Op& op) { Recurrent(op, kLstmGates, kLstmPointwiseFlops); }

void CostGru(const Op& op) { Recurrent(op, kGruGates, kGruPointwiseFlops); }

void CostRnn(const Op& op) { Recurrent(op, kRnnGates, kRnnPointwiseFlops); }

}  // namespace tessera::estimator::internal
