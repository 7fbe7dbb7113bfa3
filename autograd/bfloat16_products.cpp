// Products of operands rounded once to bfloat16, for the fused layers (see bfloat16_products.h).
#include "autograd/bfloat16_products.h"

#include <algorithm>

#include "autograd/rules.h"

#include "core/gemm_shape.h"
#include "core/launch.h"
#include "core/matmul_precision.h"

namespace axiom::bfloat16_products {

bool wanted(const core::Tensor& x, const core::Tensor& w) {
  if (core::matmul_precision() != core::MatmulPrecision::bfloat16) return false;
  const DeviceType device = x.device().type;
  if (x.dtype() != Dtype::float32 || w.dtype() != Dtype::float32 ||
      (device != DeviceType::cpu && device != DeviceType::meta))
    return false;
  if (x.dim() == 0 || w.dim() != 2) return false;
  // each matrix of x's batch, as core::matmul plans it (core/matrix_layout.h: a batch of large
  // matrices becomes one product; a batch of small ones stays small products, in float32)
  const int64_t rows = x.dim() == 1 ? 1 : x.size(-2);
  return rows * x.size(-1) * w.size(1) > core::kSmallGemm;
}

core::Tensor rounded(const core::Tensor& x) { return x.to(Dtype::bfloat16); }

core::RoundedWithSums rounded_gradient(const core::Tensor& g, bool with_bias) {
  if (with_bias) return core::to_bfloat16_with_sums(g);
  return {rounded(g), core::Tensor()};
}

core::Tensor forward(const core::Tensor& x16, const core::Tensor& w16, const core::Tensor& bias) {
  return bias.defined() ? core::linear(x16, w16, bias) : core::matmul(x16, w16);
}

core::Tensor input_grad(const core::Tensor& g16, const core::Tensor& w16) {
  return core::matmul(g16, w16.transpose(0, 1));
}

core::Tensor weight_grad(const core::Tensor& x16, const core::Tensor& g16) {
  const int64_t k = x16.size(-1), n = g16.size(-1);
  return core::matmul(x16.reshape({-1, k}).transpose(0, 1), g16.reshape({-1, n}));
}

core::Tensor layer_norm_product(const core::Tensor& x, const core::Tensor& norm_weight, const core::Tensor& norm_bias,
                                double eps, const core::Tensor& weight, const core::Tensor& bias, Dtype output_dtype,
                                bool keep_y16, LayerNormProduct& kept) {
  const core::LayerNormResult r = core::layer_norm(x, norm_weight, norm_bias, eps, Dtype::bfloat16);
  kept = {x, norm_weight, r.mean, r.rstd, keep_y16 ? r.output : core::Tensor(), rounded(weight)};
  if (output_dtype == Dtype::float32) return forward(r.output, kept.w16, bias);
  if (bias.defined()) return core::linear(r.output, kept.w16, bias, output_dtype);
  return core::matmul(r.output, kept.w16).to(output_dtype);
}

Grads layer_norm_product_grads(const LayerNormProduct& kept, const core::Tensor& g, const Needs& needs) {
  return layer_norm_product_grads(kept, rounded_gradient(g, needs[4]), needs);
}

Grads layer_norm_product_grads(const LayerNormProduct& kept, const core::RoundedWithSums& g, const Needs& needs) {
  Grads grads(5);
  if (needs[3]) grads[3] = Tensor(weight_grad(kept.y16, g.rounded));
  if (needs[4]) grads[4] = Tensor(g.sums);
  if (needs[0] || needs[1] || needs[2]) {
    const core::Tensor dy = input_grad(g.rounded, kept.w16);
    const Grads norm =
        rules::layer_norm_grads(kept.x, kept.norm_weight, kept.mean, kept.rstd, dy, {needs[0], needs[1], needs[2]});
    std::copy(norm.begin(), norm.end(), grads.begin());
  }
  return grads;
}

}  // namespace axiom::bfloat16_products
