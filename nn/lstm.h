// A single-layer LSTM (Hochreiter & Schmidhuber, 1997), batch-first, for the paper's ablation that
// replaces the inner decoder with one LSTM layer. With gates from x_t and the previous h:
//   [i, f, g, o] = x_t W_x + h W_h + b                         [B, 4H]
//   c' = sigmoid(f) * c + sigmoid(i) * tanh(g)
//   h' = sigmoid(o) * tanh(c')
#pragma once

#include <utility>

#include "layers.h"

namespace axiom::nn {

struct LSTMState {
  Tensor h;  // [B, H]
  Tensor c;  // [B, H]
};

class LSTM : public Module {
 public:
  LSTM(int64_t input_features, int64_t hidden_features, Generator& gen);

  LSTMState initial_state(int64_t batch, Dtype dtype = Dtype::float32, Device device = Device::cpu()) const;
  // One time step: x_t [B, input] -> the next state.
  LSTMState step(const Tensor& x_t, const LSTMState& state) const;
  // A whole sequence: x [B, T, input] -> (h for every step [B, T, hidden], the final state).
  // The input projection of all steps is one matrix product.
  std::pair<Tensor, LSTMState> forward(const Tensor& x, LSTMState state = {}) const;

  std::shared_ptr<Dense> input;   // W_x and b: input -> 4 * hidden
  std::shared_ptr<Dense> hidden;  // W_h: hidden -> 4 * hidden, no bias
  int64_t hidden_features;

 private:
  LSTMState cell(const Tensor& gates_from_input, const LSTMState& state) const;
};

}  // namespace axiom::nn
