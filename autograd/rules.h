// Backward formulas that more than one op uses (internal to autograd/ops_*.cpp): a fused op gives
// its inputs exactly the gradients its unfused ops would, by calling the same code.
#pragma once

#include "autograd/tensor.h"

namespace axiom::rules {

// dL/dw of out = x @ w (+ b) for w [K, N]: x^T @ g, any batch of x [..., K] folded into one GEMM.
//   x [K] or [M, K] or [..., M, K], g [..., N] -> [K, N]
Tensor weight_grad(const Tensor& x, const Tensor& g);

// The gradients of y = layer_norm(x, w, b) from g = dL/dy, with the forward pass's mean and rstd
// (1/std) [...] of x [..., D]: {dx [..., D], dw [D], db [D]} where needed (core::layer_norm_param_grads:
// the sums over the rows, without temporaries).
Grads layer_norm_grads(const core::Tensor& x, const core::Tensor& w, const core::Tensor& mean, const core::Tensor& rstd,
                       const core::Tensor& g, const Needs& needs);

}  // namespace axiom::rules
