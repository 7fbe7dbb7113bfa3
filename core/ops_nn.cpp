// Op functions for the neural-network workhorses: softmax, layer norm and matmul.
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

Tensor matmul(const Tensor& a, const Tensor& b) {
  checks::defined("matmul", a, "first");
  checks::defined("matmul", b, "second");
  checks::same_device("matmul", a, b);
  checks::same_dtype("matmul", a, b);
  checks::floating("matmul", a);
  if (a.dim() == 0 || b.dim() == 0) {
    throw Error("matmul", "needs operands with at least one axis, got shapes ", a.shape(), " and ", b.shape());
  }
  // Vectors become matrices ([K] -> [1, K] on the left, [K, 1] on the right) and back at the end.
  const Tensor a2 = a.dim() == 1 ? a.unsqueeze(0) : a;
  const Tensor b2 = b.dim() == 1 ? b.unsqueeze(-1) : b;
  const int64_t m = a2.size(-2), k = a2.size(-1), n = b2.size(-1);
  if (b2.size(-2) != k) {
    throw Error("matmul", "shapes ", a.shape(), " and ", b.shape(), " cannot be multiplied (", k, " != ", b2.size(-2), ")");
  }
  const Shape a_batch(a2.shape().begin(), a2.shape().end() - 2), b_batch(b2.shape().begin(), b2.shape().end() - 2);
  Shape batch;
  try {
    batch = broadcast_shapes("matmul", a_batch, b_batch);
  } catch (const Error&) {
    throw Error("matmul", "batch shapes ", a_batch, " and ", b_batch, " of ", a.shape(), " and ", b.shape(),
                " cannot be broadcast");
  }
  auto with_matrix = [&](int64_t rows, int64_t cols) {
    Shape shape = batch;
    shape.push_back(rows), shape.push_back(cols);
    return shape;
  };
  Tensor out = empty(with_matrix(m, n), a.dtype(), a.device());
  backend(a.device()).matmul(a2.expand(with_matrix(m, k)), b2.expand(with_matrix(k, n)), out);
  if (a.dim() == 1) out = out.squeeze(-2);
  if (b.dim() == 1) out = out.squeeze(-1);
  return out;
}

}  // namespace axiom::core
