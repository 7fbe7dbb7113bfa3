// Tensors made from nothing, as axiom::Tensor: the factories of core/factory.h and core/random.h
// for the code above autograd/ (nn, models, apps), which holds one value type. None of them
// requires a gradient: call set_requires_grad(true) on what you want to learn.
#pragma once

#include "tensor.h"
#include "../core/factory.h"
#include "../core/random.h"

namespace axiom {

inline Tensor zeros(const Shape& shape, Dtype dtype = Dtype::float32, Device device = Device::cpu()) {
  return Tensor(core::zeros(shape, dtype, device));
}
inline Tensor ones(const Shape& shape, Dtype dtype = Dtype::float32, Device device = Device::cpu()) {
  return Tensor(core::ones(shape, dtype, device));
}
inline Tensor zeros_like(const Tensor& like) { return zeros(like.shape(), like.dtype(), like.device()); }
// shape [], one number
inline Tensor scalar(double value, Dtype dtype = Dtype::float32, Device device = Device::cpu()) {
  return Tensor(core::scalar(value, dtype, device));
}
// The values in row-major order, in `shape` ([values.size()] when empty); T is float, double,
// int64_t or uint8_t: axiom::from_vector<double>({1, 2, 3, 4}, {2, 2})
template <typename T>
Tensor from_vector(const std::vector<T>& values, Shape shape = {}, Device device = Device::cpu()) {
  return Tensor(core::from_vector<T>(values, std::move(shape), device));
}
inline Tensor full(const Shape& shape, double value, Dtype dtype = Dtype::float32, Device device = Device::cpu()) {
  return Tensor(core::full(shape, value, dtype, device));
}
// int64 [n]: 0, 1, ..., n - 1
inline Tensor arange(int64_t n, Device device = Device::cpu()) { return Tensor(core::arange(n).to(device)); }

// Uniform in [low, high), drawn on the CPU (the same numbers on every device) and moved.
inline Tensor uniform(const Shape& shape, double low, double high, Generator& gen, Dtype dtype = Dtype::float32,
                      Device device = Device::cpu()) {
  return Tensor(core::uniform(shape, low, high, gen, dtype).to(device));
}
// Normal with the given mean and standard deviation, drawn on the CPU and moved.
inline Tensor normal(const Shape& shape, double mean, double std, Generator& gen, Dtype dtype = Dtype::float32,
                     Device device = Device::cpu()) {
  return Tensor(core::normal(shape, mean, std, gen, dtype).to(device));
}
// int64 integers uniform in [low, high), drawn on the CPU and moved.
inline Tensor randint(const Shape& shape, int64_t low, int64_t high, Generator& gen, Device device = Device::cpu()) {
  return Tensor(core::randint(shape, low, high, gen).to(device));
}

}  // namespace axiom
