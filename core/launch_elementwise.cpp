// Op functions for elementwise math: validate, broadcast, allocate, call the backend.
#include "core/backend.h"
#include "core/checks.h"
#include "core/error.h"
#include "core/factory.h"
#include "core/launch.h"

namespace axiom::core {

namespace {

Tensor unary_op(UnaryOp op, const Tensor& x, double scalar = 0) {
  const std::string_view name = op_name(op);
  checks::defined(name, x);
  checks::computable(name, x);
  const bool takes_integers = op == UnaryOp::neg || op == UnaryOp::abs || op == UnaryOp::relu;
  if (!takes_integers) checks::floating(name, x);
  Tensor out = empty(x.shape(), x.dtype(), x.device());
  backend(x.device()).unary(op, x, out, scalar);
  return out;
}

bool is_comparison(BinaryOp op) { return op >= BinaryOp::eq; }

Tensor binary_op(BinaryOp op, const Tensor& a, const Tensor& b) {
  const std::string_view name = op_name(op);
  checks::defined(name, a, "first");
  checks::defined(name, b, "second");
  checks::same_device(name, a, b);
  checks::same_dtype(name, a, b);
  checks::computable(name, a);
  if (op == BinaryOp::div || op == BinaryOp::pow) checks::floating(name, a);
  const Shape shape = broadcast_shapes(name, a.shape(), b.shape());
  Tensor out = empty(shape, is_comparison(op) ? Dtype::uint8 : a.dtype(), a.device());
  backend(a.device()).binary(op, a.expand(shape), b.expand(shape), out);
  return out;
}

Tensor like(const Tensor& x, double value) {
  checks::defined("scalar", x);
  checks::computable("scalar", x);
  return scalar(value, x.dtype(), x.device());
}

}  // namespace

Tensor neg(const Tensor& x) { return unary_op(UnaryOp::neg, x); }
Tensor abs(const Tensor& x) { return unary_op(UnaryOp::abs, x); }
Tensor exp(const Tensor& x) { return unary_op(UnaryOp::exp, x); }
Tensor log(const Tensor& x) { return unary_op(UnaryOp::log, x); }
Tensor sqrt(const Tensor& x) { return unary_op(UnaryOp::sqrt, x); }
Tensor rsqrt(const Tensor& x) { return unary_op(UnaryOp::rsqrt, x); }
Tensor tanh(const Tensor& x) { return unary_op(UnaryOp::tanh, x); }
Tensor sigmoid(const Tensor& x) { return unary_op(UnaryOp::sigmoid, x); }
Tensor relu(const Tensor& x) { return unary_op(UnaryOp::relu, x); }
Tensor gelu(const Tensor& x) { return unary_op(UnaryOp::gelu, x); }
Tensor gelu_tanh(const Tensor& x) { return unary_op(UnaryOp::gelu_tanh, x); }
Tensor pow(const Tensor& x, double exponent) { return unary_op(UnaryOp::pow_scalar, x, exponent); }
Tensor gelu_derivative(const Tensor& x) { return unary_op(UnaryOp::gelu_derivative, x); }
Tensor gelu_tanh_derivative(const Tensor& x) { return unary_op(UnaryOp::gelu_tanh_derivative, x); }

Tensor add(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::add, a, b); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::sub, a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::mul, a, b); }
Tensor div(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::div, a, b); }
Tensor pow(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::pow, a, b); }
Tensor maximum(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::maximum, a, b); }
Tensor minimum(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::minimum, a, b); }
Tensor eq(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::eq, a, b); }
Tensor ne(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::ne, a, b); }
Tensor lt(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::lt, a, b); }
Tensor le(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::le, a, b); }
Tensor gt(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::gt, a, b); }
Tensor ge(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::ge, a, b); }

void mul_in_place(const Tensor& target, const Tensor& factor) {
  checks::defined("mul_in_place", target, "target");
  checks::defined("mul_in_place", factor, "factor");
  checks::same_device("mul_in_place", target, factor);
  checks::same_dtype("mul_in_place", target, factor);
  if (!target.is_contiguous())
    throw Error("mul_in_place", "the target must be contiguous, got strides ", target.strides());
  if (broadcast_shapes("mul_in_place", target.shape(), factor.shape()) != target.shape()) {
    throw Error("mul_in_place", "the factor's shape ", factor.shape(), " does not broadcast to the target's shape ",
                target.shape());
  }
  // each element is read and then written by the same step of the map: out may be an input
  backend(target.device()).binary(BinaryOp::mul, target, factor.expand(target.shape()), target);
  target.storage()->mark_written();
}

namespace {
void check_activation(std::string_view name, UnaryOp activation) {
  if (activation != UnaryOp::gelu && activation != UnaryOp::gelu_tanh && activation != UnaryOp::relu) {
    throw Error(name, "the activation must be gelu, gelu_tanh or relu, got ", op_name(activation));
  }
}

// h of an activation whose output is rounded to bfloat16: float32, or bfloat16 itself (widened as it
// is read), on a device that holds bfloat16 (the CPU).
void check_rounded_activation_input(std::string_view name, const Tensor& h) {
  if (h.dtype() != Dtype::float32 && h.dtype() != Dtype::bfloat16) {
    throw Error(name, "h must be float32 or bfloat16, got ", h.dtype());
  }
  checks::convertible(name, Dtype::float32, Dtype::bfloat16, h.device());
}
}  // namespace

Tensor activation_to_bfloat16(UnaryOp activation, const Tensor& h) {
  constexpr std::string_view name = "activation_to_bfloat16";
  checks::defined(name, h, "h");
  check_activation(name, activation);
  check_rounded_activation_input(name, h);
  Tensor out = empty(h.shape(), Dtype::bfloat16, h.device());
  backend(h.device()).unary(activation, h.contiguous(), out, 0);
  return out;
}

Tensor activation_backward(UnaryOp activation, const Tensor& h, const Tensor& grad) {
  checks::defined("activation_backward", h, "h");
  return activation_backward(activation, h, grad, h.dtype());
}

Tensor activation_backward(UnaryOp activation, const Tensor& h, const Tensor& grad, Dtype activated_dtype) {
  constexpr std::string_view name = "activation_backward";
  checks::defined(name, h, "h");
  checks::defined(name, grad, "grad");
  check_activation(name, activation);
  checks::floating(name, h);
  checks::output_dtype(name, h, activated_dtype);
  checks::same_device(name, h, grad);
  checks::same_dtype(name, h, grad);
  if (grad.shape() != h.shape())
    throw Error(name, "grad's shape ", grad.shape(), " differs from h's shape ", h.shape());
  if (!grad.is_contiguous()) throw Error(name, "grad must be contiguous, got strides ", grad.strides());
  Tensor activated = empty(h.shape(), activated_dtype, h.device());
  backend(h.device()).activation_backward(activation, h.contiguous(), grad, activated);
  grad.storage()->mark_written();
  return activated;
}

ActivationGradRounded activation_backward_to_bfloat16(UnaryOp activation, const Tensor& h, const Tensor& grad) {
  constexpr std::string_view name = "activation_backward_to_bfloat16";
  checks::defined(name, h, "h");
  checks::defined(name, grad, "grad");
  check_activation(name, activation);
  check_rounded_activation_input(name, h);
  checks::dtype_is(name, grad, Dtype::float32, "grad");
  checks::same_device(name, h, grad);
  if (grad.shape() != h.shape())
    throw Error(name, "grad's shape ", grad.shape(), " differs from h's shape ", h.shape());
  if (h.dim() == 0) throw Error(name, "needs at least one axis, got a scalar");
  ActivationGradRounded result{
      {empty(h.shape(), Dtype::bfloat16, h.device()), empty({h.size(-1)}, Dtype::float32, h.device())},
      empty(h.shape(), Dtype::bfloat16, h.device())};
  backend(h.device())
      .activation_backward_to_bfloat16(activation, h.contiguous(), grad.contiguous(), result.grad.rounded,
                                       result.grad.sums, result.activated);
  return result;
}

Tensor add(const Tensor& a, double b) { return add(a, like(a, b)); }
Tensor sub(const Tensor& a, double b) { return sub(a, like(a, b)); }
Tensor mul(const Tensor& a, double b) { return mul(a, like(a, b)); }
Tensor div(const Tensor& a, double b) { return div(a, like(a, b)); }

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator-(const Tensor& x) { return neg(x); }

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  checks::defined("where", cond, "condition");
  checks::defined("where", a, "first");
  checks::defined("where", b, "second");
  checks::dtype_is("where", cond, Dtype::uint8, "the condition");
  checks::same_device("where", cond, a);
  checks::same_device("where", a, b);
  checks::same_dtype("where", a, b);
  checks::computable("where", a);
  const Shape shape = broadcast_shapes("where", cond.shape(), broadcast_shapes("where", a.shape(), b.shape()));
  Tensor out = empty(shape, a.dtype(), a.device());
  backend(a.device()).where(cond.expand(shape), a.expand(shape), b.expand(shape), out);
  return out;
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, double value) {
  checks::defined("masked_fill", x);
  checks::computable("masked_fill", x);
  checks::defined("masked_fill", mask, "mask");
  checks::dtype_is("masked_fill", mask, Dtype::uint8, "the mask");
  if (broadcast_shapes("masked_fill", x.shape(), mask.shape()) != x.shape()) {
    throw Error("masked_fill", "mask of shape ", mask.shape(), " does not broadcast to the input's shape ", x.shape());
  }
  return where(mask, like(x, value), x);
}

}  // namespace axiom::core
