// The matrix products (matmul, linear) and their backward rules. The op functions are
// core/ops_matmul.cpp; the kernels core/cpu/matmul.cpp and core/cuda/matmul.cpp.
#include "autograd/ops.h"
#include "core/ops.h"

namespace axiom {

namespace {

core::Tensor transposed(const core::Tensor& m) { return m.transpose(-1, -2); }

// dL/db when b is one [K, N] matrix shared by a batch of a [..., M, K]: the batch folds into the
// rows, one GEMM instead of one per matrix followed by a sum.
//   dB = A^T @ G : [K, B*M] x [B*M, N] -> [K, N]
core::Tensor shared_weight_grad(const core::Tensor& a, const core::Tensor& g) {
  const int64_t k = a.size(-1), n = g.size(-1);
  return core::matmul(transposed(a.reshape({-1, k})), g.reshape({-1, n}));
}
}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  // Vectors become matrices and back, through differentiable views: the rule below sees >= 2-D.
  // (Both at once for [K] @ [K]: [1, K] @ [K, 1] -> [1, 1] -> [].)
  const bool a_vector = a.defined() && a.dim() == 1, b_vector = b.defined() && b.dim() == 1;
  if (a_vector || b_vector) {
    Tensor out = matmul(a_vector ? a.unsqueeze(0) : a, b_vector ? b.unsqueeze(-1) : b);
    if (a_vector) out = out.squeeze(-2);
    if (b_vector) out = out.squeeze(-1);
    return out;
  }
  return record("matmul", {a, b}, core::matmul(a.data(), b.data()),
                [a = a.data(), b = b.data()](const core::Tensor& g, const Needs& needs) {
                  core::Tensor da, db;
                  // dA = G @ B^T : [..., M, N] x [..., N, K] -> [..., M, K]
                  if (needs[0]) da = core::matmul(g, transposed(b));
                  // dB = A^T @ G : [..., K, M] x [..., M, N] -> [..., K, N]  (summed over broadcast batch axes)
                  if (needs[1]) db = (b.dim() == 2 && a.dim() > 2) ? shared_weight_grad(a, g) : core::matmul(transposed(a), g);
                  return Grads{da, db};
                });
}

// out = x @ w + b (core::linear: the bias added inside the product)
//   dx = g @ w^T : [..., N] x [N, K] -> [..., K]
//   dw = x^T @ g : [K, ...] x [..., N] -> [K, N]   (the batch folded into one GEMM)
//   db = g       : summed over every axis but the last by the engine, as for any broadcast input
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  return record("linear", {x, weight, bias}, core::linear(x.data(), weight.data(), bias.data()),
                [x = x.data(), w = weight.data()](const core::Tensor& g, const Needs& needs) {
                  core::Tensor dx, dw;
                  if (needs[0]) dx = core::matmul(g, transposed(w));
                  if (needs[1] && x.dim() == 1) dw = core::matmul(x.unsqueeze(1), g.unsqueeze(0));  // [K, 1] x [1, N]
                  if (needs[1] && x.dim() == 2) dw = core::matmul(transposed(x), g);
                  if (needs[1] && x.dim() > 2) dw = shared_weight_grad(x, g);
                  return Grads{dx, dw, needs[2] ? g : core::Tensor()};
                });
}

}  // namespace axiom
