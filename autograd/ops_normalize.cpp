// The normalizing ops and their backward rules: softmax, log-softmax, layer norm (and
// layer_norm_linear) and cross-entropy. The op functions are core/launch_normalize.cpp; the kernels
// core/cpu/normalize.cpp and core/cuda/normalize.cu. Rules that have a well-known closed form use
// it instead of composing smaller ops.
// Fused ops (layer norm, layer_norm_linear, cross-entropy) compute first derivatives with their
// own kernels, and give a graph of the backward pass through their composite definitions.
#include <algorithm>

#include "autograd/bfloat16_products.h"
#include "autograd/ops.h"
#include "autograd/rules.h"
#include "core/checks.h"
#include "core/error.h"
#include "core/factory.h"
#include "core/launch.h"
#include "autograd/internal.h"

namespace axiom {

// dL/dx = y * (g - sum(g * y))             (sum along the softmax axis, kept for broadcasting)
Tensor softmax(const Tensor& x, int64_t axis) {
  return record_keeping_output("softmax", {x}, core::softmax(core_tensor(x), axis),
                               [axis](const Tensor& g, const Tensor& y, const Needs&) {
                                 const Tensor dot = sum(mul(g, y), {axis}, /*keepdim=*/true);
                                 return Grads{mul(y, sub(g, dot))};
                               });
}

// dL/dx = g - exp(y) * sum(g)              (y = log_softmax(x), so exp(y) = softmax(x))
Tensor log_softmax(const Tensor& x, int64_t axis) {
  return record_keeping_output("log_softmax", {x}, core::log_softmax(core_tensor(x), axis),
                               [axis](const Tensor& g, const Tensor& y, const Needs&) {
                                 const Tensor total = sum(g, {axis}, /*keepdim=*/true);
                                 return Grads{sub(g, mul(exp(y), total))};
                               });
}

Tensor categorical(const Tensor& logits, const Tensor& uniforms, double temperature) {
  return Tensor(core::categorical(core_tensor(logits), core_tensor(uniforms), temperature));
}

// y = xhat * w + b with xhat = (x - mean) * rstd, over the last axis D.
//   dL/dx: one fused kernel from the saved mean and rstd (core::layer_norm_backward)
//   dL/dw = sum over rows of g * xhat      : [..., D] -> [D]   (core::layer_norm_param_grads,
//   dL/db = sum over rows of g             : [..., D] -> [D]    no temporaries the size of x)
Grads rules::layer_norm_grads(const core::Tensor& x, const core::Tensor& w, const core::Tensor& mean,
                              const core::Tensor& rstd, const core::Tensor& g, const Needs& needs) {
  Grads grads(3);
  if (needs[0]) grads[0] = Tensor(core::layer_norm_backward(x, w, mean, rstd, g));
  if (needs[1] || needs[2]) {  // sums over the rows of g * xhat and g, xhat = (x - mean) * rstd
    const core::LayerNormParamGrads params = core::layer_norm_param_grads(x, mean, rstd, g);
    if (needs[1]) grads[1] = Tensor(params.weight);
    if (needs[2]) grads[2] = Tensor(params.bias);
  }
  return grads;
}

namespace {
// Layer norm in smaller ops, what the fused kernels compute (the variance divides by D):
//   (x - mean) / sqrt(var + eps) * w + b
Tensor layer_norm_composite(const Tensor& x, const Tensor& w, const Tensor& b, double eps) {
  const Tensor centered = sub(x, mean(x, {-1}, /*keepdim=*/true));
  Tensor y = mul(centered, rsqrt(add(mean(mul(centered, centered), {-1}, /*keepdim=*/true), eps)));
  if (w.defined()) y = mul(y, w);
  if (b.defined()) y = add(y, b);
  return y;
}
}  // namespace

Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
  const core::Tensor w = data_or_undefined(weight);
  core::LayerNormResult r = core::layer_norm(core_tensor(x), w, data_or_undefined(bias), eps);
  return record_fused(
      "layer_norm", {x, weight, bias}, r.output,
      [x = core_tensor(x), w, mean = r.mean, rstd = r.rstd](const Tensor& g, const Needs& needs) {
        return rules::layer_norm_grads(x, w, mean, rstd, core_tensor(g), needs);
      },
      [eps](const std::vector<Tensor>& in) { return layer_norm_composite(in[0], in[1], in[2], eps); });
}

namespace {
// What layer_norm_linear computes, in smaller ops (differentiated for a graph of its backward pass).
Tensor layer_norm_linear_composite(const std::vector<Tensor>& in, double eps) {
  const Tensor y = layer_norm_composite(in[0], in[1], in[2], eps);
  return in[4].defined() ? linear(y, in[3], in[4]) : matmul(y, in[3]);
}

// layer_norm_linear with bfloat16 operands rounded once (autograd/bfloat16_products.h): the layer
// norm writes y16 (y rounded) directly, and w16 and (for the weight's gradient) y16 are kept for the
// backward pass, so y is not recomputed there.
Tensor layer_norm_linear_bfloat16(const Tensor& x, const Tensor& norm_weight, const Tensor& norm_bias, double eps,
                                  const Tensor& weight, const Tensor& bias) {
  bfloat16_products::LayerNormProduct kept;
  core::Tensor out = bfloat16_products::layer_norm_product(
      core_tensor(x), data_or_undefined(norm_weight), data_or_undefined(norm_bias), eps, core_tensor(weight),
      data_or_undefined(bias), Dtype::float32, weight.requires_grad(), kept);
  return record_fused(
      "layer_norm_linear", {x, norm_weight, norm_bias, weight, bias}, std::move(out),
      [kept](const Tensor& g, const Needs& needs) {
        return bfloat16_products::layer_norm_product_grads(kept, core_tensor(g), needs);
      },
      [eps](const std::vector<Tensor>& in) { return layer_norm_linear_composite(in, eps); });
}
}  // namespace

// out = y @ weight + bias with y = layer_norm(x, norm_weight, norm_bias); x, mean and rstd are kept,
// and y is recomputed in backward (the same kernel on the same x: the same bits):
//   dweight = y^T @ g          : [D, ...] x [..., N] -> [D, N]
//   dbias   = g                : summed over the rows by the engine
//   dy      = g @ weight^T     : [..., N] x [N, D] -> [..., D], then layer_norm's own rule to x, norm_weight, norm_bias
// Under MatmulPrecision::bfloat16, a large product keeps y and weight rounded instead (above).
Tensor layer_norm_linear(const Tensor& x, const Tensor& norm_weight, const Tensor& norm_bias, double eps,
                         const Tensor& weight, const Tensor& bias) {
  if (bfloat16_products::wanted(core_tensor(x), core_tensor(weight))) {  // (y has x's shape)
    return layer_norm_linear_bfloat16(x, norm_weight, norm_bias, eps, weight, bias);
  }
  const core::Tensor nw = data_or_undefined(norm_weight), nb = data_or_undefined(norm_bias);
  core::LayerNormResult r = core::layer_norm(core_tensor(x), nw, nb, eps);
  core::Tensor out = bias.defined() ? core::linear(r.output, core_tensor(weight), core_tensor(bias))
                                    : core::matmul(r.output, core_tensor(weight));
  r.output = core::Tensor();  // y is not kept
  return record_fused(
      "layer_norm_linear", {x, norm_weight, norm_bias, weight, bias}, std::move(out),
      [x = core_tensor(x), nw, nb, eps, w = core_tensor(weight), mean = r.mean, rstd = r.rstd](const Tensor& g,
                                                                                               const Needs& needs) {
        Grads grads(5);
        if (needs[3]) grads[3] = rules::weight_grad(Tensor(core::layer_norm(x, nw, nb, eps).output), g);
        if (needs[4]) grads[4] = g;
        if (needs[0] || needs[1] || needs[2]) {
          const core::Tensor dy = core::matmul(core_tensor(g), w.transpose(0, 1));
          const Grads norm = rules::layer_norm_grads(x, nw, mean, rstd, dy, {needs[0], needs[1], needs[2]});
          std::copy(norm.begin(), norm.end(), grads.begin());
        }
        return grads;
      },
      [eps](const std::vector<Tensor>& in) { return layer_norm_linear_composite(in, eps); });
}

namespace {
// Cross-entropy in smaller ops, what core::cross_entropy computes, for logits x [..., C]:
//   loss_i = -(1 - s) log p[target_i] - s / C sum_c log p_c,  p = softmax(x)
Tensor cross_entropy_composite(const Tensor& x, const Tensor& targets, const CrossEntropyOptions& options) {
  const double s = options.label_smoothing, classes = static_cast<double>(x.size(-1));
  const Tensor log_p = log_softmax(x, -1);
  const Tensor picked = gather(log_p, -1, targets.unsqueeze(-1)).squeeze(-1);
  Tensor losses = neg(mul(picked, 1 - s));
  if (s != 0) losses = sub(losses, mul(sum(log_p, {-1}), s / classes));
  if (options.reduction == Reduction::sum) return sum(losses);
  if (options.reduction == Reduction::mean) return div(sum(losses), static_cast<double>(losses.numel()));
  return losses;
}
}  // namespace

// With p = softmax(logits), q = (1 - s) onehot(target) + s / C (s the label smoothing), fused in
// core::cross_entropy (no log-probabilities kept; the backward recomputes p from the saved lse):
//   loss_i = -sum_c q_c log p_c
//   dL/dlogits = (p - q) * g_i             (g_i = g / rows for the mean)   : [..., C]
Tensor cross_entropy(const Tensor& logits, const Tensor& targets, const CrossEntropyOptions& options) {
  const double s = options.label_smoothing;
  const core::Tensor x = core_tensor(logits), t = core_tensor(targets);
  const core::CrossEntropyResult forward = core::cross_entropy(x, t, s);
  core::Tensor loss = forward.losses;
  const double rows = static_cast<double>(loss.numel());
  if (options.reduction == Reduction::sum) loss = core::sum(loss);
  if (options.reduction == Reduction::mean) loss = core::div(core::sum(loss), rows);
  return record_fused(
      "cross_entropy", {logits}, loss,
      [x, t, lse = forward.lse, s, rows, reduction = options.reduction](const Tensor& g, const Needs&) {
        core::Tensor per_row = core_tensor(g);  // d loss / d loss_i: [...] for none, a scalar otherwise
        if (reduction == Reduction::mean) per_row = core::div(per_row, rows);
        if (reduction != Reduction::none) per_row = per_row.expand(t.shape());
        return Grads{Tensor(core::cross_entropy_backward(x, t, lse, per_row, s))};
      },
      [targets, options](const std::vector<Tensor>& in) { return cross_entropy_composite(in[0], targets, options); });
}

}  // namespace axiom
