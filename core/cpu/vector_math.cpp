// The float32 kernels of core/cpu/vector_math.h, in Google Highway.
//
// How Highway builds them: foreach_target.h includes this file once per SIMD target (AVX-512,
// AVX2, SSE4, a portable 128-bit fallback on x86), each time with HWY_NAMESPACE naming that target
// and with the compiler allowed that target's instructions for the code between
// HWY_BEFORE_NAMESPACE and HWY_AFTER_NAMESPACE. HWY_EXPORT then makes a table of the versions of a
// function, and HWY_DYNAMIC_DISPATCH calls the one for the widest target this CPU has.
//
// Inside a target, `d` is a "descriptor" of a vector of floats (as many as the target holds: 16 for
// AVX-512, 8 for AVX2) and hn::Lanes(d) its count. Every loop runs whole vectors, then the last
// elements with narrower descriptors, down to one lane (for_each_vector): the same code, so the
// same formula, and no load past the end of an array. The sums' order depends on the target, so
// float32 results can differ in the last bits between an AVX2 and an AVX-512 machine; on one
// machine (one target) they are the same every run.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "core/cpu/vector_math.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include <strings.h>  // strcasecmp

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string_view>
#include <type_traits>

#include "core/cpu/bfloat16.h"
#include "core/cpu/vector_math.h"
#include "core/error.h"
#include "core/host_device.h"
#include "core/random.h"
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace axiom::core::cpu::vec::HWY_NAMESPACE {

namespace hn = hwy::HWY_NAMESPACE;

// step(d, i) for i = 0, N, 2N, ... over whole vectors of N = Lanes(d) floats, then the rest with
// narrower descriptors: one vector of 8 lanes, one of 4, then one lane at a time. (A row of 28
// floats under AVX-512 is one vector of 16, one of 8 and one of 4: no one-lane steps at all.)
template <class Step>
HWY_INLINE void for_each_vector(int64_t n, Step step) {
  const hn::ScalableTag<float> d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) step(d, i);
  if constexpr (hn::MaxLanes(d) > 8) {
    const hn::CappedTag<float, 8> d8;
    if (i + 8 <= n) step(d8, i), i += 8;
  }
  if constexpr (hn::MaxLanes(d) > 4) {
    const hn::CappedTag<float, 4> d4;
    if (i + 4 <= n) step(d4, i), i += 4;
  }
  const hn::CappedTag<float, 1> d1;
  for (; i < n; ++i) step(d1, i);
}

// Whether descriptor D is the full width of this target (else one of the tail's narrower ones).
template <class D>
constexpr bool is_full_width() {
  return std::is_same_v<D, hn::ScalableTag<float>>;
}

// The sum over i of term(d, i), a vector of terms: two running sums of whole vectors (independent
// additions), added across lanes at the end, then the tail's vectors each added across its lanes.
template <class Term>
HWY_INLINE float sum_of(int64_t n, Term term) {
  const hn::ScalableTag<float> d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  auto sum0 = hn::Zero(d), sum1 = hn::Zero(d);
  int64_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    sum0 = hn::Add(sum0, term(d, i));
    sum1 = hn::Add(sum1, term(d, i + lanes));
  }
  float tail = 0;
  for_each_vector(n - i, [&](auto dv, int64_t j) {
    const auto terms = term(dv, i + j);
    if constexpr (is_full_width<decltype(dv)>()) {
      sum0 = hn::Add(sum0, terms);
    } else {
      tail += hn::GetLane(hn::SumOfLanes(dv, terms));
    }
  });
  return hn::GetLane(hn::SumOfLanes(d, hn::Add(sum0, sum1))) + tail;
}

// e^x for x <= 88, not NaN: the formula of core/cpu/fast_math.h's exp_float (Cephes' expf, 2 ulp),
// a vector at a time. e^x = 2^n e^r, n = round(x / ln 2), r = x - n ln 2 in [-ln2/2, ln2/2]; e^r a
// degree-6 polynomial, 2^n put straight into the exponent bits. Exactly 0 below -87 (no subnormal
// results). Softmax and cross-entropy call it directly: x - max is never above 0.
template <class D, class V>
HWY_INLINE V exp_below_88(D d, V x) {
  const V lowest = hn::Set(d, -87.0f);
  const V clamped = hn::Max(x, lowest);
  const V n = hn::Round(hn::Mul(clamped, hn::Set(d, 1.44269504088896341f)));
  const V r = hn::NegMulAdd(n, hn::Set(d, -2.12194440e-4f), hn::NegMulAdd(n, hn::Set(d, 0.693359375f), clamped));
  V p = hn::Set(d, 1.9875691500e-4f);
  p = hn::MulAdd(p, r, hn::Set(d, 1.3981999507e-3f));
  p = hn::MulAdd(p, r, hn::Set(d, 8.3334519073e-3f));
  p = hn::MulAdd(p, r, hn::Set(d, 4.1665795894e-2f));
  p = hn::MulAdd(p, r, hn::Set(d, 1.6666665459e-1f));
  p = hn::MulAdd(p, r, hn::Set(d, 5.0000001201e-1f));
  p = hn::MulAdd(hn::Mul(p, r), r, hn::Add(r, hn::Set(d, 1.0f)));
  const hn::RebindToSigned<D> di;
  const auto exponent = hn::ShiftLeft<23>(hn::Add(hn::ConvertTo(di, n), hn::Set(di, 127)));
  return hn::IfThenZeroElse(hn::Lt(x, lowest), hn::Mul(p, hn::BitCast(d, exponent)));
}

// e^x for every x: +inf above 88, NaN kept. (A NaN never reaches exp_below_88's conversion to
// int, which would be undefined in C++ on the scalar targets.)
template <class D, class V>
HWY_INLINE V exp_of(D d, V x) {
  const V highest = hn::Set(d, 88.0f);
  const auto is_nan = hn::IsNaN(x);
  const V y = exp_below_88(d, hn::IfThenZeroElse(is_nan, hn::Min(x, highest)));
  return hn::IfThenElse(is_nan, x, hn::IfThenElse(hn::Gt(x, highest), hn::Set(d, HUGE_VALF), y));
}

// log x: Highway's Log (4 ulp) for x in (0, inf), and the C library's answers elsewhere:
// log 0 = -inf, log(x < 0) = NaN, log inf = inf, NaN kept.
template <class D, class V>
HWY_INLINE V log_of(D d, V x) {
  const V zero = hn::Zero(d), infinity = hn::Set(d, HUGE_VALF);
  V y = hn::Log(d, x);
  y = hn::IfThenElse(hn::Eq(x, zero), hn::Neg(infinity), y);
  y = hn::IfThenElse(hn::Eq(x, infinity), infinity, y);
  const V nan = hn::Set(d, std::numeric_limits<float>::quiet_NaN());
  y = hn::IfThenElse(hn::Lt(x, zero), nan, y);
  return hn::IfThenElse(hn::IsNaN(x), x, y);
}

// tanh x: Highway's Tanh (4 ulp), NaN kept (and kept away from Tanh, which converts to int inside).
template <class D, class V>
HWY_INLINE V tanh_of(D d, V x) {
  const auto is_nan = hn::IsNaN(x);
  return hn::IfThenElse(is_nan, x, hn::Tanh(d, hn::IfThenZeroElse(is_nan, x)));
}

// 1 / v, divided: the same bits in every lane of every width. (The CPU's approximate reciprocal
// and a Newton step were cheaper, but under AVX-512 a 512-bit vector's estimate has 14 bits and a
// 256- or 128-bit one's 12: GELU of the last 1 to 15 floats of a piece of an array, which take
// narrower vectors, differed in the last bit from the same floats elsewhere, so a result depended
// on where oneTBB cut the array.)
template <class D, class V>
HWY_INLINE V reciprocal_of(D d, V v) {
  return hn::Div(hn::Set(d, 1.0f), v);
}

// The activations of core/activations.inc (the formulas the scalar and CUDA kernels compute), here
// for this target's vectors: the file is a piece of this namespace, built with its instructions.
#include "core/activations.inc"

// Phi(x) = (1 + erf(x / sqrt 2)) / 2, the standard normal distribution function, given
// gauss = e^(-x^2 / 2) (which GELU's derivative needs too). With a = |x| / sqrt 2:
//   erf(a) = 1 - (a1 t + a2 t^2 + a3 t^3 + a4 t^4 + a5 t^5) e^(-a^2),  t = 1 / (1 + p a),
// Abramowitz & Stegun 7.1.26, and erf is odd.
template <class D, class V>
HWY_INLINE V normal_cdf_of(D d, V x, V gauss_of_x) {
  // (a is capped at 10, where erf is 1 in float32 already: t stays finite for x = +-inf)
  const V a = hn::Min(hn::Mul(hn::Abs(x), hn::Set(d, static_cast<float>(kInvSqrt2))), hn::Set(d, 10.0f));
  const V t = reciprocal_of(d, hn::MulAdd(hn::Set(d, 0.3275911f), a, hn::Set(d, 1.0f)));
  V poly = hn::Set(d, 1.061405429f);
  poly = hn::MulAdd(poly, t, hn::Set(d, -1.453152027f));
  poly = hn::MulAdd(poly, t, hn::Set(d, 1.421413741f));
  poly = hn::MulAdd(poly, t, hn::Set(d, -0.284496736f));
  poly = hn::MulAdd(poly, t, hn::Set(d, 0.254829592f));
  const V erf_of_a = hn::NegMulAdd(hn::Mul(poly, t), gauss_of_x, hn::Set(d, 1.0f));
  return hn::Mul(hn::Set(d, 0.5f), hn::Add(hn::Set(d, 1.0f), hn::CopySign(erf_of_a, x)));
}

// The arithmetic core/activations.inc asks of its values, for a vector of float32 of descriptor D.
template <class D>
struct VectorMath {
  using V = hn::Vec<D>;
  D d;
  HWY_INLINE V constant(double c) const { return hn::Set(d, static_cast<float>(c)); }
  HWY_INLINE V add(V a, V b) const { return hn::Add(a, b); }
  HWY_INLINE V mul(V a, V b) const { return hn::Mul(a, b); }
  HWY_INLINE V div(V a, V b) const { return hn::Div(a, b); }
  HWY_INLINE V mul_add(V a, V b, V c) const { return hn::MulAdd(a, b, c); }         // a b + c, fused
  HWY_INLINE V neg_mul_add(V a, V b, V c) const { return hn::NegMulAdd(a, b, c); }  // c - a b, fused
  HWY_INLINE V negative_abs(V x) const { return hn::Neg(hn::Abs(x)); }
  HWY_INLINE V where_non_negative(V x, V a, V b) const { return hn::IfThenElse(hn::Ge(x, hn::Zero(d)), a, b); }
  HWY_INLINE V exp_of(V x) const { return HWY_NAMESPACE::exp_of(d, x); }
  HWY_INLINE V tanh_of(V x) const { return HWY_NAMESPACE::tanh_of(d, x); }
  HWY_INLINE V normal_cdf(V x, V gauss_of_x) const { return normal_cdf_of(d, x, gauss_of_x); }
  HWY_INLINE V normal_cdf(V x) const { return normal_cdf_of(d, x, gauss(*this, x)); }
};

template <UnaryOp f, class D, class V>
HWY_INLINE V apply(D d, V x) {
  const VectorMath<D> m{d};
  switch (f) {
    case UnaryOp::exp: return exp_of(d, x);
    case UnaryOp::log: return log_of(d, x);
    case UnaryOp::tanh: return tanh_of(d, x);
    case UnaryOp::sigmoid: return sigmoid(m, x);
    case UnaryOp::gelu: return gelu(m, x);
    case UnaryOp::gelu_derivative: return gelu_derivative(m, x);
    case UnaryOp::gelu_tanh: return gelu_tanh(m, x);
    case UnaryOp::gelu_tanh_derivative: return gelu_tanh_derivative(m, x);
    default: return x;  // not instantiated: map() takes only the ops above
  }
}

// y = f(x), with f fixed at compile time: one loop per function, no switch per vector.
template <UnaryOp f>
void map_run(const float* x, float* y, int64_t n) {
  for_each_vector(n, [&](auto d, int64_t i) { hn::StoreU(apply<f>(d, hn::LoadU(d, x + i)), d, y + i); });
}

void Map_(UnaryOp f, const float* x, float* y, int64_t n) {
  switch (f) {
    case UnaryOp::exp: return map_run<UnaryOp::exp>(x, y, n);
    case UnaryOp::log: return map_run<UnaryOp::log>(x, y, n);
    case UnaryOp::tanh: return map_run<UnaryOp::tanh>(x, y, n);
    case UnaryOp::sigmoid: return map_run<UnaryOp::sigmoid>(x, y, n);
    case UnaryOp::gelu: return map_run<UnaryOp::gelu>(x, y, n);
    case UnaryOp::gelu_tanh: return map_run<UnaryOp::gelu_tanh>(x, y, n);
    case UnaryOp::gelu_derivative: return map_run<UnaryOp::gelu_derivative>(x, y, n);
    case UnaryOp::gelu_tanh_derivative: return map_run<UnaryOp::gelu_tanh_derivative>(x, y, n);
    default: return;  // map() takes only the ops above
  }
}

// a = f(h) and g = g f'(h) from one evaluation of f's inner function (Phi and the gauss term for
// gelu, tanh u for gelu_tanh), with the same operations as apply<f> and apply<f's derivative>:
// the same bits as the two maps and a multiply, in one pass over memory.
template <UnaryOp f>
void activation_and_slope_run(const float* h, float* a, float* g, int64_t n) {
  static_assert(f == UnaryOp::gelu || f == UnaryOp::gelu_tanh);
  for_each_vector(n, [&](auto d, int64_t i) {
    const VectorMath<decltype(d)> m{d};
    const auto x = hn::LoadU(d, h + i);
    hn::Vec<decltype(d)> activated, slope;
    if constexpr (f == UnaryOp::gelu) {
      const auto gauss_of_x = gauss(m, x), cdf = m.normal_cdf(x, gauss_of_x);
      activated = m.mul(x, cdf);
      slope = gelu_slope_from(m, x, gauss_of_x, cdf);
    } else {
      const auto t = gelu_tanh_inner(m, x);
      activated = gelu_tanh_from(m, x, t);
      slope = gelu_tanh_slope_from(m, x, t);
    }
    hn::StoreU(activated, d, a + i);
    hn::StoreU(hn::Mul(hn::LoadU(d, g + i), slope), d, g + i);
  });
}

void ActivationAndSlope_(UnaryOp f, const float* h, float* a, float* g, int64_t n) {
  if (f == UnaryOp::gelu) return activation_and_slope_run<UnaryOp::gelu>(h, a, g, n);
  activation_and_slope_run<UnaryOp::gelu_tanh>(h, a, g, n);
}

template <BinaryOp op, class D, class V>
HWY_INLINE V arithmetic_of(D, V a, V b) {
  if constexpr (op == BinaryOp::add) return hn::Add(a, b);
  if constexpr (op == BinaryOp::sub) return hn::Sub(a, b);
  if constexpr (op == BinaryOp::mul) return hn::Mul(a, b);
  if constexpr (op == BinaryOp::div) return hn::Div(a, b);
}

// out = a op b; a broadcast operand (a step of 0) is one vector of its first element.
template <BinaryOp op>
void arithmetic_run(const float* a, int64_t a_step, const float* b, int64_t b_step, float* out, int64_t n) {
  if (a_step == 1 && b_step == 1) {
    for_each_vector(n, [&](auto d, int64_t i) {
      hn::StoreU(arithmetic_of<op>(d, hn::LoadU(d, a + i), hn::LoadU(d, b + i)), d, out + i);
    });
  } else if (a_step == 1) {
    for_each_vector(n, [&](auto d, int64_t i) {
      hn::StoreU(arithmetic_of<op>(d, hn::LoadU(d, a + i), hn::Set(d, *b)), d, out + i);
    });
  } else {
    for_each_vector(n, [&](auto d, int64_t i) {
      hn::StoreU(arithmetic_of<op>(d, hn::Set(d, *a), hn::LoadU(d, b + i)), d, out + i);
    });
  }
}

void Arithmetic_(BinaryOp op, const float* a, int64_t a_step, const float* b, int64_t b_step, float* out, int64_t n) {
  switch (op) {
    case BinaryOp::add: return arithmetic_run<BinaryOp::add>(a, a_step, b, b_step, out, n);
    case BinaryOp::sub: return arithmetic_run<BinaryOp::sub>(a, a_step, b, b_step, out, n);
    case BinaryOp::mul: return arithmetic_run<BinaryOp::mul>(a, a_step, b, b_step, out, n);
    case BinaryOp::div: return arithmetic_run<BinaryOp::div>(a, a_step, b, b_step, out, n);
    default: return;  // arithmetic() takes only the four ops above
  }
}

// Whole vectors of doubles (dd), each from a half-width vector of floats (df) widened; the tail one
// element at a time.
void AddRowToTotals_(const float* row, double* totals, int64_t n) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(dd));
  int64_t j = 0;
  for (; j + lanes <= n; j += lanes) {
    hn::StoreU(hn::Add(hn::LoadU(dd, totals + j), hn::PromoteTo(dd, hn::LoadU(df, row + j))), dd, totals + j);
  }
  for (; j < n; ++j) totals[j] += row[j];
}

// The largest lane of v. Highway 1.0's MaxOfLanes on its EMU128 target starts from the lowest
// finite float, so a vector of -inf came out as -3.4e38: there the lanes are compared one by one.
// (Everywhere else MaxOfLanes is right, and 15% faster on softmax's rows of 28 under AVX-512.)
template <class D>
float largest_lane(D d, hn::Vec<D> v) {
#if HWY_TARGET == HWY_EMU128
  HWY_ALIGN float lanes[hn::MaxLanes(d)];
  hn::Store(v, d, lanes);
  return *std::max_element(lanes, lanes + hn::Lanes(d));
#else
  return hn::GetLane(hn::MaxOfLanes(d, v));
#endif
}

float Max_(const float* x, int64_t n) {
  const hn::ScalableTag<float> d;
  auto maximum = hn::Set(d, -HUGE_VALF);
  float tail_maximum = -HUGE_VALF;
  bool nan_seen = false;
  for_each_vector(n, [&](auto dv, int64_t i) {
    const auto v = hn::LoadU(dv, x + i);
    nan_seen = nan_seen || !hn::AllFalse(dv, hn::IsNaN(v));
    if constexpr (is_full_width<decltype(dv)>()) {
      maximum = hn::Max(maximum, v);
    } else {
      tail_maximum = std::max(tail_maximum, largest_lane(dv, v));
    }
  });
  if (nan_seen) return std::numeric_limits<float>::quiet_NaN();
  return std::max(largest_lane(d, maximum), tail_maximum);
}

float Sum_(const float* x, int64_t n) {
  return sum_of(n, [&](auto d, int64_t i) { return hn::LoadU(d, x + i); });
}

float ExpShifted_(const float* x, float shift, float* y, int64_t n) {
  return sum_of(n, [&](auto d, int64_t i) {
    const auto e = exp_below_88(d, hn::Sub(hn::LoadU(d, x + i), hn::Set(d, shift)));  // (x - shift <= 0)
    if (y) hn::StoreU(e, d, y + i);
    return e;
  });
}

// A short row, lanes <= n <= 4 lanes (on targets of 4 lanes or more: attention's rows of 28), in
// whole vectors only: those at 0, lanes, ... below `last` = n - lanes, and the vector at `last`,
// which ends at n and overlaps the one before by `overlap` lanes (left out of sums, written twice
// with the same bits). One reduction a pass, where the general loops reduce each narrower tail
// vector apart (rows of 28 under AVX-512: 16 + 8 + 4).
struct ShortRow {
  int64_t last;
  size_t overlap;

  static bool fits(int64_t lanes, int64_t n) { return lanes >= 4 && n >= lanes && n <= 4 * lanes; }
  ShortRow(int64_t lanes, int64_t n) : last(n - lanes), overlap(static_cast<size_t>((lanes - n % lanes) % lanes)) {}
};

// Softmax of a ShortRow. The last vector is read before anything is written, so y may be x.
template <class D>
HWY_INLINE void softmax_short_row(D d, const float* x, float* y, int64_t n, bool log) {
  const auto [last, overlap] = ShortRow(static_cast<int64_t>(hn::Lanes(d)), n);
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const auto last_x = hn::LoadU(d, x + last);
  auto maximum = last_x;
  auto nan = hn::IsNaN(last_x);
  for (int64_t i = 0; i < last; i += lanes) {
    const auto v = hn::LoadU(d, x + i);
    maximum = hn::Max(maximum, v), nan = hn::Or(nan, hn::IsNaN(v));
  }
  const float max = largest_lane(d, maximum);
  if (!hn::AllFalse(d, nan) || !std::isfinite(max)) {  // a NaN, an infinity, or a row of -inf
    const auto all_nan = hn::Set(d, std::numeric_limits<float>::quiet_NaN());
    for (int64_t i = 0; i < last; i += lanes) hn::StoreU(all_nan, d, y + i);
    return hn::StoreU(all_nan, d, y + last);
  }
  const auto shift = hn::Set(d, max);
  const auto last_e = exp_below_88(d, hn::Sub(last_x, shift));
  auto total = hn::IfThenZeroElse(hn::FirstN(d, overlap), last_e);
  for (int64_t i = 0; i < last; i += lanes) {
    const auto e = exp_below_88(d, hn::Sub(hn::LoadU(d, x + i), shift));
    if (!log) hn::StoreU(e, d, y + i);
    total = hn::Add(total, e);
  }
  const float sum = hn::GetLane(hn::SumOfLanes(d, total));
  if (log) {  // (x - max) - log(total), as below
    const auto log_total = hn::Set(d, static_cast<float>(std::log(double(sum))));
    for (int64_t i = 0; i < last; i += lanes) {
      hn::StoreU(hn::Sub(hn::Sub(hn::LoadU(d, x + i), shift), log_total), d, y + i);
    }
    return hn::StoreU(hn::Sub(hn::Sub(last_x, shift), log_total), d, y + last);
  }
  const auto factor = hn::Set(d, static_cast<float>(1.0 / double(sum)));
  for (int64_t i = 0; i < last; i += lanes) hn::StoreU(hn::Mul(hn::LoadU(d, y + i), factor), d, y + i);
  hn::StoreU(hn::Mul(last_e, factor), d, y + last);
}

void Softmax_(const float* x, float* y, int64_t n, bool log) {
  const hn::ScalableTag<float> d;
  if (ShortRow::fits(static_cast<int64_t>(hn::Lanes(d)), n)) return softmax_short_row(d, x, y, n, log);
  const float max = Max_(x, n);
  if (!std::isfinite(max)) {  // a NaN, an infinity, or a row of -inf: every answer is NaN
    const float nan = std::numeric_limits<float>::quiet_NaN();
    return for_each_vector(n, [&](auto d, int64_t i) { hn::StoreU(hn::Set(d, nan), d, y + i); });
  }
  if (log) {  // (x - max) - log(total), not x - (max + log(total)): see normalize.cpp
    const float log_total = static_cast<float>(std::log(double(ExpShifted_(x, max, nullptr, n))));
    for_each_vector(n, [&](auto d, int64_t i) {
      hn::StoreU(hn::Sub(hn::Sub(hn::LoadU(d, x + i), hn::Set(d, max)), hn::Set(d, log_total)), d, y + i);
    });
  } else {
    const float factor = static_cast<float>(1.0 / double(ExpShifted_(x, max, y, n)));
    for_each_vector(n,
                    [&](auto d, int64_t i) { hn::StoreU(hn::Mul(hn::LoadU(d, y + i), hn::Set(d, factor)), d, y + i); });
  }
}

void AttentionStepLine_(const float* q, const float* keys_t, int64_t key_stride, const float* values,
                        int64_t value_stride, int64_t dh, int64_t seen, float scale, const uint8_t* hidden, float* p,
                        float* out) {
  // p = scale (q keys_t): a vector of scores at a time, summed over d in a register
  for_each_vector(seen, [&](auto dv, int64_t s) {
    auto score = hn::Zero(dv);
    for (int64_t d = 0; d < dh; ++d)
      score = hn::MulAdd(hn::Set(dv, q[d]), hn::LoadU(dv, keys_t + d * key_stride + s), score);
    hn::StoreU(hn::Mul(score, hn::Set(dv, scale)), dv, p + s);
  });
  for (int64_t s = 0; hidden && s < seen; ++s) {
    if (hidden[s]) p[s] = -std::numeric_limits<float>::infinity();
  }
  Softmax_(p, p, seen, false);
  // out = p values: a vector of features at a time, summed over s in a register
  for_each_vector(dh, [&](auto dv, int64_t d) {
    auto mixed = hn::Zero(dv);
    for (int64_t s = 0; s < seen; ++s)
      mixed = hn::MulAdd(hn::Set(dv, p[s]), hn::LoadU(dv, values + s * value_stride + d), mixed);
    hn::StoreU(mixed, dv, out + d);
  });
}

// SoftmaxBackward_ of a ShortRow; the last vector is read before dp is written.
template <class D>
HWY_INLINE void softmax_backward_short_row(D d, const float* p, float* dp, float scale, int64_t n) {
  const auto [last, overlap] = ShortRow(static_cast<int64_t>(hn::Lanes(d)), n);
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const auto last_p = hn::LoadU(d, p + last), last_dp = hn::LoadU(d, dp + last);
  auto dot = hn::IfThenZeroElse(hn::FirstN(d, overlap), hn::Mul(last_dp, last_p));
  for (int64_t i = 0; i < last; i += lanes) dot = hn::MulAdd(hn::LoadU(d, dp + i), hn::LoadU(d, p + i), dot);
  const auto total = hn::Set(d, hn::GetLane(hn::SumOfLanes(d, dot))), factor = hn::Set(d, scale);
  for (int64_t i = 0; i < last; i += lanes) {
    const auto centred = hn::Sub(hn::LoadU(d, dp + i), total);
    hn::StoreU(hn::Mul(hn::Mul(hn::LoadU(d, p + i), centred), factor), d, dp + i);
  }
  hn::StoreU(hn::Mul(hn::Mul(last_p, hn::Sub(last_dp, total)), factor), d, dp + last);
}

void SoftmaxBackward_(const float* p, float* dp, float scale, int64_t n) {
  const hn::ScalableTag<float> d;
  if (ShortRow::fits(static_cast<int64_t>(hn::Lanes(d)), n)) return softmax_backward_short_row(d, p, dp, scale, n);
  const float dot = sum_of(n, [&](auto d, int64_t i) { return hn::Mul(hn::LoadU(d, dp + i), hn::LoadU(d, p + i)); });
  for_each_vector(n, [&](auto d, int64_t i) {
    const auto centred = hn::Sub(hn::LoadU(d, dp + i), hn::Set(d, dot));
    hn::StoreU(hn::Mul(hn::Mul(hn::LoadU(d, p + i), centred), hn::Set(d, scale)), d, dp + i);
  });
}

float SquaredDeviations_(const float* x, float mean, int64_t n) {
  return sum_of(n, [&](auto d, int64_t i) {
    const auto deviation = hn::Sub(hn::LoadU(d, x + i), hn::Set(d, mean));
    return hn::Mul(deviation, deviation);
  });
}

// w[i] as a vector, or ones when there is no weight.
template <class D>
HWY_INLINE auto weight_at(D d, const float* w, int64_t i) {
  return w ? hn::LoadU(d, w + i) : hn::Set(d, 1.0f);
}

void LayerNormApply_(const float* x, float mean, float rstd, const float* w, const float* b, float* y, int64_t n) {
  for_each_vector(n, [&](auto d, int64_t i) {
    const auto xhat = hn::Mul(hn::Sub(hn::LoadU(d, x + i), hn::Set(d, mean)), hn::Set(d, rstd));
    const auto bias = b ? hn::LoadU(d, b + i) : hn::Zero(d);
    hn::StoreU(hn::MulAdd(xhat, weight_at(d, w, i), bias), d, y + i);
  });
}

void LayerNormBackwardSums_(const float* x, const float* g, const float* w, float mean, float rstd, int64_t n,
                            float* sum_gw, float* sum_gw_xhat) {
  auto gw_at = [&](auto d, int64_t i) { return hn::Mul(hn::LoadU(d, g + i), weight_at(d, w, i)); };
  *sum_gw = sum_of(n, gw_at);
  *sum_gw_xhat = sum_of(n, [&](auto d, int64_t i) {
    const auto xhat = hn::Mul(hn::Sub(hn::LoadU(d, x + i), hn::Set(d, mean)), hn::Set(d, rstd));
    return hn::Mul(gw_at(d, i), xhat);
  });
}

void LayerNormBackwardApply_(const float* x, const float* g, const float* w, float mean, float rstd, float mean_gw,
                             float mean_gw_xhat, float* dx, int64_t n) {
  for_each_vector(n, [&](auto d, int64_t i) {
    const auto xhat = hn::Mul(hn::Sub(hn::LoadU(d, x + i), hn::Set(d, mean)), hn::Set(d, rstd));
    const auto gw = hn::Mul(hn::LoadU(d, g + i), weight_at(d, w, i));
    const auto centred = hn::NegMulAdd(xhat, hn::Set(d, mean_gw_xhat), hn::Sub(gw, hn::Set(d, mean_gw)));
    hn::StoreU(hn::Mul(hn::Set(d, rstd), centred), d, dx + i);
  });
}

void SoftmaxMinus_(const float* x, float lse, float spread, float g, float* dx, int64_t n) {
  for_each_vector(n, [&](auto d, int64_t i) {
    const auto p = exp_of(d, hn::Sub(hn::LoadU(d, x + i), hn::Set(d, lse)));
    hn::StoreU(hn::Mul(hn::Sub(p, hn::Set(d, spread)), hn::Set(d, g)), d, dx + i);
  });
}

void Adam_(float* p, const float* g, float* m, float* v, const AdamScalars<float>& k, int64_t n) {
  for_each_vector(n, [&](auto d, int64_t i) {
    const auto param = hn::Mul(hn::LoadU(d, p + i), hn::Set(d, k.shrink));       // AdamW's decay
    const auto grad = hn::MulAdd(param, hn::Set(d, k.l2), hn::LoadU(d, g + i));  // Adam's L2 term
    const auto mean =
        hn::MulAdd(hn::LoadU(d, m + i), hn::Set(d, k.beta1), hn::Mul(grad, hn::Set(d, k.one_minus_beta1)));
    const auto square = hn::Mul(hn::Mul(grad, grad), hn::Set(d, k.one_minus_beta2));
    const auto second = hn::MulAdd(hn::LoadU(d, v + i), hn::Set(d, k.beta2), square);
    const auto denominator = hn::Add(hn::Div(hn::Sqrt(second), hn::Set(d, k.sqrt_correction2)), hn::Set(d, k.eps));
    const auto update = hn::Mul(hn::Div(mean, denominator), hn::Set(d, k.step_size));
    hn::StoreU(mean, d, m + i);
    hn::StoreU(second, d, v + i);
    hn::StoreU(hn::Sub(param, update), d, p + i);
  });
}

// Philox-4x32-10 (core/random.cpp's philox4x32) on a vector of 64-bit counters at once, each
// lane holding one 32-bit word of the state in its low half: the two 32x32 -> 64-bit products of a
// round are MulEven of the lanes' low halves.
template <class D64>
struct PhiloxLanes {
  using V = hn::Vec<D64>;
  V c0, c1, c2, c3;

  PhiloxLanes(D64 d64, V counter)
      : c0(hn::And(counter, hn::Set(d64, 0xFFFFFFFFull))),
        c1(hn::ShiftRight<32>(counter)),
        c2(hn::Zero(d64)),
        c3(hn::Zero(d64)) {}

  // One round with the key (k0, k1).
  void round(D64 d64, uint32_t k0, uint32_t k1) {
    const hn::Repartition<uint32_t, D64> d32;
    const auto low_half = hn::Set(d64, 0xFFFFFFFFull);
    const auto p0 = hn::MulEven(hn::BitCast(d32, c0), hn::BitCast(d32, hn::Set(d64, 0xD2511F53ull)));  // u64 lanes
    const auto p1 = hn::MulEven(hn::BitCast(d32, c2), hn::BitCast(d32, hn::Set(d64, 0xCD9E8D57ull)));
    const auto next_c0 = hn::Xor(hn::Xor(hn::ShiftRight<32>(p1), c1), hn::Set(d64, k0));
    const auto next_c2 = hn::Xor(hn::Xor(hn::ShiftRight<32>(p0), c3), hn::Set(d64, k1));
    c1 = hn::And(p1, low_half), c3 = hn::And(p0, low_half), c0 = next_c0, c2 = next_c2;
  }

  // The first two output words, (c0 << 32) | c1 (after the ten rounds).
  V first_words() const { return hn::Or(hn::ShiftLeft<32>(c0), c1); }
};

// The ten rounds on each of `states`, round by round (independent states overlap in the core).
template <class D64, class... States>
HWY_INLINE void philox_rounds(D64 d64, uint64_t seed, States&... states) {
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    (states.round(d64, k0, k1), ...);
    k0 += 0x9E3779B9u, k1 += 0xBB67AE85u;  // the key's Weyl sequence
  }
}

void Uniform_(uint64_t seed, uint64_t first, double low, double high, float* out, int64_t n) {
  int64_t i = 0;
#if HWY_TARGET != HWY_SCALAR  // (one lane cannot hold a 64-bit counter's two 32-bit halves)
  const hn::ScalableTag<uint64_t> d64;
  const hn::Rebind<double, decltype(d64)> df64;
  const hn::Rebind<int64_t, decltype(d64)> di64;
  const hn::Rebind<float, decltype(d64)> df32;
  const float high32 = static_cast<float>(high),
              below_high32 = std::nextafter(high32, -std::numeric_limits<float>::infinity());
  auto store = [&](hn::Vec<decltype(d64)> words, int64_t at) {
    const auto bits = hn::ShiftRight<11>(words);  // 53 random bits
    const auto unit = hn::Mul(hn::ConvertTo(df64, hn::BitCast(di64, bits)), hn::Set(df64, 0x1p-53));
    // low + (high - low) * unit, rounded twice as the scalar code rounds it (no fused multiply-add)
    const auto value = hn::DemoteTo(df32, hn::Add(hn::Set(df64, low), hn::Mul(hn::Set(df64, high - low), unit)));
    // rounding to float32 could land on `high` itself, which the half-open interval excludes
    hn::StoreU(hn::IfThenElse(hn::Ge(value, hn::Set(df32, high32)), hn::Set(df32, below_high32), value), df32,
               out + at);
  };
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d64));
  using State = PhiloxLanes<decltype(d64)>;
  auto counters_from = [&](int64_t at) { return hn::Iota(d64, first + static_cast<uint64_t>(at)); };
  // four vectors of counters a step: their rounds are independent, so the core overlaps them
  // (2.1 GB/s on AVX-512 here, against 1.6 for two and 1.1 for one)
  for (; i + 4 * lanes <= n; i += 4 * lanes) {
    State s0(d64, counters_from(i)), s1(d64, counters_from(i + lanes)), s2(d64, counters_from(i + 2 * lanes)),
        s3(d64, counters_from(i + 3 * lanes));
    philox_rounds(d64, seed, s0, s1, s2, s3);
    store(s0.first_words(), i), store(s1.first_words(), i + lanes);
    store(s2.first_words(), i + 2 * lanes), store(s3.first_words(), i + 3 * lanes);
  }
  for (; i + lanes <= n; i += lanes) {
    State s0(d64, counters_from(i));
    philox_rounds(d64, seed, s0);
    store(s0.first_words(), i);
  }
#endif
  for (; i < n; ++i) out[i] = uniform_float32(seed, first + static_cast<uint64_t>(i), low, high);
}

// round_to_bfloat16 (core/cpu/bfloat16.h) on whole vectors, in integer arithmetic on the bits:
// add 0x7fff plus the lowest kept bit (ties to even), keep the top 16 bits; a NaN keeps its top
// bits with the quiet bit set. The same bits as the scalar function, on every target.
void RoundToBfloat16_(const float* x, uint16_t* y, int64_t n) {
  const hn::ScalableTag<uint32_t> du32;
  const hn::Rebind<int32_t, decltype(du32)> di32;
  const hn::Rebind<uint16_t, decltype(du32)> du16;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(du32));
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto bits = hn::LoadU(du32, reinterpret_cast<const uint32_t*>(x + i));
    const auto top = hn::ShiftRight<16>(bits);
    const auto rounded =
        hn::ShiftRight<16>(hn::Add(bits, hn::Add(hn::Set(du32, 0x7fffu), hn::And(top, hn::Set(du32, 1u)))));
    const auto magnitude = hn::BitCast(di32, hn::And(bits, hn::Set(du32, 0x7fffffffu)));  // >= 0 as int32
    const auto is_nan = hn::RebindMask(du32, hn::Gt(magnitude, hn::Set(di32, 0x7f800000)));
    const auto kept = hn::IfThenElse(is_nan, hn::Or(top, hn::Set(du32, 0x40u)), rounded);  // each < 2^16
    hn::StoreU(hn::DemoteTo(du16, hn::BitCast(di32, kept)), du16, y + i);
  }
  for (; i < n; ++i) y[i] = cpu::round_to_bfloat16(x[i]);
}

int64_t Target_() { return HWY_TARGET; }

}  // namespace axiom::core::cpu::vec::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace axiom::core::cpu::vec {

HWY_EXPORT(Map_);
HWY_EXPORT(ActivationAndSlope_);
HWY_EXPORT(Arithmetic_);
HWY_EXPORT(AddRowToTotals_);
HWY_EXPORT(Max_);
HWY_EXPORT(Sum_);
HWY_EXPORT(Uniform_);
HWY_EXPORT(ExpShifted_);
HWY_EXPORT(Softmax_);
HWY_EXPORT(AttentionStepLine_);
HWY_EXPORT(SoftmaxBackward_);
HWY_EXPORT(SquaredDeviations_);
HWY_EXPORT(LayerNormApply_);
HWY_EXPORT(LayerNormBackwardSums_);
HWY_EXPORT(LayerNormBackwardApply_);
HWY_EXPORT(SoftmaxMinus_);
HWY_EXPORT(Adam_);
HWY_EXPORT(RoundToBfloat16_);
HWY_EXPORT(Target_);

bool has_map(UnaryOp f) {
  switch (f) {
    case UnaryOp::exp:
    case UnaryOp::log:
    case UnaryOp::tanh:
    case UnaryOp::sigmoid:
    case UnaryOp::gelu:
    case UnaryOp::gelu_tanh:
    case UnaryOp::gelu_derivative:
    case UnaryOp::gelu_tanh_derivative: return true;
    default: return false;
  }
}
void map(UnaryOp f, const float* x, float* y, int64_t n) {
  if (!has_map(f)) throw Error("vec::map", "no SIMD kernel for ", op_name(f));
  HWY_DYNAMIC_DISPATCH(Map_)(f, x, y, n);
}
void activation_and_slope(UnaryOp f, const float* h, float* a, float* g, int64_t n) {
  if (f != UnaryOp::gelu && f != UnaryOp::gelu_tanh)
    throw Error("activation_and_slope", "f must be gelu or gelu_tanh, got ", op_name(f));
  HWY_DYNAMIC_DISPATCH(ActivationAndSlope_)(f, h, a, g, n);
}
bool has_arithmetic(BinaryOp op) {
  return op == BinaryOp::add || op == BinaryOp::sub || op == BinaryOp::mul || op == BinaryOp::div;
}
void arithmetic(BinaryOp op, const float* a, int64_t a_step, const float* b, int64_t b_step, float* out, int64_t n) {
  if (!has_arithmetic(op)) throw Error("vec::arithmetic", "no SIMD kernel for ", op_name(op));
  HWY_DYNAMIC_DISPATCH(Arithmetic_)(op, a, a_step, b, b_step, out, n);
}
void add_row_to_totals(const float* row, double* totals, int64_t n) {
  HWY_DYNAMIC_DISPATCH(AddRowToTotals_)(row, totals, n);
}
float max(const float* x, int64_t n) { return HWY_DYNAMIC_DISPATCH(Max_)(x, n); }
float sum(const float* x, int64_t n) { return HWY_DYNAMIC_DISPATCH(Sum_)(x, n); }
void attention_step_line(const float* q, const float* keys_t, int64_t key_stride, const float* values,
                         int64_t value_stride, int64_t dh, int64_t seen, float scale, const uint8_t* hidden, float* p,
                         float* out) {
  HWY_DYNAMIC_DISPATCH(AttentionStepLine_)
  (q, keys_t, key_stride, values, value_stride, dh, seen, scale, hidden, p, out);
}
void uniform(uint64_t seed, uint64_t first, double low, double high, float* out, int64_t n) {
  HWY_DYNAMIC_DISPATCH(Uniform_)(seed, first, low, high, out, n);
}
float exp_shifted(const float* x, float shift, float* y, int64_t n) {
  return HWY_DYNAMIC_DISPATCH(ExpShifted_)(x, shift, y, n);
}
void softmax(const float* x, float* y, int64_t n, bool log) { HWY_DYNAMIC_DISPATCH(Softmax_)(x, y, n, log); }
void softmax_backward(const float* p, float* dp, float scale, int64_t n) {
  HWY_DYNAMIC_DISPATCH(SoftmaxBackward_)(p, dp, scale, n);
}
float squared_deviations(const float* x, float mean, int64_t n) {
  return HWY_DYNAMIC_DISPATCH(SquaredDeviations_)(x, mean, n);
}
void layer_norm_apply(const float* x, float mean, float rstd, const float* w, const float* b, float* y, int64_t n) {
  HWY_DYNAMIC_DISPATCH(LayerNormApply_)(x, mean, rstd, w, b, y, n);
}
void layer_norm_backward_sums(const float* x, const float* g, const float* w, float mean, float rstd, int64_t n,
                              float* sum_gw, float* sum_gw_xhat) {
  HWY_DYNAMIC_DISPATCH(LayerNormBackwardSums_)(x, g, w, mean, rstd, n, sum_gw, sum_gw_xhat);
}
void layer_norm_backward_apply(const float* x, const float* g, const float* w, float mean, float rstd, float mean_gw,
                               float mean_gw_xhat, float* dx, int64_t n) {
  HWY_DYNAMIC_DISPATCH(LayerNormBackwardApply_)(x, g, w, mean, rstd, mean_gw, mean_gw_xhat, dx, n);
}
void softmax_minus(const float* x, float lse, float spread, float g, float* dx, int64_t n) {
  HWY_DYNAMIC_DISPATCH(SoftmaxMinus_)(x, lse, spread, g, dx, n);
}
void adam(float* p, const float* g, float* m, float* v, const AdamScalars<float>& k, int64_t n) {
  HWY_DYNAMIC_DISPATCH(Adam_)(p, g, m, v, k, n);
}

void round_to_bfloat16(const float* x, uint16_t* y, int64_t n) { HWY_DYNAMIC_DISPATCH(RoundToBfloat16_)(x, y, n); }

std::string target() { return hwy::TargetName(HWY_DYNAMIC_DISPATCH(Target_)()); }

std::vector<std::string> targets() {
  const std::string in_use = target();
  hwy::SetSupportedTargetsForTest(0);  // what the CPU has, not what a test chose
  std::vector<std::string> names;
  for (int64_t bit : hwy::SupportedAndGeneratedTargets()) names.push_back(hwy::TargetName(bit));
  use_target(in_use);
  return names;
}

namespace {

// The target bit of this name (case ignored) among those this CPU and build have, or 0.
int64_t find_target(const std::string& name) {
  hwy::SetSupportedTargetsForTest(0);
  for (int64_t bit : hwy::SupportedAndGeneratedTargets()) {
    if (strcasecmp(hwy::TargetName(bit), name.c_str()) == 0) return bit;
  }
  return 0;
}

// Uses the target of this name, or throws an Error from `op` listing the targets there are.
void use_target_or_throw(std::string_view op, const std::string& name) {
  const int64_t bit = find_target(name);
  if (bit == 0) {
    std::string known;
    for (int64_t b : hwy::SupportedAndGeneratedTargets())
      known += std::string(known.empty() ? "" : ", ") + hwy::TargetName(b);
    throw Error(op, "this CPU and build have no SIMD target '", name, "'; they have: ", known);
  }
  hwy::SetSupportedTargetsForTest(bit);
}

}  // namespace

void use_target(const std::string& name) { use_target_or_throw("SIMD target", name); }

void use_best_target() { hwy::SetSupportedTargetsForTest(0); }

void use_target_from_environment() {
  const char* name = std::getenv("AXIOM_SIMD_TARGET");
  if (name == nullptr || *name == '\0') return use_best_target();
  use_target_or_throw("AXIOM_SIMD_TARGET", name);
}

}  // namespace axiom::core::cpu::vec
#endif  // HWY_ONCE
