// The matrix products (matmul, linear, activation_linear, layer_norm_feedforward) and their backward rules. The op
// functions are core/launch_matmul.cpp; the kernels core/cpu/matmul.cpp and core/cuda/matmul.cpp.
#include <algorithm>

#include "autograd/bfloat16_products.h"
#include "autograd/ops.h"
#include "autograd/rules.h"
#include "core/backend.h"
#include "core/error.h"
#include "core/factory.h"
#include "core/gemm_shape.h"
#include "core/launch.h"
#include "autograd/internal.h"

namespace axiom {

namespace {

Tensor transposed(const Tensor& m) { return m.transpose(-1, -2); }

// dL/db when b is one [K, N] matrix shared by a batch of a [..., M, K]: the batch folds into the
// rows, one GEMM instead of one per matrix followed by a sum.
//   dB = A^T @ G : [K, B*M] x [B*M, N] -> [K, N]
Tensor shared_weight_grad(const Tensor& a, const Tensor& g) {
  const int64_t k = a.size(-1), n = g.size(-1);
  return matmul(transposed(a.reshape({-1, k})), g.reshape({-1, n}));
}

core::UnaryOp unary_op_of(Activation activation) {
  switch (activation) {
    case Activation::gelu: return core::UnaryOp::gelu;
    case Activation::gelu_tanh: return core::UnaryOp::gelu_tanh;
    case Activation::relu: return core::UnaryOp::relu;
  }
  throw Error("activation", "unknown kind ", static_cast<int>(activation));
}

core::Tensor activated(Activation activation, const core::Tensor& h) {
  switch (activation) {
    case Activation::gelu: return core::gelu(h);
    case Activation::gelu_tanh: return core::gelu_tanh(h);
    case Activation::relu: return core::relu(h);
  }
  throw Error("activation", "unknown kind ", static_cast<int>(activation));
}
}  // namespace

Tensor rules::weight_grad(const Tensor& x, const Tensor& g) {
  if (x.dim() == 1) return matmul(x.unsqueeze(1), g.unsqueeze(0));  // [K, 1] x [1, N]
  if (x.dim() == 2) return matmul(transposed(x), g);                // [K, M] x [M, N]
  return shared_weight_grad(x, g);
}

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
  return record("matmul", {a, b}, core::matmul(core_tensor(a), core_tensor(b)),
                [a, b](const Tensor& g, const Needs& needs) {
                  Tensor da, db;
                  // dA = G @ B^T : [..., M, N] x [..., N, K] -> [..., M, K]
                  if (needs[0]) da = matmul(g, transposed(b));
                  // dB = A^T @ G : [..., K, M] x [..., M, N] -> [..., K, N]  (summed over broadcast batch axes)
                  if (needs[1])
                    db = (b.dim() == 2 && a.dim() > 2) ? shared_weight_grad(a, g) : matmul(transposed(a), g);
                  return Grads{da, db};
                });
}

namespace {
// out = x @ w + b (core::linear: the bias added inside the product)
//   dx = g @ w^T : [..., N] x [N, K] -> [..., K]
//   dw = x^T @ g : [K, ...] x [..., N] -> [K, N]   (the batch folded into one GEMM)
//   db = g       : summed over every axis but the last by the engine, as for any broadcast input
Tensor linear_with_rules(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  return record("linear", {x, weight, bias}, core::linear(core_tensor(x), core_tensor(weight), core_tensor(bias)),
                [x, w = weight](const Tensor& g, const Needs& needs) {
                  Tensor dx, dw;
                  if (needs[0]) dx = matmul(g, transposed(w));
                  if (needs[1]) dw = rules::weight_grad(x, g);
                  return Grads{dx, dw, needs[2] ? g : Tensor()};
                });
}

// linear with bfloat16 operands rounded once a pass (autograd/bfloat16_products.h): w16 is kept for
// the backward pass, x is kept as linear_with_rules keeps it (x16 would be memory more: x is often
// kept by the op that made it) and rounded again there, and g is rounded once, its sum (the bias's
// gradient) from the same pass. A graph of its backward pass goes through linear_with_rules.
Tensor linear_bfloat16(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  const core::Tensor w16 = bfloat16_products::rounded(core_tensor(weight));
  core::Tensor out = bfloat16_products::forward(bfloat16_products::rounded(core_tensor(x)), w16, core_tensor(bias));
  return record_fused(
      "linear", {x, weight, bias}, std::move(out),
      [x = core_tensor(x), w16](const Tensor& g, const Needs& needs) {
        const auto [g16, bias_grad] = bfloat16_products::rounded_gradient(core_tensor(g), needs[2]);
        Grads grads(3);
        if (needs[0]) grads[0] = Tensor(bfloat16_products::input_grad(g16, w16));
        if (needs[1]) grads[1] = Tensor(bfloat16_products::weight_grad(bfloat16_products::rounded(x), g16));
        if (needs[2]) grads[2] = Tensor(bias_grad);
        return grads;
      },
      [](const std::vector<Tensor>& in) { return linear_with_rules(in[0], in[1], in[2]); });
}
}  // namespace

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  if (!bias.defined()) return matmul(x, weight);
  if (bfloat16_products::wanted(core_tensor(x), core_tensor(weight))) return linear_bfloat16(x, weight, bias);
  return linear_with_rules(x, weight, bias);
}

Tensor activate(Activation activation, const Tensor& x) {
  switch (activation) {
    case Activation::gelu: return gelu(x);
    case Activation::gelu_tanh: return gelu_tanh(x);
    case Activation::relu: return relu(x);
  }
  throw Error("activation", "unknown kind ", static_cast<int>(activation));
}

// out = a @ w + b with a = act(h); only h is kept, and a is recomputed in backward:
//   dw = a^T @ g             : [K, ...] x [..., N] -> [K, N]
//   dh = (g @ w^T) * act'(h) : [..., N] x [N, K] -> [..., K], times the slope elementwise
//   db = g                   : summed over every axis but the last by the engine
// The same kernels on the same values as linear(activate(h)), so the same bits. Fused: a graph of
// the backward pass goes through the composite linear(activate(h), w, b) instead.
namespace {
// What activation_linear computes, in smaller ops (differentiated for a graph of its backward pass).
Tensor activation_linear_composite(Activation activation, const std::vector<Tensor>& in) {
  const Tensor a = activate(activation, in[0]);
  return in[2].defined() ? linear(a, in[1], in[2]) : matmul(a, in[1]);
}

// activation_linear with bfloat16 operands rounded once (autograd/bfloat16_products.h): the
// activation writes a16 (a rounded) directly, w16 is kept for the backward pass, and a16 comes out of
// the backward's pass over h again.
Tensor activation_linear_bfloat16(Activation activation, const Tensor& h, const Tensor& weight, const Tensor& bias) {
  const core::Tensor w16 = bfloat16_products::rounded(core_tensor(weight));
  const core::Tensor a16 = core::activation_to_bfloat16(unary_op_of(activation), core_tensor(h));
  core::Tensor out = bfloat16_products::forward(a16, w16, bias.defined() ? core_tensor(bias) : core::Tensor());
  return record_fused(
      "activation_linear", {h, weight, bias}, std::move(out),
      [activation, h = core_tensor(h), w16](const Tensor& g, const Needs& needs) {
        Grads grads(3);
        const auto [g16, bias_grad] = bfloat16_products::rounded_gradient(core_tensor(g), needs[2]);
        const core::UnaryOp op = unary_op_of(activation);
        core::Tensor a16;
        if (needs[0]) {
          const core::Tensor dh = bfloat16_products::input_grad(g16, w16);
          a16 = core::activation_backward(op, h, dh, Dtype::bfloat16);  // dh *= act'(h) in place
          grads[0] = Tensor(dh);
        } else {
          a16 = core::activation_to_bfloat16(op, h);
        }
        if (needs[1]) grads[1] = Tensor(bfloat16_products::weight_grad(a16, g16));
        if (needs[2]) grads[2] = Tensor(bias_grad);
        return grads;
      },
      [activation](const std::vector<Tensor>& in) { return activation_linear_composite(activation, in); });
}
}  // namespace

Tensor activation_linear(Activation activation, const Tensor& h, const Tensor& weight, const Tensor& bias) {
  if (bfloat16_products::wanted(core_tensor(h), core_tensor(weight))) {  // (a has h's shape)
    return activation_linear_bfloat16(activation, h, weight, bias);
  }
  const core::Tensor a = activated(activation, core_tensor(h));  // freed when this function returns
  core::Tensor out =
      bias.defined() ? core::linear(a, core_tensor(weight), core_tensor(bias)) : core::matmul(a, core_tensor(weight));
  return record_fused(
      "activation_linear", {h, weight, bias}, std::move(out),
      [activation, h, w = weight](const Tensor& g, const Needs& needs) {
        Grads grads(3);
        if (needs[0]) {
          // dh = (g @ w^T) * act'(h), multiplied in place; act(h), for dw = act(h)^T @ g,
          // comes out of the same pass over h (core::activation_backward)
          const core::Tensor dh = core::matmul(core_tensor(g), core_tensor(w).transpose(0, 1));
          const core::Tensor a = core::activation_backward(unary_op_of(activation), core_tensor(h), dh);
          grads[0] = Tensor(dh);
          if (needs[1]) grads[1] = rules::weight_grad(Tensor(a), g);
        } else if (needs[1]) {
          grads[1] = rules::weight_grad(Tensor(activated(activation, core_tensor(h))), g);
        }
        if (needs[2]) grads[2] = g;
        return grads;
      },
      [activation](const std::vector<Tensor>& in) { return activation_linear_composite(activation, in); });
}

// layer_norm_feedforward under bfloat16 products: h = layer_norm(x) @ up_weight + up_bias written
// in bfloat16 (with a bias, the sums rounded as oneDNN writes them; without, rounded after), a =
// activation(h) rounded, out = a @ down_weight + down_bias. h16, the rounded weights and what the
// layer norm's rule needs are kept; a16 is recomputed in backward:
//   g16, ddown_bias = g rounded, g summed over the rows   : [..., N], [N]
//   dA = g16 @ down16^T                                   : [..., N] x [N, D'] -> [..., D'] float32
//   dh16, dup_bias, a16 = (dA * act'(h16)) rounded, that summed over the rows, act(h16) rounded: one pass
//   ddown_weight = a16^T @ g16                            : [D', rows] x [rows, N] -> [D', N]
//   then layer_norm_linear's bfloat16 rule from dh16 (layer_norm_product_grads)
// The gradients are those of the two ops with h rounded once in between, that rounding passed over
// (its derivative taken as 1). A graph of the backward pass goes through the two ops.
namespace {
// Whether both products round (bfloat16_products::wanted): x [..., D] @ up_weight [D, D'] and h
// [..., D'] @ down_weight [D', N], whose matrices have x's rows.
bool feedforward_rounded(const Tensor& x, const Tensor& up_weight, const Tensor& down_weight) {
  const core::Tensor &up = core_tensor(up_weight), &down = core_tensor(down_weight);
  if (!bfloat16_products::wanted(core_tensor(x), up)) return false;
  if (down.dim() != 2 || down.size(0) != up.size(1) || down.dtype() != Dtype::float32 || down.device() != x.device())
    return false;  // (the two ops say what is wrong)
  const int64_t rows = x.dim() == 1 ? 1 : x.size(-2);
  return rows * down.size(0) * down.size(1) > core::kSmallGemm;
}

Tensor layer_norm_feedforward_bfloat16(const Tensor& x, const Tensor& norm_weight, const Tensor& norm_bias, double eps,
                                       const Tensor& up_weight, const Tensor& up_bias, Activation activation,
                                       const Tensor& down_weight, const Tensor& down_bias) {
  const core::UnaryOp op = unary_op_of(activation);  // (an unknown kind refused before any work)
  bfloat16_products::LayerNormProduct kept;
  const core::Tensor h16 = bfloat16_products::layer_norm_product(
      core_tensor(x), data_or_undefined(norm_weight), data_or_undefined(norm_bias), eps, core_tensor(up_weight),
      data_or_undefined(up_bias), Dtype::bfloat16, up_weight.requires_grad(), kept);
  const core::Tensor down16 = bfloat16_products::rounded(core_tensor(down_weight));
  core::Tensor out =
      bfloat16_products::forward(core::activation_to_bfloat16(op, h16), down16, data_or_undefined(down_bias));
  return record_fused(
      "layer_norm_feedforward", {x, norm_weight, norm_bias, up_weight, up_bias, down_weight, down_bias}, std::move(out),
      [kept, h16, down16, op](const Tensor& g, const Needs& needs) {
        Grads grads(7);
        const core::RoundedWithSums g16 = bfloat16_products::rounded_gradient(core_tensor(g), needs[6]);
        const Needs up_needs(needs.begin(), needs.begin() + 5);  // x, the norm's and the up projection's
        core::Tensor a16;
        if (std::find(up_needs.begin(), up_needs.end(), true) != up_needs.end()) {
          const core::ActivationGradRounded dh =
              core::activation_backward_to_bfloat16(op, h16, bfloat16_products::input_grad(g16.rounded, down16));
          a16 = dh.activated;
          const Grads up = bfloat16_products::layer_norm_product_grads(kept, dh.grad, up_needs);
          std::copy(up.begin(), up.end(), grads.begin());
        } else if (needs[5]) {
          a16 = core::activation_to_bfloat16(op, h16);
        }
        if (needs[5]) grads[5] = Tensor(bfloat16_products::weight_grad(a16, g16.rounded));
        if (needs[6]) grads[6] = Tensor(g16.sums);
        return grads;
      },
      [eps, activation](const std::vector<Tensor>& in) {
        return activation_linear(activation, layer_norm_linear(in[0], in[1], in[2], eps, in[3], in[4]), in[5], in[6]);
      });
}
}  // namespace

Tensor layer_norm_feedforward(const Tensor& x, const Tensor& norm_weight, const Tensor& norm_bias, double eps,
                              const Tensor& up_weight, const Tensor& up_bias, Activation activation,
                              const Tensor& down_weight, const Tensor& down_bias) {
  if (feedforward_rounded(x, up_weight, down_weight)) {
    return layer_norm_feedforward_bfloat16(x, norm_weight, norm_bias, eps, up_weight, up_bias, activation, down_weight,
                                           down_bias);
  }
  const Tensor h = layer_norm_linear(x, norm_weight, norm_bias, eps, up_weight, up_bias);
  return activation_linear(activation, h, down_weight, down_bias);
}

}  // namespace axiom
