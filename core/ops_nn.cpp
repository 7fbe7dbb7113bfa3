// Op functions for the neural-network workhorses: softmax, layer norm and cross-entropy
// (attention: core/ops_attention.cpp; matmul and linear: core/ops_matmul.cpp).
#include <algorithm>

#include "core/backend.h"
#include "core/checks.h"
#include "core/error.h"
#include "core/factory.h"
#include "core/ops.h"

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
    throw Error("layer_norm", what, " has shape ", param.shape(), "; expected [", x.size(-1), "] for input ", x.shape());
  }
  return param.contiguous();
}

}  // namespace

Tensor softmax(const Tensor& x, int64_t axis) { return softmax_op("softmax", x, axis, false); }
Tensor log_softmax(const Tensor& x, int64_t axis) { return softmax_op("log_softmax", x, axis, true); }

LayerNormResult layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
  checks::defined("layer_norm", x);
  checks::floating("layer_norm", x);
  if (x.dim() == 0) throw Error("layer_norm", "needs at least one axis, got a scalar");
  if (!(eps >= 0)) throw Error("layer_norm", "eps must be 0 or more, got ", eps);
  const Tensor w = checked_affine(weight, x, "weight"), b = checked_affine(bias, x, "bias");
  const Shape rows(x.shape().begin(), x.shape().end() - 1);
  LayerNormResult result{empty(x.shape(), x.dtype(), x.device()), empty(rows, x.dtype(), x.device()),
                         empty(rows, x.dtype(), x.device())};
  backend(x.device()).layer_norm(x, w, b, eps, result.output, result.mean, result.rstd);
  return result;
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
    throw Error(op, "logits ", logits.shape(), " need targets of shape ", expected, " (one class per row), got ", targets.shape());
  }
  if (!(smoothing >= 0 && smoothing <= 1)) throw Error(op, "label_smoothing must be in [0, 1], got ", smoothing);
  checks::indices_in_range({std::string(op), logits.size(-1), 0, /*class_targets=*/true}, targets);
}

}  // namespace

CrossEntropyResult cross_entropy(const Tensor& logits, const Tensor& targets, double label_smoothing) {
  check_cross_entropy("cross_entropy", logits, targets, label_smoothing);
  CrossEntropyResult result{empty(targets.shape(), logits.dtype(), logits.device()), empty(targets.shape(), logits.dtype(), logits.device())};
  backend(logits.device()).cross_entropy(logits.contiguous(), targets.contiguous(), label_smoothing, result.losses, result.lse);
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
  backend(logits.device()).cross_entropy_backward(logits.contiguous(), targets.contiguous(), lse.contiguous(), grad_losses.contiguous(),
                                                  label_smoothing, grad_logits);
  return grad_logits;
}

namespace {

void check_adam_update(const char* op, const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                       const AdamStep& step) {
  const std::pair<const Tensor*, const char*> operands[] = {{&param, "param"}, {&grad, "grad"}, {&exp_avg, "exp_avg"},
                                                            {&exp_avg_sq, "exp_avg_sq"}};
  for (const auto& [t, what] : operands) {
    checks::defined(op, *t, what);
    checks::same_device(op, param, *t);
    checks::same_dtype(op, param, *t);
    if (t->shape() != param.shape()) throw Error(op, what, " has shape ", t->shape(), ", param ", param.shape());
    if (t != &grad && !t->is_contiguous()) throw Error(op, what, " must be contiguous (it is updated in place)");
  }
  checks::floating(op, param);
  if (!(step.beta1 >= 0 && step.beta1 < 1) || !(step.beta2 >= 0 && step.beta2 < 1)) {
    throw Error(op, "betas must be in [0, 1), got ", step.beta1, " and ", step.beta2);
  }
  if (!(step.eps > 0)) throw Error(op, "eps must be > 0, got ", step.eps);
  if (step.step < 1) throw Error(op, "step must be 1 or more, got ", step.step);
}

void mark_adam_written(const AdamUpdate& u) {  // (autograd's versions)
  for (const Tensor* written : {&u.param, &u.exp_avg, &u.exp_avg_sq}) written->storage()->mark_written();
}

}  // namespace

void adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                 const AdamStep& step) {
  check_adam_update("adam_update", param, grad, exp_avg, exp_avg_sq, step);
  backend(param.device()).adam_update(param, grad.contiguous(), exp_avg, exp_avg_sq, step);
  mark_adam_written({param, grad, exp_avg, exp_avg_sq, step});
}

void adam_update_many(const std::vector<AdamUpdate>& updates) {
  if (updates.empty()) return;
  for (const AdamUpdate& u : updates) check_adam_update("adam_update_many", u.param, u.grad, u.exp_avg, u.exp_avg_sq, u.step);
  // one call per device and dtype, in the order of `updates`
  std::vector<std::vector<AdamUpdate>> groups;
  for (const AdamUpdate& u : updates) {
    auto same_kind = [&](const std::vector<AdamUpdate>& g) {
      return g.front().param.device() == u.param.device() && g.front().param.dtype() == u.param.dtype();
    };
    auto group = std::find_if(groups.begin(), groups.end(), same_kind);
    if (group == groups.end()) group = groups.insert(groups.end(), std::vector<AdamUpdate>{});
    group->push_back({u.param, u.grad.contiguous(), u.exp_avg, u.exp_avg_sq, u.step});
  }
  for (const std::vector<AdamUpdate>& group : groups) backend(group.front().param.device()).adam_update_many(group);
  for (const AdamUpdate& u : updates) mark_adam_written(u);
}

}  // namespace axiom::core
