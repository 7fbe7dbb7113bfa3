// The scalar formulas of the elementwise ops whose math is more than one call, written once for
// both backends: core/cpu/elementwise.cpp maps them over tensors on the host, and
// core/cuda/elementwise.cu runs the same functions in GPU threads.
//
// `Math` supplies exp_of, erf_of and tanh_of: the CPU passes its vectorisable float versions
// (core/cpu/fast_math.h), the GPU CUDA's own functions.
#pragma once

#include "core/host_device.h"

namespace axiom::core::formulas {

constexpr double kInvSqrt2 = 0.7071067811865476;     // 1 / sqrt(2)
constexpr double kInvSqrt2Pi = 0.3989422804014327;   // 1 / sqrt(2 pi): the normal density at 0
constexpr double kSqrt2OverPi = 0.7978845608028654;  // sqrt(2 / pi)
constexpr double kGeluCubic = 0.044715;              // the cubic term of GELU's tanh approximation

// 1 / (1 + e^-x), written so that exp never overflows: for x < 0, e^x / (1 + e^x).
template <typename Math, typename T>
AXIOM_HOST_DEVICE T sigmoid(T x) {
  const T e = Math::exp_of(x < T(0) ? x : -x);
  return x >= T(0) ? T(1) / (T(1) + e) : e / (T(1) + e);
}

// GELU: x Phi(x) = x/2 (1 + erf(x / sqrt 2)), Phi the standard normal distribution function.
template <typename Math, typename T>
AXIOM_HOST_DEVICE T gelu(T x) {
  return T(0.5) * x * (T(1) + Math::erf_of(x * T(kInvSqrt2)));
}

// d/dx x Phi(x) = Phi(x) + x phi(x), phi the standard normal density.
template <typename Math, typename T>
AXIOM_HOST_DEVICE T gelu_derivative(T x) {
  const T cdf = T(0.5) * (T(1) + Math::erf_of(x * T(kInvSqrt2)));
  const T pdf = T(kInvSqrt2Pi) * Math::exp_of(T(-0.5) * x * x);
  return cdf + x * pdf;
}

// GELU's tanh approximation: x/2 (1 + tanh u), u = sqrt(2/pi) (x + 0.044715 x^3).
template <typename Math, typename T>
AXIOM_HOST_DEVICE T gelu_tanh(T x) {
  const T u = T(kSqrt2OverPi) * (x + T(kGeluCubic) * x * x * x);
  return T(0.5) * x * (T(1) + Math::tanh_of(u));
}

// Its derivative: 1/2 (1 + tanh u) + x/2 (1 - tanh^2 u) du/dx, du/dx = sqrt(2/pi) (1 + 3 * 0.044715 x^2).
template <typename Math, typename T>
AXIOM_HOST_DEVICE T gelu_tanh_derivative(T x) {
  const T t = Math::tanh_of(T(kSqrt2OverPi) * (x + T(kGeluCubic) * x * x * x));
  const T du = T(kSqrt2OverPi) * (T(1) + T(3 * kGeluCubic) * x * x);
  return T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * du;
}

}  // namespace axiom::core::formulas
