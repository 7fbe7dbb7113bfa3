#include "core/checks.h"

#include "core/backend.h"
#include "core/error.h"

namespace axiom::core {

Error IndexBounds::out_of_range(int64_t value, int64_t flat, const Shape& shape) const {
  if (class_targets)
    return Error(op, "target ", value, " (element ", flat, " of the targets) is not a class in [0, ", limit, ")");
  std::vector<int64_t> position(shape.size());
  for (size_t i = position.size(); i-- > 0;) position[i] = flat % shape[i], flat /= shape[i];
  return Error(op, "index ", value, " at ", position, " is out of range for axis ", axis, " of size ", limit);
}

void IndexBounds::check(const std::vector<int64_t>& values, const Shape& shape) const {
  for (size_t flat = 0; flat < values.size(); ++flat) {
    if (values[flat] < 0 || values[flat] >= limit) throw out_of_range(values[flat], static_cast<int64_t>(flat), shape);
  }
}

}  // namespace axiom::core

namespace axiom::core::checks {

void defined(std::string_view op, const Tensor& x, std::string_view what) {
  if (!x.defined()) throw Error(op, "the ", what, " tensor is undefined");
}

void same_device(std::string_view op, const Tensor& a, const Tensor& b) {
  if (a.device() != b.device()) {
    throw Error(op, "tensors are on different devices: ", a.device(), " and ", b.device());
  }
}

void same_dtype(std::string_view op, const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype()) {
    throw Error(op, "dtypes ", a.dtype(), " and ", b.dtype(), " differ; convert one with .to(dtype)");
  }
}

void computable(std::string_view op, const Tensor& x) {
  if (x.dtype() == Dtype::bfloat16) throw Error(op, bfloat16_refusal);
}

void convertible(std::string_view op, Dtype from, Dtype to, Device device) {
  if (from != Dtype::bfloat16 && to != Dtype::bfloat16) return;
  if (device.type != DeviceType::cpu && device.type != DeviceType::meta) {
    throw Error(op, "bfloat16 tensors live on the CPU only; got one on ", device);
  }
  const Dtype other = from == Dtype::bfloat16 ? to : from;
  if (other != Dtype::bfloat16 && other != Dtype::float32) {
    throw Error(op, "bfloat16 converts to and from float32 only; got ", from, " to ", to);
  }
}

void output_dtype(std::string_view op, const Tensor& x, Dtype output) {
  if (output == x.dtype()) return;
  if (output != Dtype::bfloat16 || x.dtype() != Dtype::float32) {
    throw Error(op, "the output's dtype must be the input's (", x.dtype(), ") or, for float32, bfloat16; got ", output);
  }
  convertible(op, x.dtype(), output, x.device());
}

void floating(std::string_view op, const Tensor& x) {
  if (!is_floating(x.dtype())) throw Error(op, "dtype ", x.dtype(), " is not supported (float32 or float64 only)");
}

void floating_peers(std::string_view op, std::initializer_list<const Tensor*> tensors) {
  const Tensor& first = **tensors.begin();
  for (const Tensor* x : tensors) {
    defined(op, *x);
    floating(op, *x);
    same_device(op, first, *x);
    same_dtype(op, first, *x);
  }
}

void dtype_is(std::string_view op, const Tensor& x, Dtype expected, std::string_view what) {
  if (x.dtype() != expected) throw Error(op, what, " must be ", expected, ", got ", x.dtype());
}

void indices_in_range(const IndexBounds& bounds, const Tensor& index) {
  backend(index.device()).check_indices(bounds, index);
}

}  // namespace axiom::core::checks
