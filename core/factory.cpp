#include "core/factory.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/backend.h"
#include "core/error.h"

namespace axiom::core {

Tensor empty(const Shape& shape, Dtype dtype, Device device) {
  check_countable("empty", shape, dtype);  // every stride and byte offset fits in int64
  const size_t nbytes = static_cast<size_t>(numel(shape)) * dtype_size(dtype);
  auto storage = std::make_shared<Storage>(nbytes, device);
  return Tensor(std::move(storage), shape, contiguous_strides(shape), 0, dtype);
}

Tensor full(const Shape& shape, double value, Dtype dtype, Device device) {
  if (dtype == Dtype::bfloat16) return full(shape, value, Dtype::float32, device).to(dtype);  // rounded
  Tensor out = empty(shape, dtype, device);
  backend(device).fill(out, value);
  return out;
}

Tensor zeros(const Shape& shape, Dtype dtype, Device device) { return full(shape, 0, dtype, device); }
Tensor ones(const Shape& shape, Dtype dtype, Device device) { return full(shape, 1, dtype, device); }
Tensor zeros_like(const Tensor& like) { return zeros(like.shape(), like.dtype(), like.device()); }
Tensor scalar(double value, Dtype dtype, Device device) { return full({}, value, dtype, device); }

Tensor arange(double start, double stop, double step, Dtype dtype) {
  if (step == 0 || !std::isfinite(start) || !std::isfinite(stop) || !std::isfinite(step)) {
    throw Error("arange", "start ", start, ", stop ", stop, " and step ", step, " must be finite, step nonzero");
  }
  const double count = std::ceil((stop - start) / step);
  if (count > 1e12)
    throw Error("arange", "start ", start, ", stop ", stop, " and step ", step, " make too many elements");
  const int64_t n = count > 0 ? static_cast<int64_t>(count) : 0;
  std::vector<double> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) values[i] = start + static_cast<double>(i) * step;
  return from_vector(values).to(dtype);
}

template <typename T>
Tensor from_vector(const std::vector<T>& values, Shape shape, Device device) {
  if (shape.empty()) shape = {static_cast<int64_t>(values.size())};
  if (numel(shape) != static_cast<int64_t>(values.size())) {
    throw Error("from_vector", values.size(), " values cannot fill shape ", shape, " (", numel(shape), " elements)");
  }
  Tensor host = empty(shape, dtype_of<T>);
  if (!values.empty()) std::memcpy(host.raw_data(), values.data(), values.size() * sizeof(T));
  return host.to(device);
}
template Tensor from_vector(const std::vector<float>&, Shape, Device);
template Tensor from_vector(const std::vector<double>&, Shape, Device);
template Tensor from_vector(const std::vector<int64_t>&, Shape, Device);
template Tensor from_vector(const std::vector<uint8_t>&, Shape, Device);

}  // namespace axiom::core
