// Op functions of the normalizing family: softmax, layer norm, cross-entropy, and categorical (a
// value drawn from each row of logits). Kernels: core/cpu/normalize.cpp, core/cuda/normalize.cu;
// attention: core/launch_attention.cpp; matmul and linear: core/launch_matmul.cpp; Adam's step:
// core/launch_optimizer.cpp.
#include <algorithm>
#include <cmath>

#include "core/backend.h"
#include "core/checks.h"
#include "core/error.h"
#include "core/factory.h"
#include "core/launch.h"

namespace axiom::core {

namespace {

Tensor softmax_op(const char* name, const Tensor& x, int64_t axis, bool log) {
  checks::defined(name, x);
  checks::floating(name, x);
  const int a = normalize_axis(name, axis, x.dim());
  Tensor out = empty(x.shape(), x.dtype(), x.device());
  backend(x.device()).softmax(x, a, log, out);
  return out;
}

// weight or bias of layer_norm: absent, or [D] matching x.
Tensor checked_affine(const Tensor& param, const Tensor& x, const char* what) {
  if (!param.defined()) return param;
  checks::same_device("layer_norm", x, param);
  checks::same_dtype("layer_norm", x, param);
  if (param.shape() != Shape{x.size(-1)}) {
    throw Error("layer_norm", what, " has shape ", param.shape(), "; expected [", x.size(-1), "] for input ",
                x.shape());
  }
  return param.contiguous();
}

}  // namespace

Tensor softmax(const Tensor& x, int64_t axis) { return softmax_op("softmax", x, axis, false); }
Tensor log_softmax(const Tensor& x, int64_t axis) { return softmax_op("log_softmax", x, axis, true); }

Tensor categorical(const Tensor& logits, const Tensor& uniforms, double temperature) {
  constexpr const char* name = "categorical";
  checks::floating_peers(name, {&logits, &uniforms});
  if (logits.dim() == 0 || logits.size(-1) == 0)
    throw Error(name, "needs logits [..., V] with V >= 1, got ", logits.shape());
  const Shape rows(logits.shape().begin(), logits.shape().end() - 1);
  if (uniforms.shape() != rows) {
    throw Error(name, "needs a uniform for each row of logits ", logits.shape(), ": uniforms ", rows, ", got ",
                uniforms.shape());
  }
  if (!(temperature > 0) || std::isinf(temperature))
    throw Error(name, "temperature must be > 0 and finite, got ", temperature);
  Tensor out = empty(rows, Dtype::int64, logits.device());
  if (out.numel() > 0)
    backend(logits.device()).categorical(logits.contiguous(), uniforms.contiguous(), temperature, out);
  return out;
}

LayerNormResult layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
  checks::defined("layer_norm", x);
  return layer_norm(x, weight, bias, eps, x.dtype());
}

LayerNormResult layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, Dtype output_dtype) {
  checks::defined("layer_norm", x);
  checks::floating("layer_norm", x);
  checks::output_dtype("layer_norm", x, output_dtype);
  if (x.dim() == 0) throw Error("layer_norm", "needs at least one axis, got a scalar");
  if (!(eps >= 0)) throw Error("layer_norm", "eps must be 0 or more, got ", eps);
  const Tensor w = checked_affine(weight, x, "weight"), b = checked_affine(bias, x, "bias");
  const Shape rows(x.shape().begin(), x.shape().end() - 1);
  LayerNormResult result{empty(x.shape(), output_dtype, x.device()), empty(rows, x.dtype(), x.device()),
                         empty(rows, x.dtype(), x.device())};
  const Tensor rows_of_x = output_dtype == Dtype::bfloat16 ? x.contiguous() : x;  // (the rounding kernel's)
  backend(x.device()).layer_norm(rows_of_x, w, b, eps, result.output, result.mean, result.rstd);
  return result;
}

LayerNormParamGrads layer_norm_param_grads(const Tensor& x, const Tensor& mean, const Tensor& rstd,
                                           const Tensor& grad_out) {
  constexpr std::string_view name = "layer_norm_param_grads";
  checks::defined(name, x);
  checks::floating(name, x);
  if (x.dim() == 0) throw Error(name, "needs at least one axis, got a scalar");
  const Shape rows(x.shape().begin(), x.shape().end() - 1);
  for (const Tensor* t : {&mean, &rstd, &grad_out}) {
    checks::defined(name, *t);
    checks::same_device(name, x, *t);
    checks::same_dtype(name, x, *t);
  }
  if (mean.shape() != rows || rstd.shape() != rows || grad_out.shape() != x.shape()) {
    throw Error(name, "for input ", x.shape(), " expected mean and rstd of shape ", rows, " and grad_out of shape ",
                x.shape(), ", got ", mean.shape(), ", ", rstd.shape(), " and ", grad_out.shape());
  }
  LayerNormParamGrads grads{empty({x.size(-1)}, x.dtype(), x.device()), empty({x.size(-1)}, x.dtype(), x.device())};
  backend(x.device())
      .layer_norm_param_grads(x.contiguous(), mean.contiguous(), rstd.contiguous(), grad_out.contiguous(), grads.weight,
                              grads.bias);
  return grads;
}

Tensor layer_norm_backward(const Tensor& x, const Tensor& weight, const Tensor& mean, const Tensor& rstd,
                           const Tensor& grad_out) {
  checks::defined("layer_norm_backward", x);
  checks::floating("layer_norm_backward", x);
  if (x.dim() == 0) throw Error("layer_norm_backward", "needs at least one axis, got a scalar");
  const Shape rows(x.shape().begin(), x.shape().end() - 1);
  for (const Tensor* t : {&mean, &rstd, &grad_out}) {
    checks::defined("layer_norm_backward", *t);
    checks::same_device("layer_norm_backward", x, *t);
    checks::same_dtype("layer_norm_backward", x, *t);
  }
  if (mean.shape() != rows || rstd.shape() != rows || grad_out.shape() != x.shape()) {
    throw Error("layer_norm_backward", "for input ", x.shape(), " expected mean and rstd of shape ", rows,
                " and grad_out of shape ", x.shape(), "; got ", mean.shape(), ", ", rstd.shape(), ", ",
                grad_out.shape());
  }
  const Tensor w = checked_affine(weight, x, "weight");
  Tensor grad_x = empty(x.shape(), x.dtype(), x.device());
  backend(x.device()).layer_norm_backward(x, w, mean.contiguous(), rstd.contiguous(), grad_out, grad_x);
  return grad_x;
}

namespace {

// Logits [..., C] and targets [...] (int64, every value a class): an Error naming what is wrong.
void check_cross_entropy(std::string_view op, const Tensor& logits, const Tensor& targets, double smoothing) {
  checks::defined(op, logits, "logits");
  checks::defined(op, targets, "targets");
  checks::floating(op, logits);
  checks::dtype_is(op, targets, Dtype::int64, "targets");
  checks::same_device(op, logits, targets);
  const Shape expected(logits.shape().begin(), logits.shape().end() - (logits.dim() > 0 ? 1 : 0));
  if (logits.dim() == 0 || targets.shape() != expected) {
    throw Error(op, "logits ", logits.shape(), " need targets of shape ", expected, " (one class per row), got ",
                targets.shape());
  }
  if (!(smoothing >= 0 && smoothing <= 1)) throw Error(op, "label_smoothing must be in [0, 1], got ", smoothing);
  checks::indices_in_range({std::string(op), logits.size(-1), 0, /*class_targets=*/true}, targets);
}

}  // namespace

CrossEntropyResult cross_entropy(const Tensor& logits, const Tensor& targets, double label_smoothing) {
  check_cross_entropy("cross_entropy", logits, targets, label_smoothing);
  CrossEntropyResult result{empty(targets.shape(), logits.dtype(), logits.device()),
                            empty(targets.shape(), logits.dtype(), logits.device())};
  backend(logits.device())
      .cross_entropy(logits.contiguous(), targets.contiguous(), label_smoothing, result.losses, result.lse);
  return result;
}

Tensor cross_entropy_backward(const Tensor& logits, const Tensor& targets, const Tensor& lse, const Tensor& grad_losses,
                              double label_smoothing) {
  check_cross_entropy("cross_entropy_backward", logits, targets, label_smoothing);
  for (const auto& [t, what] : {std::pair{&lse, "lse"}, std::pair{&grad_losses, "grad_losses"}}) {
    checks::defined("cross_entropy_backward", *t, what);
    checks::same_device("cross_entropy_backward", logits, *t);
    checks::same_dtype("cross_entropy_backward", logits, *t);
    if (t->shape() != targets.shape()) {
      throw Error("cross_entropy_backward", what, " has shape ", t->shape(), ", the targets ", targets.shape());
    }
  }
  Tensor grad_logits = empty(logits.shape(), logits.dtype(), logits.device());
  backend(logits.device())
      .cross_entropy_backward(logits.contiguous(), targets.contiguous(), lse.contiguous(), grad_losses.contiguous(),
                              label_smoothing, grad_logits);
  return grad_logits;
}

}  // namespace axiom::core
