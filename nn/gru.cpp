#include "nn/gru.h"

#include <cmath>

#include "autograd/factory.h"
#include "core/error.h"
#include "nn/recurrent.h"

namespace axiom::nn {

GRU::GRU(int64_t input_features, int64_t hidden_features, Generator& gen) : hidden_features(hidden_features) {
  input = register_module("input", gate_projection("GRU", input_features, hidden_features, 3, /*bias=*/true, gen));
  hidden = register_module("hidden", gate_projection("GRU", hidden_features, hidden_features, 3, /*bias=*/true, gen));
}

Tensor GRU::initial_state(int64_t batch, Dtype dtype, Device device) const {
  return axiom::zeros({batch, hidden_features}, dtype, device);
}

Tensor GRU::cell(const Tensor& gates_from_input, const Tensor& h) const {
  const Tensor gates_from_h = hidden->forward(h);  // [B, 3H]
  const int64_t n = hidden_features;
  auto part = [n](const Tensor& gates, int64_t k) { return gates.narrow(-1, k * n, n); };  // [B, H]
  const Tensor reset = sigmoid(add(part(gates_from_input, 0), part(gates_from_h, 0)));
  const Tensor update = sigmoid(add(part(gates_from_input, 1), part(gates_from_h, 1)));
  const Tensor candidate = tanh(add(part(gates_from_input, 2), mul(reset, part(gates_from_h, 2))));
  return add(candidate, mul(update, sub(h, candidate)));  // (1 - z) n + z h
}

Tensor GRU::step(const Tensor& x_t, const Tensor& h) const {
  if (x_t.dim() != 2 || x_t.size(1) != input->in_features()) {
    throw Error("GRU", "a step takes x_t [B, ", input->in_features(), "], got ", x_t.shape());
  }
  const Tensor state = h.defined() ? h : initial_state(x_t.size(0), x_t.dtype(), x_t.device());
  if (state.shape() != Shape{x_t.size(0), hidden_features}) {
    throw Error("GRU", "the state must be h [", x_t.size(0), ", ", hidden_features, "], got ", state.shape());
  }
  return cell(input->forward(x_t), state);
}

std::pair<Tensor, Tensor> GRU::forward(const Tensor& x, Tensor h) const {
  if (x.dim() != 3 || x.size(2) != input->in_features()) {
    throw Error("GRU", "expected x [B, T, ", input->in_features(), "], got ", x.shape());
  }
  if (!h.defined()) h = initial_state(x.size(0), x.dtype(), x.device());
  if (h.shape() != Shape{x.size(0), hidden_features}) {
    throw Error("GRU", "the state must be h [", x.size(0), ", ", hidden_features, "], got ", h.shape());
  }
  const Tensor projected = input->forward(x);  // [B, T, 3H], all steps at once
  std::vector<Tensor> outputs;
  for (int64_t t = 0; t < x.size(1); ++t) {
    h = cell(projected.select(1, t), h);
    outputs.push_back(h);
  }
  const Tensor all =
      outputs.empty() ? axiom::zeros({x.size(0), 0, hidden_features}, x.dtype(), x.device()) : stack(outputs, 1);
  return {all, h};
}

}  // namespace axiom::nn
