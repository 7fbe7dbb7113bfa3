// The scalar formulas of the elementwise ops whose math is more than one call, and the conversion
// between dtypes, written once for both backends: core/cpu/elementwise.cpp maps them over tensors on the host, and
// core/cuda/elementwise.cu runs the same functions in GPU threads.
//
// `Math` supplies exp_of, erf_of and tanh_of: the CPU passes its vectorisable float versions
// (core/cpu/fast_math.h), the GPU CUDA's own functions.
#pragma once

#include <limits>
#include <type_traits>

#include "core/host_device.h"

namespace axiom::core::formulas {

// Converts one value. Floating to integer truncates toward zero and saturates at the target's
// limits (NaN becomes 0): C++ leaves out-of-range conversions undefined, so we define them.
template <typename To, typename From>
AXIOM_HOST_DEVICE To convert(From value) {
  if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    if (value != value) return To(0);  // NaN
    constexpr auto lowest = static_cast<From>(std::numeric_limits<To>::lowest());
    constexpr auto highest = static_cast<From>(std::numeric_limits<To>::max());
    if (value <= lowest) return std::numeric_limits<To>::lowest();
    if (value >= highest) return std::numeric_limits<To>::max();
  }
  return static_cast<To>(value);
}

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
