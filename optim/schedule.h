// Learning-rate schedules: a linear warmup, then constant, cosine or linear decay, exponential
// decay or inverse square root. A Schedule is a pure function of the step, so nothing about it
// needs saving: a resumed run asks it for the lr of the step it resumes at.
//
//   auto schedule = axiom::optim::Schedule::cosine(3e-4, {.steps = 1000}, 100000, 3e-5);
//   for (int64_t step = 0; step < 100000; ++step) {
//     opt.set_lr(schedule.lr(step));   // or schedule.apply(opt, step)
//     ...
//     opt.step();
//   }
//
// Steps count from 0: lr(0) is the rate of the first update.
#pragma once

#include <cstdint>

#include "optimizer.h"

namespace axiom::optim {

// lr(s) = base_lr * (start_factor + (1 - start_factor) * s / steps)   for s < steps
// so lr(0) = start_factor * base_lr and lr(steps) = base_lr. No warmup when steps = 0.
struct Warmup {
  int64_t steps = 0;
  double start_factor = 0;  // in [0, 1]; 0 (the default) starts from 0, as Hugging Face's warmup does
};

class Schedule {
 public:
  enum class Kind { constant, cosine, linear, exponential, inverse_sqrt };

  // After the warmup, with t = s - warmup.steps:
  //   constant:      lr = base_lr
  //   cosine:        lr = min_lr + (base_lr - min_lr) * (1 + cos(pi * min(t, decay_steps) / decay_steps)) / 2
  //                  (from base_lr down to min_lr over decay_steps steps, then min_lr)
  //   linear:        lr = base_lr - (base_lr - min_lr) * min(t, decay_steps) / decay_steps
  //                  (a straight line from base_lr to min_lr over decay_steps steps, then min_lr)
  //   exponential:   lr = base_lr * gamma^t           (gamma in (0, 1] per step)
  //   inverse_sqrt:  lr = base_lr * sqrt(W) / sqrt(s) (W = warmup.steps >= 1; the original
  //                  Transformer's schedule, d^-0.5 min(s^-0.5, s W^-1.5), with its peak set to base_lr)
  static Schedule constant(double base_lr, Warmup warmup = {});
  static Schedule cosine(double base_lr, Warmup warmup, int64_t decay_steps, double min_lr = 0);
  static Schedule linear(double base_lr, Warmup warmup, int64_t decay_steps, double min_lr = 0);
  static Schedule exponential(double base_lr, Warmup warmup, double gamma);
  static Schedule inverse_sqrt(double base_lr, Warmup warmup);

  double lr(int64_t step) const;  // step >= 0
  void apply(Optimizer& optimizer, int64_t step) const { optimizer.set_lr(lr(step)); }

  Kind kind() const { return kind_; }
  double base_lr() const { return base_lr_; }
  const Warmup& warmup() const { return warmup_; }

 private:
  Schedule(Kind kind, double base_lr, Warmup warmup);
  static Schedule decay(Kind kind, const char* name, double base_lr, Warmup warmup, int64_t decay_steps, double min_lr);
  Kind kind_;
  double base_lr_;
  Warmup warmup_;
  int64_t decay_steps_ = 0;  // cosine, linear
  double min_lr_ = 0;        // cosine, linear
  double gamma_ = 1;         // exponential
};

}  // namespace axiom::optim
