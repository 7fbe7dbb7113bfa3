// The draw of core::categorical for one row of logits, written once: the CPU runs it for float64
// rows (its float32 rows take the same steps with SIMD exps, core/cpu/normalize.cpp), the GPU in
// one thread per row (core/cuda/normalize.cu).
//
// Inverse-CDF sampling: the row's weights are w_v = exp(logits_v / T - m), m the largest
// logits_v / T, so softmax(logits / T)_v = w_v / total. The value drawn with the uniform u in
// [0, 1) is the first v whose running total w_0 + ... + w_v passes u * total. A value of weight 0
// is never drawn. Both totals are sums in double, whatever the logits' dtype: a float32 sum stops
// growing at 2^24, and drifts from a sum in another order long before. When rounding still leaves
// u * total unpassed (u within about V ulps of double of 1), the draw is the last value of
// positive weight.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/host_device.h"

namespace axiom::core::formulas {

// The first element that is NaN, else the first largest: argmax's answer (NaN wins). The draw of a
// row whose largest logit / T is not finite: a NaN, +inf (every draw goes to the infinite
// logits, as T -> 0 sends it to the largest), or a row of -inf.
template <typename T>
AXIOM_HOST_DEVICE int64_t argmax_of_row(const T* x, int64_t n) {
  int64_t best = 0;
  for (int64_t v = 0; v < n; ++v) {
    if (x[v] != x[v]) return v;
    if (x[v] > x[best]) best = v;
  }
  return best;
}

// u clamped into [0, 1] (a NaN to 0), times the total: where the running total must pass.
template <typename T>
AXIOM_HOST_DEVICE double target_of(T u, double total) {
  return (u > 0 ? (u < 1 ? static_cast<double>(u) : 1.0) : 0.0) * total;
}

// The first v whose running total of weight_of(0), ..., weight_of(v) passes target, else the
// last v of positive weight.
template <typename Weight>
AXIOM_HOST_DEVICE int64_t first_passing(Weight weight_of, int64_t n, double target) {
  double running = 0;
  int64_t last_positive = 0;
  for (int64_t v = 0; v < n; ++v) {
    const double w = weight_of(v);
    running += w;
    if (w > 0) last_positive = v;
    if (running > target) return v;
  }
  return last_positive;
}

// One row of n logits drawn at temperature T > 0 with the uniform u. The weights are computed
// twice (for the total, then for the running total) rather than stored.
template <typename T>
AXIOM_HOST_DEVICE int64_t draw_row(const T* logits, int64_t n, T u, T temperature) {
  const int64_t largest = argmax_of_row(logits, n);
  const T m = logits[largest] / temperature;  // dividing by T > 0 keeps the order
  if (!(m > -INFINITY && m < INFINITY)) return largest;
  auto weight_of = [&](int64_t v) { return std::exp(logits[v] / temperature - m); };
  double total = 0;
  for (int64_t v = 0; v < n; ++v) total += weight_of(v);
  return first_passing(weight_of, n, target_of(u, total));
}

}  // namespace axiom::core::formulas
