// Telling a model where things are: position embeddings and shifts.
#pragma once

#include "layers.h"

namespace axiom::nn {

// Additively factorized position embeddings (Ho et al., 2019): one learned table per axis,
// table_k [d_k, D]; the embedding of position (i1, ..., in) is table_1[i1] + ... + table_n[in].
// For a 28 x 28 image that is 56 vectors instead of 784.
class FactorizedPositionEmbedding : public Module {
 public:
  FactorizedPositionEmbedding(const Shape& sizes, int64_t features, Generator& gen, double init_std = 0.02);
  Tensor embeddings() const;              // [d1, ..., dn, D]
  Tensor forward(const Tensor& x) const;  // x [B, d1, ..., dn, D] + embeddings (broadcast over B)
  Tensor operator()(const Tensor& x) const { return forward(x); }

  std::vector<Tensor> tables;  // "axis_1", "axis_2", ...: [d_k, D]
  Shape sizes;
};

// The fixed sinusoidal encoding of "Attention is all you need": [length, features] with
//   PE[t, 2i] = sin(t / 10000^(2i / D)),  PE[t, 2i + 1] = cos(t / 10000^(2i / D)).
Tensor sinusoidal_encoding(int64_t length, int64_t features, Dtype dtype = Dtype::float32);

// Moves a tensor one step along an axis (zeros in, the last slice out): what makes a masked,
// inclusive attention strictly causal. On [B, H, W, D]: shift_right moves along W, shift_down along H.
// Any other axis: shift(x, axis, 1) (autograd/ops.h).
inline Tensor shift_right(const Tensor& x) { return shift(x, -2, 1); }
inline Tensor shift_down(const Tensor& x) { return shift(x, -3, 1); }

}  // namespace axiom::nn
