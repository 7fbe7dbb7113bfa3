// Products of operands rounded once to bfloat16, for the fused layers (see bfloat16_products.h).
#include "autograd/bfloat16_products.h"

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

}  // namespace axiom::bfloat16_products
