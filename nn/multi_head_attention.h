// Multi-head attention of a sequence of queries over a memory (Vaswani et al. 2017, "Attention Is
// All You Need", arXiv:1706.03762): self-attention when the memory is the queries' own sequence,
// cross-attention when it is another (an encoder's output). For each of `heads` heads of depth
// Dh = D / heads:
//   q = x Wq, k = memory Wk, v = memory Wv              split into heads: [B, heads, T, Dh]
//   weights = softmax(q k^T / sqrt(Dh), blocked -> -inf)  [B, heads, Tq, Tk]
//   out     = (weights v, heads joined) Wo               [B, Tq, D]
// The translators (models/translators.h) build their encoder and decoder from it. The Axial
// Transformer's attention along one axis of an image is nn::AxialAttention (attention.h).
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "layers.h"

namespace axiom::nn {

// Multi-head attention of queries [B, Tq, D] over keys and values [B, Tk, D]. `blocked` is uint8,
// 1 where a query may not look, and broadcasts to [B, heads, Tq, Tk]. Returns the mixed values
// [B, Tq, D] and the weights [B, heads, Tq, Tk].
class MultiHeadAttention : public Module {
 public:
  MultiHeadAttention(int64_t features, int64_t heads, Generator& gen);
  std::pair<Tensor, Tensor> forward(const Tensor& x, const Tensor& memory, const Tensor& blocked) const;

 private:
  int64_t heads_;
  std::vector<std::shared_ptr<Dense>> layers_;  // query, key, value, out
};

}  // namespace axiom::nn
