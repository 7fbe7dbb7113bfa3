// The formulas of the elementwise ops whose math is more than one call, and the conversion between
// dtypes, each written once for every path that computes it:
// - the activations and their slopes (sigmoid, GELU, GELU's tanh form): core/activations.inc,
//   included here for one value at a time, in the arithmetic of Scalar below, which
//   core/cpu/elementwise.cpp maps over tensors on the host and core/cuda/elementwise.cu runs in GPU
//   threads; core/cpu/vector_math.cpp includes the same file for SIMD vectors of float32;
// - the saturating conversion between dtypes (convert), for both backends' copy kernels.
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

#include "core/activations.inc"

// The arithmetic core/activations.inc asks of its values, for one value of type T (float or
// double). `Functions` supplies exp_of, erf_of and tanh_of: the CPU passes its vectorisable float
// versions (core/cpu/fast_math.h), the GPU CUDA's own functions.
template <typename T, typename Functions>
struct Scalar {
  using V = T;
  AXIOM_HOST_DEVICE static T constant(double c) { return static_cast<T>(c); }
  AXIOM_HOST_DEVICE static T add(T a, T b) { return a + b; }
  AXIOM_HOST_DEVICE static T mul(T a, T b) { return a * b; }
  AXIOM_HOST_DEVICE static T div(T a, T b) { return a / b; }
  AXIOM_HOST_DEVICE static T mul_add(T a, T b, T c) { return a * b + c; }      // a b + c
  AXIOM_HOST_DEVICE static T neg_mul_add(T a, T b, T c) { return c - a * b; }  // c - a b
  AXIOM_HOST_DEVICE static T negative_abs(T x) { return x < T(0) ? x : -x; }   // -|x|
  AXIOM_HOST_DEVICE static T where_non_negative(T x, T a, T b) { return x >= T(0) ? a : b; }
  AXIOM_HOST_DEVICE static T exp_of(T x) { return Functions::exp_of(x); }
  AXIOM_HOST_DEVICE static T tanh_of(T x) { return Functions::tanh_of(x); }
  // Phi(x) = (1 + erf(x / sqrt 2)) / 2, from the library's erf (the gauss term is not needed)
  AXIOM_HOST_DEVICE static T normal_cdf(T x) { return T(0.5) * (T(1) + Functions::erf_of(x * T(kInvSqrt2))); }
  AXIOM_HOST_DEVICE static T normal_cdf(T x, T /*gauss*/) { return normal_cdf(x); }
};

}  // namespace axiom::core::formulas
