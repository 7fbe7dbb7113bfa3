#include "nn/lstm.h"

#include <cmath>

#include "autograd/factory.h"
#include "core/error.h"
#include "nn/recurrent.h"

namespace axiom::nn {

LSTM::LSTM(int64_t input_features, int64_t hidden_features, Generator& gen) : hidden_features(hidden_features) {
  input = register_module("input", gate_projection("LSTM", input_features, hidden_features, 4, /*bias=*/true, gen));
  hidden = register_module("hidden", gate_projection("LSTM", hidden_features, hidden_features, 4, /*bias=*/false, gen));
}

LSTMState LSTM::initial_state(int64_t batch, Dtype dtype, Device device) const {
  return {axiom::zeros({batch, hidden_features}, dtype, device), axiom::zeros({batch, hidden_features}, dtype, device)};
}

LSTMState LSTM::cell(const Tensor& gates_from_input, const LSTMState& state) const {
  const Tensor gates = add(gates_from_input, hidden->forward(state.h));  // [B, 4H]
  const int64_t n = hidden_features;
  const Tensor i = sigmoid(gates.narrow(-1, 0, n)), f = sigmoid(gates.narrow(-1, n, n));
  const Tensor g = tanh(gates.narrow(-1, 2 * n, n)), o = sigmoid(gates.narrow(-1, 3 * n, n));
  const Tensor c = add(mul(f, state.c), mul(i, g));
  return {mul(o, tanh(c)), c};
}

LSTMState LSTM::step(const Tensor& x_t, const LSTMState& state) const {
  if (x_t.dim() != 2 || x_t.size(1) != input->in_features()) {
    throw Error("LSTM", "a step takes x_t [B, ", input->in_features(), "], got ", x_t.shape());
  }
  const LSTMState s = state.h.defined() ? state : initial_state(x_t.size(0), x_t.dtype(), x_t.device());
  return cell(input->forward(x_t), s);
}

std::pair<Tensor, LSTMState> LSTM::forward(const Tensor& x, LSTMState state) const {
  if (x.dim() != 3 || x.size(2) != input->in_features()) {
    throw Error("LSTM", "expected x [B, T, ", input->in_features(), "], got ", x.shape());
  }
  if (!state.h.defined()) state = initial_state(x.size(0), x.dtype(), x.device());
  const Tensor projected = input->forward(x);  // [B, T, 4H], all steps at once
  std::vector<Tensor> outputs;
  for (int64_t t = 0; t < x.size(1); ++t) {
    state = cell(projected.select(1, t), state);
    outputs.push_back(state.h);
  }
  const Tensor h =
      outputs.empty() ? axiom::zeros({x.size(0), 0, hidden_features}, x.dtype(), x.device()) : stack(outputs, 1);
  return {h, state};
}

}  // namespace axiom::nn
