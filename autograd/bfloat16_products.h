// The fused layers' products under MatmulPrecision::bfloat16 (core/matmul_precision.h), with each
// operand rounded to bfloat16 once (core/dtype.h: Dtype::bfloat16): the layer's input where it is
// made, the weight once a call, and the gradient once for both backward products. The rounded
// copies are kept for the backward pass instead of recomputing the float32 values they come from.
// They give the same bits as core::matmul, which rounds both operands at every product (and still
// does for every other product), in fewer passes over memory, for contiguous inputs (a layer norm
// or activation reads a strided one as a contiguous copy, which may change the last bits).
//
//   if (bfloat16_products::wanted(y, w)) {
//     const core::Tensor y16 = bfloat16_products::rounded(y), w16 = bfloat16_products::rounded(w);
//     out = bfloat16_products::forward(y16, w16, bias);   // and keep y16, w16 for the backward pass
//   }
#pragma once

#include "autograd/tensor.h"
#include "core/launch.h"
#include "core/tensor.h"

namespace axiom::bfloat16_products {

// Whether x [..., M, K] @ w [K, N] goes this way: under MatmulPrecision::bfloat16, for float32
// operands on the CPU (or the shape-only meta device) whose matrices [M, K] @ [K, N] are more than
// 64^3 multiply-adds: the products core::matmul would round (core/cpu/onednn_gemm.h:
// takes_bfloat16_operands), which it folds into one product over the batch.
bool wanted(const core::Tensor& x, const core::Tensor& w);

// x rounded to the nearest bfloat16, elementwise: the same shape, contiguous.
core::Tensor rounded(const core::Tensor& x);

// The gradient g [..., N] of a layer's output rounded, and with `with_bias` the bias's gradient
// ([N]: g summed over every axis but the last) from the same pass over g.
core::RoundedWithSums rounded_gradient(const core::Tensor& g, bool with_bias);

// x16 [..., K] @ w16 [K, N] + bias [N] (or an undefined bias: none) -> [..., N], in float32.
core::Tensor forward(const core::Tensor& x16, const core::Tensor& w16, const core::Tensor& bias);

// dL/dx = g16 @ w16^T : [..., N] x [N, K] -> [..., K], in float32.
core::Tensor input_grad(const core::Tensor& g16, const core::Tensor& w16);

// dL/dw = x16^T @ g16 : [K, rows] x [rows, N] -> [K, N], in float32 (every axis but the last of
// x16 [..., K] and g16 [..., N] folded into rows: one product for the whole batch).
core::Tensor weight_grad(const core::Tensor& x16, const core::Tensor& g16);

// --- a layer norm and its product, rounded (layer_norm_linear and layer_norm_attention) --------

// What the backward pass of layer_norm_product keeps: x [..., D] with its mean and rstd, the layer
// norm's weight [D] (or undefined), y16 (the layer norm's output rounded, [..., D]; undefined when
// the weight needs no gradient) and w16 (the weight rounded, [D, N]).
struct LayerNormProduct {
  core::Tensor x, norm_weight, mean, rstd, y16, w16;
};

// out = layer_norm(x, norm_weight, norm_bias, eps) @ weight + bias (bias [N] or undefined) ->
// [..., N], with y and weight rounded once: in float32, or with output_dtype bfloat16 each sum
// rounded as it is written (the next product's operand). What the backward pass needs goes into
// `kept`; keep_y16 when the weight needs a gradient.
core::Tensor layer_norm_product(const core::Tensor& x, const core::Tensor& norm_weight, const core::Tensor& norm_bias,
                                double eps, const core::Tensor& weight, const core::Tensor& bias, Dtype output_dtype,
                                bool keep_y16, LayerNormProduct& kept);

// The gradients of x, norm_weight, norm_bias, weight and bias (those `needs` asks for) from the
// output's gradient g [..., N] (float32): g rounded once for both products, then
//   dweight = y16^T @ g16,  dbias = g summed over the rows,  dy = g16 @ w16^T -> layer_norm's rule.
Grads layer_norm_product_grads(const LayerNormProduct& kept, const core::Tensor& g, const Needs& needs);
// The same from g already rounded, with its sums over the rows (g.sums: the bias's gradient).
Grads layer_norm_product_grads(const LayerNormProduct& kept, const core::RoundedWithSums& g, const Needs& needs);

}  // namespace axiom::bfloat16_products
