// A single-layer GRU (Cho et al., 2014), batch-first: each step's output is a mix, gate by gate, of
// the previous output and a new candidate, so some gradient always flows straight back through time.
// With x_t [B, I] and the previous h [B, H] (PyTorch's form, which keeps a bias inside the reset):
//   [r_x, z_x, n_x] = x_t W_x + b_x                            [B, 3H]
//   [r_h, z_h, n_h] = h W_h + b_h                              [B, 3H]
//   r = sigmoid(r_x + r_h)          reset: how much of h the candidate sees
//   z = sigmoid(z_x + z_h)          update: how much of h is kept
//   n = tanh(n_x + r * n_h)         the candidate
//   h' = (1 - z) * n + z * h
#pragma once

#include <utility>

#include "layers.h"

namespace axiom::nn {

class GRU : public Module {
 public:
  GRU(int64_t input_features, int64_t hidden_features, Generator& gen);

  Tensor initial_state(int64_t batch, Dtype dtype = Dtype::float32,
                       Device device = Device::cpu()) const;  // zeros [B, H]
  // One time step: x_t [B, input], h [B, hidden] (undefined: zeros) -> the next h [B, hidden].
  // Sampling and decoding run the model this way, one step at a time.
  Tensor step(const Tensor& x_t, const Tensor& h) const;
  // A whole sequence: x [B, T, input] -> (h for every step [B, T, hidden], the final h [B, hidden]).
  // The input projection of all steps is one matrix product.
  std::pair<Tensor, Tensor> forward(const Tensor& x, Tensor h = {}) const;

  std::shared_ptr<Dense> input;   // W_x and b_x: input -> 3 * hidden
  std::shared_ptr<Dense> hidden;  // W_h and b_h: hidden -> 3 * hidden
  int64_t hidden_features;

 private:
  // gates_from_input [B, 3H] (x_t W_x + b_x), h [B, H] -> h' [B, H]
  Tensor cell(const Tensor& gates_from_input, const Tensor& h) const;
};

}  // namespace axiom::nn
