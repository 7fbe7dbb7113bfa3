#include "nn/multi_head_attention.h"

#include <cmath>
#include <limits>

namespace axiom::nn {

MultiHeadAttention::MultiHeadAttention(int64_t features, int64_t heads, Generator& gen) : heads_(heads) {
  for (const char* name : {"query", "key", "value", "out"}) {
    layers_.push_back(register_module(name, std::make_shared<Dense>(features, features, gen)));
  }
}

std::pair<Tensor, Tensor> MultiHeadAttention::forward(const Tensor& x, const Tensor& memory,
                                                      const Tensor& blocked) const {
  constexpr double kMinusInfinity = -std::numeric_limits<double>::infinity();
  const int64_t batch = x.size(0), features = x.size(2), depth = features / heads_;
  auto split = [&](const Tensor& t) {
    return t.reshape({batch, t.size(1), heads_, depth}).transpose(1, 2);
  };  // [B, h, T, Dh]
  const Tensor q = split(layers_[0]->forward(x)), k = split(layers_[1]->forward(memory)),
               v = split(layers_[2]->forward(memory));
  const Tensor scores =
      mul(matmul(q, k.transpose(-1, -2)), 1 / std::sqrt(static_cast<double>(depth)));  // [B, h, Tq, Tk]
  const Tensor weights = softmax(masked_fill(scores, blocked, kMinusInfinity), -1);
  const Tensor mixed = matmul(weights, v).transpose(1, 2).reshape({batch, x.size(1), features});  // [B, Tq, D]
  return {layers_[3]->forward(mixed), weights};
}

}  // namespace axiom::nn
