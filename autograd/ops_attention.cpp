// Fused multi-head attention along one axis and its backward rule. The op function that checks
// and sizes is core/ops_attention.cpp; the kernels are core/cpu/attention.cpp and
// core/cuda/attention.cu; the layer that uses it is nn/attention.cpp.
#include "autograd/ops.h"
#include "core/error.h"
#include "core/ops.h"

namespace axiom {

// out = softmax(Q K^T / sqrt(Dh)) V per line and head, Q, K, V the three thirds of qkv [..., 3D].
//   dL/dqkv [..., 3D]: one fused kernel from the saved softmax weights (core::attention_backward):
//   dV = P^T dO, dS = P * (dO V^T - rowsum(P * dO V^T)) / sqrt(Dh), dQ = dS K, dK = dS^T Q
Tensor attention(const Tensor& qkv, int64_t axis, int64_t heads, bool causal) {
  core::AttentionResult r = core::attention(qkv.data(), axis, heads, causal);
  return record("attention", {qkv}, r.output,
                [qkv = qkv.data(), probs = r.probs, axis, heads](const core::Tensor& g, const Needs&) {
                  return Grads{core::attention_backward(qkv, probs, g, axis, heads)};
                });
}

Tensor attention_step(const Tensor& q, const Tensor& keys_t, const Tensor& values, double scale) {
  if (grad_enabled() && (q.requires_grad() || keys_t.requires_grad() || values.requires_grad())) {
    throw Error("attention_step", "has no backward rule: call it under NoGrad (for training, use attention)");
  }
  return Tensor(core::attention_step(q.data(), keys_t.data(), values.data(), scale));
}

}  // namespace axiom
