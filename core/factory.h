// Making tensors: filled ones, ranges, and tensors from your own values.
#pragma once

#include <vector>

#include "tensor.h"

namespace axiom::core {

// Uninitialised memory: only for outputs that a kernel is about to overwrite.
Tensor empty(const Shape& shape, Dtype dtype = Dtype::float32, Device device = Device::cpu());
Tensor zeros(const Shape& shape, Dtype dtype = Dtype::float32, Device device = Device::cpu());
Tensor ones(const Shape& shape, Dtype dtype = Dtype::float32, Device device = Device::cpu());
Tensor full(const Shape& shape, double value, Dtype dtype = Dtype::float32, Device device = Device::cpu());
Tensor zeros_like(const Tensor& like);
Tensor scalar(double value, Dtype dtype = Dtype::float32, Device device = Device::cpu());  // shape []

// start, start+step, ... up to (not including) stop.   arange(0, 5) -> [0, 1, 2, 3, 4]
Tensor arange(double start, double stop, double step = 1, Dtype dtype = Dtype::float32);
inline Tensor arange(int64_t n, Dtype dtype = Dtype::int64) { return arange(0, static_cast<double>(n), 1, dtype); }

// A tensor holding `values` in row-major order; the dtype follows T (float -> float32, ...).
// An empty `shape` argument means 1-D of values.size() (use scalar() for a 0-d tensor).
template <typename T>
Tensor from_vector(const std::vector<T>& values, Shape shape = {}, Device device = Device::cpu());

}  // namespace axiom::core
