// exp and erf for float32, one value at a time: the scalar twins of the SIMD kernels of
// core/cpu/vector_math.cpp (the same exp formula), for the float32 runs those do not take (strided
// operands: a transposed or broadcast tensor) and for the few scalar uses in the row kernels.
//
// The C library's expf and erff are calls the compiler cannot turn into SIMD instructions; these two
// are straight-line arithmetic, with no branches and no calls, so the compiler can still vectorise a
// loop of them where it sees one. float64 keeps the C library's functions, so that gradient checks
// see full double precision.
//
//   exp_float: |error| <= 2 ulp for x in [-87, 88]; exactly 0 below -87 (true value < 1.7e-38,
//              so a masked score of -inf gives a probability of exactly 0) and +inf above 88.
//   erf_float: |error| <= 1.5e-7 (absolute), Abramowitz & Stegun 7.1.26.
// tests/core/test_elementwise.cpp checks both against double-precision references.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace axiom::core::cpu {

// exp(x) = 2^n * exp(r), with n = round(x / ln 2) and r = x - n ln 2 in [-ln2/2, ln2/2]:
// exp(r) is a degree-6 polynomial (Cephes' expf), 2^n is put straight into the exponent bits.
inline float exp_float(float x) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2High = 0.693359375f, kLn2Low = -2.12194440e-4f;  // ln 2 in two parts: r stays exact
  constexpr float kRound = 12582912.0f;                                // 1.5 * 2^23: x + kRound - kRound rounds x
  constexpr float kLowest = -87.0f, kHighest = 88.0f;
  const float clamped = x < kLowest ? kLowest : (x > kHighest ? kHighest : x);  // NaN passes through
  const float n = (clamped * kLog2e + kRound) - kRound;
  const float r = (clamped - n * kLn2High) - n * kLn2Low;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const int32_t exponent = n == n ? static_cast<int32_t>(n) : 0;  // (a NaN's is any: p is NaN)
  const float two_to_n = std::bit_cast<float>((exponent + 127) << 23);
  const float result = p * two_to_n;
  if (x < kLowest) return 0.0f;
  return x > kHighest ? std::numeric_limits<float>::infinity() : result;
}

// erf(x) = 1 - (a1 t + a2 t^2 + a3 t^3 + a4 t^4 + a5 t^5) exp(-x^2), t = 1 / (1 + p |x|), odd in x.
inline float erf_float(float x) {
  const float a = x < 0 ? -x : x;
  const float t = 1.0f / (1.0f + 0.3275911f * a);
  float poly = 1.061405429f;
  poly = poly * t - 1.453152027f;
  poly = poly * t + 1.421413741f;
  poly = poly * t - 0.284496736f;
  poly = poly * t + 0.254829592f;
  const float e = 1.0f - poly * t * exp_float(-a * a);
  return x < 0 ? -e : e;
}

// exp and erf of any floating type: the vectorisable ones above for float, the C library's for double.
template <typename T>
T exp_of(T x) {
  if constexpr (std::is_same_v<T, float>) return exp_float(x);
  return std::exp(x);
}
template <typename T>
T erf_of(T x) {
  if constexpr (std::is_same_v<T, float>) return erf_float(x);
  return std::erf(x);
}

}  // namespace axiom::core::cpu
