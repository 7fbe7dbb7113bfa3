#include "nn/attention.h"

#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/factory.h"
#include "core/ops.h"

namespace axiom::nn {

AxialAttention::AxialAttention(int64_t features, int64_t heads, int64_t axis, core::Generator& gen,
                               AttentionOptions options)
    : features(features), heads(heads), axis(axis), masked(options.masked) {
  if (heads <= 0 || features <= 0 || features % heads != 0) {
    throw Error("AxialAttention", "features (", features, ") must be a positive multiple of heads (", heads, ")");
  }
  if (axis == 0) throw Error("AxialAttention", "axis 0 is the batch axis; attend along a spatial axis (1, 2, ... or -2)");
  qkv = register_module("qkv", std::make_shared<Dense>(features, 3 * features, gen));
  out = register_module("out", std::make_shared<Dense>(features, features, gen, DenseOptions{.init_scale = options.output_init_scale}));
}

core::Tensor causal_mask(int64_t length, Device device) {
  const core::Tensor positions = core::arange(length);
  return core::gt(positions.unsqueeze(0), positions.unsqueeze(1)).to(device);  // [i, j] = j > i
}

Tensor AxialAttention::forward(const Tensor& x) const {
  const int64_t rank = x.dim();
  const int64_t a = axis < 0 ? axis + rank : axis;  // -2 -> rank - 2, the last spatial axis
  if (rank < 3 || a < 1 || a > rank - 2 || x.size(-1) != features) {
    throw Error("AxialAttention", "input ", x.shape(), " must be [B, d1, ..., dn, ", features, "] with axis ", axis,
                " one of its spatial axes");
  }
  const int64_t head_features = features / heads, length = x.size(a);

  // q, k, v: [..., D] -> [..., H, Dh] -> [batch axes..., H, L, Dh]   (views)
  Shape split = x.shape();
  split.back() = heads;
  split.push_back(head_features);
  std::vector<int64_t> order;
  for (int64_t i = 0; i < rank - 1; ++i) {
    if (i != a) order.push_back(i);
  }
  order.push_back(rank - 1);  // heads
  order.push_back(a);         // the attended axis
  order.push_back(rank);      // head features
  const Tensor qkv_all = qkv->forward(x);  // [..., 3D]
  auto part = [&](int64_t i) { return qkv_all.narrow(-1, i * features, features).reshape(split).permute(order); };
  const Tensor q = part(0), k = part(1), v = part(2);

  // scores = q k^T / sqrt(Dh) : [..., L, Dh] x [..., Dh, L] -> [..., L, L]
  Tensor scores = mul(matmul(q, k.transpose(-1, -2)), 1.0 / std::sqrt(static_cast<double>(head_features)));
  if (masked) scores = masked_fill(scores, Tensor(causal_mask(length, x.device())), -std::numeric_limits<double>::infinity());
  // mixed = softmax(scores) v : [..., L, L] x [..., L, Dh] -> [..., L, Dh]
  const Tensor mixed = matmul(softmax(scores, -1), v);

  // back to [..., L at its axis, ..., H, Dh], then [..., D]
  std::vector<int64_t> inverse(order.size());
  for (size_t i = 0; i < order.size(); ++i) inverse[order[i]] = static_cast<int64_t>(i);
  return out->forward(mixed.permute(inverse).reshape(x.shape()));
}

}  // namespace axiom::nn
