// Fused multi-head attention along one axis and its backward rule. The op function that checks
// and sizes is core/ops_attention.cpp; the kernels are core/cpu/attention.cpp and
// core/cuda/attention.cu; the layer that uses it is nn/attention.cpp.
#include <cmath>
#include <limits>

#include "autograd/ops.h"
#include "core/error.h"
#include "core/factory.h"
#include "core/ops.h"
#include "core/shape.h"

namespace axiom {

namespace {
// The same attention in smaller differentiable ops (what a graph of the backward pass goes
// through). qkv [..., L (at axis), ..., 3D] -> [..., D]:
//   Q, K, V = the thirds of qkv, each split into heads: [..., H, L, Dh]
//   out = softmax(Q K^T / sqrt(Dh) (causal: -inf above the diagonal)) V, heads joined again
Tensor attention_composite(const Tensor& qkv, int64_t axis, int64_t heads, bool causal) {
  const int64_t d = qkv.size(-1) / 3, dh = d / heads;
  const int a = core::normalize_axis("attention", axis, qkv.dim());
  const Tensor lines = qkv.movedim(a, -2);  // [..., L, 3D]
  const int64_t length = lines.size(-2);
  auto part = [&](int64_t i) {  // [..., L, D] -> [..., H, L, Dh]
    Shape shape = lines.shape();
    shape.back() = heads;
    shape.push_back(dh);
    return lines.narrow(-1, i * d, d).reshape(shape).movedim(-2, -3);
  };
  Tensor scores = mul(matmul(part(0), part(1).transpose(-1, -2)), 1 / std::sqrt(static_cast<double>(dh)));  // [..., H, L, L]
  if (causal) {
    std::vector<uint8_t> above(static_cast<size_t>(length * length));
    for (int64_t i = 0; i < length; ++i) {
      for (int64_t j = i + 1; j < length; ++j) above[static_cast<size_t>(i * length + j)] = 1;
    }
    const Tensor mask(core::from_vector(above, {length, length}, qkv.device()));
    scores = masked_fill(scores, mask, -std::numeric_limits<double>::infinity());
  }
  Tensor mixed = matmul(softmax(scores, -1), part(2)).movedim(-3, -2);  // [..., L, H, Dh]
  Shape joined = mixed.shape();
  joined.pop_back();
  joined.back() = d;
  return mixed.reshape(joined).movedim(-2, a);
}
}  // namespace

// out = softmax(Q K^T / sqrt(Dh)) V per line and head, Q, K, V the three thirds of qkv [..., 3D].
//   dL/dqkv [..., 3D]: one fused kernel from the saved softmax weights (core::attention_backward):
//   dV = P^T dO, dS = P * (dO V^T - rowsum(P * dO V^T)) / sqrt(Dh), dQ = dS K, dK = dS^T Q
// Fused: a graph of the backward pass goes through attention_composite instead.
Tensor attention(const Tensor& qkv, int64_t axis, int64_t heads, bool causal) {
  core::AttentionResult r = core::attention(qkv.data(), axis, heads, causal);
  return record_fused(
      "attention", {qkv}, r.output,
      [qkv = qkv.data(), probs = r.probs, axis, heads](const Tensor& g, const Needs&) {
        return Grads{Tensor(core::attention_backward(qkv, probs, g.data(), axis, heads))};
      },
      [axis, heads, causal](const std::vector<Tensor>& in) { return attention_composite(in[0], axis, heads, causal); });
}

Tensor attention_step(const Tensor& q, const Tensor& keys_t, const Tensor& values, double scale) {
  if (grad_enabled() && (q.requires_grad() || keys_t.requires_grad() || values.requires_grad())) {
    throw Error("attention_step", "has no backward rule: call it under NoGrad (for training, use attention)");
  }
  return Tensor(core::attention_step(q.data(), keys_t.data(), values.data(), scale));
}

}  // namespace axiom
