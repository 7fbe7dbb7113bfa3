// Learning-rate schedules (schedule.h).
#include "optim/schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace axiom::optim {

Schedule::Schedule(Kind kind, double base_lr, Warmup warmup) : kind_(kind), base_lr_(base_lr), warmup_(warmup) {
  if (!(base_lr >= 0) || !std::isfinite(base_lr))
    throw Error("Schedule", "base_lr must be finite and >= 0, got ", base_lr);
  if (warmup.steps < 0) throw Error("Schedule", "warmup steps must be >= 0, got ", warmup.steps);
  if (!(warmup.start_factor >= 0 && warmup.start_factor <= 1)) {
    throw Error("Schedule", "warmup start_factor must be in [0, 1], got ", warmup.start_factor);
  }
}

Schedule Schedule::constant(double base_lr, Warmup warmup) { return Schedule(Kind::constant, base_lr, warmup); }

// A decay from base_lr to min_lr over decay_steps steps (cosine or linear), its arguments checked.
Schedule Schedule::decay(Kind kind, const char* name, double base_lr, Warmup warmup, int64_t decay_steps,
                         double min_lr) {
  Schedule s(kind, base_lr, warmup);
  if (decay_steps < 1) throw Error("Schedule", name, " decay_steps must be >= 1, got ", decay_steps);
  if (!(min_lr >= 0 && min_lr <= base_lr)) {
    throw Error("Schedule", name, " min_lr must be in [0, base_lr = ", base_lr, "], got ", min_lr);
  }
  s.decay_steps_ = decay_steps;
  s.min_lr_ = min_lr;
  return s;
}

Schedule Schedule::cosine(double base_lr, Warmup warmup, int64_t decay_steps, double min_lr) {
  return decay(Kind::cosine, "cosine", base_lr, warmup, decay_steps, min_lr);
}

Schedule Schedule::linear(double base_lr, Warmup warmup, int64_t decay_steps, double min_lr) {
  return decay(Kind::linear, "linear", base_lr, warmup, decay_steps, min_lr);
}

Schedule Schedule::exponential(double base_lr, Warmup warmup, double gamma) {
  Schedule s(Kind::exponential, base_lr, warmup);
  if (!(gamma > 0 && gamma <= 1)) throw Error("Schedule", "exponential gamma must be in (0, 1], got ", gamma);
  s.gamma_ = gamma;
  return s;
}

Schedule Schedule::inverse_sqrt(double base_lr, Warmup warmup) {
  if (warmup.steps < 1) {
    throw Error("Schedule", "inverse_sqrt needs warmup steps >= 1 (lr = base_lr * sqrt(W) / sqrt(step)), got ",
                warmup.steps);
  }
  return Schedule(Kind::inverse_sqrt, base_lr, warmup);
}

double Schedule::lr(int64_t step) const {
  if (step < 0) throw Error("Schedule", "step must be >= 0, got ", step);
  const auto s = static_cast<double>(step);
  const auto W = static_cast<double>(warmup_.steps);
  // warmup: base_lr * (f + (1 - f) * s / W)
  if (step < warmup_.steps) return base_lr_ * (warmup_.start_factor + (1 - warmup_.start_factor) * s / W);
  const double t = s - W;  // steps since the warmup ended
  switch (kind_) {
    case Kind::constant: return base_lr_;
    case Kind::cosine: {
      // min_lr + (base_lr - min_lr) * (1 + cos(pi * min(t, T) / T)) / 2
      const auto T = static_cast<double>(decay_steps_);
      return min_lr_ + (base_lr_ - min_lr_) * (1 + std::cos(std::numbers::pi * std::min(t, T) / T)) / 2;
    }
    case Kind::linear: {
      // base_lr - (base_lr - min_lr) * min(t, T) / T
      const auto T = static_cast<double>(decay_steps_);
      return base_lr_ - (base_lr_ - min_lr_) * std::min(t, T) / T;
    }
    case Kind::exponential: return base_lr_ * std::pow(gamma_, t);           // base_lr * gamma^t
    case Kind::inverse_sqrt: return base_lr_ * std::sqrt(W) / std::sqrt(s);  // base_lr * sqrt(W) / sqrt(s)
  }
  return base_lr_;
}

}  // namespace axiom::optim
