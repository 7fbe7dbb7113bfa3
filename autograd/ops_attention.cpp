// Multi-head attention along one axis and its backward rule. The op function that checks and
// sizes is core/ops_attention.cpp; the kernels are core/cpu/attention.cpp and
// core/cuda/attention.cu; the masks are core/attention_mask.h; the layer that uses it is
// nn/attention.cpp.
#include <cmath>
#include <limits>

#include "autograd/ops.h"
#include "core/error.h"
#include "core/factory.h"
#include "core/ops.h"
#include "core/shape.h"

namespace axiom {

namespace {

// Part i of qkv (0: queries, 1: keys, 2: values) split into heads: [..., H, L, Dh].
Tensor heads_of(const Tensor& qkv, int64_t axis, int64_t heads, int64_t part) {
  const int64_t d = qkv.size(-1) / 3;
  const Tensor lines = qkv.movedim(core::normalize_axis("attention", axis, qkv.dim()), -2);  // [..., L, 3D]
  Shape shape = lines.shape();
  shape.back() = heads;
  shape.push_back(d / heads);
  return lines.narrow(-1, part * d, d).reshape(shape).movedim(-2, -3);
}

// uint8 [L, L]: 1 where query i may not see key j.
Tensor hidden_keys(const core::AttentionMask& mask, int64_t length, Device device) {
  std::vector<uint8_t> hidden = mask.table(length);
  for (uint8_t& h : hidden) h = !h;
  return Tensor(core::from_vector(hidden, {length, length}, device));
}

// A bias must add to the scores [..., H, L, L] without changing their shape.
void check_bias(const Tensor& bias, const Shape& scores) {
  bool fits = bias.dim() <= static_cast<int64_t>(scores.size());
  for (int64_t i = 1; fits && i <= bias.dim(); ++i) fits = bias.size(-i) == 1 || bias.size(-i) == scores.end()[-i];
  if (!fits) throw Error("attention", "a bias ", bias.shape(), " does not broadcast to the scores ", scores);
}

// The same attention in smaller differentiable ops (the fallback, and what a graph of the
// backward pass goes through). qkv [..., L (at axis), ..., 3D] -> [..., D]:
//   Q, K, V = the thirds of qkv, each split into heads: [..., H, L, Dh]
//   out = softmax(Q K^T / sqrt(Dh) + bias, hidden keys at -inf) V, heads joined again
Tensor attention_composite(const Tensor& qkv, int64_t axis, int64_t heads, const core::AttentionMask& mask, const Tensor& bias) {
  const int64_t d = qkv.size(-1) / 3, dh = d / heads;
  const int a = core::normalize_axis("attention", axis, qkv.dim());
  const int64_t length = qkv.size(a);
  Tensor scores = mul(matmul(heads_of(qkv, a, heads, 0), heads_of(qkv, a, heads, 1).transpose(-1, -2)),
                      1 / std::sqrt(static_cast<double>(dh)));  // [..., H, L, L]
  if (bias.defined()) {
    check_bias(bias, scores.shape());
    scores = add(scores, bias);
  }
  if (mask.kind() != core::AttentionMask::Kind::all) {
    scores = masked_fill(scores, hidden_keys(mask, length, qkv.device()), -std::numeric_limits<double>::infinity());
  }
  Tensor mixed = matmul(softmax(scores, -1), heads_of(qkv, a, heads, 2)).movedim(-3, -2);  // [..., L, H, Dh]
  Shape joined = mixed.shape();
  joined.pop_back();
  joined.back() = d;
  return mixed.reshape(joined).movedim(-2, a);
}

}  // namespace

Tensor attention_queries(const Tensor& qkv, int64_t axis, int64_t heads) {
  core::check_attention(qkv.data(), axis, heads, core::AttentionMask::all());
  return heads_of(qkv, axis, heads, 0);
}

// out = softmax(Q K^T / sqrt(Dh), masked) V per line and head, Q, K, V the three thirds of qkv [..., 3D].
//   dL/dqkv [..., 3D]: one fused kernel from the saved softmax weights (core::attention_backward):
//   dV = P^T dO, dS = P * (dO V^T - rowsum(P * dO V^T)) / sqrt(Dh), dQ = dS K, dK = dS^T Q
// Fused: a graph of the backward pass goes through attention_composite instead.
Tensor attention(const Tensor& qkv, int64_t axis, int64_t heads, const core::AttentionMask& mask, const Tensor& bias) {
  if (bias.defined() || !core::attention_fused(qkv.device(), mask)) {
    core::check_attention(qkv.data(), axis, heads, mask);
    return attention_composite(qkv, axis, heads, mask, bias);
  }
  core::AttentionResult r = core::attention(qkv.data(), axis, heads, mask);
  return record_fused(
      "attention", {qkv}, r.output,
      [qkv = qkv.data(), probs = r.probs, axis, heads, mask](const Tensor& g, const Needs&) {
        return Grads{Tensor(core::attention_backward(qkv, probs, g.data(), axis, heads, mask))};
      },
      [axis, heads, mask](const std::vector<Tensor>& in) { return attention_composite(in[0], axis, heads, mask, Tensor()); });
}

Tensor attention_step(const Tensor& q, const Tensor& keys_t, const Tensor& values, double scale, const std::vector<uint8_t>& hidden) {
  if (grad_enabled() && (q.requires_grad() || keys_t.requires_grad() || values.requires_grad())) {
    throw Error("attention_step", "has no backward rule: call it under NoGrad (for training, use attention)");
  }
  return Tensor(core::attention_step(q.data(), keys_t.data(), values.data(), scale, hidden));
}

}  // namespace axiom
