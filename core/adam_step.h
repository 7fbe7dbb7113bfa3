// One Adam (or AdamW) step for one element, shared by the CPU and CUDA kernels of
// core::adam_update, so that both devices compute it with the same formula (optim/adam.cpp
// derives it):
//   p = p * (1 - lr * lambda)                         (AdamW: decoupled weight decay)
//   g = g + lambda * p                                (Adam: L2 weight decay)
//   m = beta1 * m + (1 - beta1) * g
//   v = beta2 * v + (1 - beta2) * g^2
//   p = p - (lr / (1 - beta1^t)) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
#pragma once

#include <cmath>
#include <cstdint>

#include "host_device.h"  // AXIOM_HOST_DEVICE: nvcc compiles the formula for both sides
#include "tensor.h"

namespace axiom::core {

// The hyperparameters of one step, as the optimizer holds them.
struct AdamStep {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0;
  bool decoupled_weight_decay = false;  // AdamW
  int64_t step = 1;                     // t: 1 for the first step
};

// One parameter's share of core::adam_update_many: param, exp_avg and exp_avg_sq (contiguous,
// updated in place) and grad, of one shape, with the step it takes.
struct AdamUpdate {
  Tensor param, grad, exp_avg, exp_avg_sq;
  AdamStep step;
};

// The same, reduced to the constants of the per-element formula, in the parameter's dtype.
template <typename T>
struct AdamScalars {
  T shrink;  // 1 - lr * lambda for AdamW, else 1
  T l2;      // lambda for Adam, else 0
  T beta1, one_minus_beta1, beta2, one_minus_beta2;
  T sqrt_correction2;  // sqrt(1 - beta2^t)
  T eps;
  T step_size;  // lr / (1 - beta1^t)
};

template <typename T>
AdamScalars<T> adam_scalars(const AdamStep& s) {
  const double t = static_cast<double>(s.step);
  const bool decoupled = s.decoupled_weight_decay;
  return {static_cast<T>(decoupled ? 1 - s.lr * s.weight_decay : 1),
          static_cast<T>(decoupled ? 0 : s.weight_decay),
          static_cast<T>(s.beta1),
          static_cast<T>(1 - s.beta1),
          static_cast<T>(s.beta2),
          static_cast<T>(1 - s.beta2),
          static_cast<T>(std::sqrt(1 - std::pow(s.beta2, t))),
          static_cast<T>(s.eps),
          static_cast<T>(s.lr / (1 - std::pow(s.beta1, t)))};
}

// p, m and v are updated in place from the gradient g.
template <typename T>
AXIOM_HOST_DEVICE inline void adam_element(T& p, T g, T& m, T& v, const AdamScalars<T>& k) {
  p = p * k.shrink;
  g = g + p * k.l2;
  m = m * k.beta1 + g * k.one_minus_beta1;
  v = v * k.beta2 + (g * g) * k.one_minus_beta2;
  p = p - (m / (std::sqrt(v) / k.sqrt_correction2 + k.eps)) * k.step_size;
}

}  // namespace axiom::core
