#include "core/checks.h"

#include "core/error.h"

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

void floating(std::string_view op, const Tensor& x) {
  if (!is_floating(x.dtype())) throw Error(op, "dtype ", x.dtype(), " is not supported (float32 or float64 only)");
}

void dtype_is(std::string_view op, const Tensor& x, Dtype expected, std::string_view what) {
  if (x.dtype() != expected) throw Error(op, what, " must be ", expected, ", got ", x.dtype());
}

void indices_in_range(std::string_view op, const Tensor& index, int64_t limit, int axis) {
  const std::vector<int64_t> values = index.to_vector<int64_t>();
  for (size_t flat = 0; flat < values.size(); ++flat) {
    if (values[flat] >= 0 && values[flat] < limit) continue;
    std::vector<int64_t> position(index.shape().size());
    auto rest = static_cast<int64_t>(flat);
    for (size_t i = position.size(); i-- > 0;) position[i] = rest % index.shape()[i], rest /= index.shape()[i];
    throw Error(op, "index ", values[flat], " at ", position, " is out of range for axis ", axis, " of size ", limit);
  }
}

}  // namespace axiom::core::checks
