// Early stopping (early_stopping.h).
#include "models/training/early_stopping.h"

#include <cmath>
#include <cstdio>

#include "core/error.h"

namespace axiom::models {

EarlyStopping::EarlyStopping(int64_t patience, double min_delta) : patience_(patience), min_delta_(min_delta) {
  if (patience < 1) throw Error("EarlyStopping", "patience is a number of evaluations, at least 1; got ", patience);
  if (!(min_delta >= 0) || !std::isfinite(min_delta)) {
    throw Error("EarlyStopping", "min_delta must be a finite number >= 0, got ", min_delta);
  }
}

bool EarlyStopping::record(int64_t step, double loss) {
  const bool finite = std::isfinite(loss);
  const bool improved = finite && (improved_step_ < 0 || loss < improved_loss_ - min_delta_);
  const bool lowest = finite && (best_step_ < 0 || loss < best_loss_);
  if (improved) {
    improved_step_ = step, improved_loss_ = loss, since_improvement_ = 0;
  } else {
    ++since_improvement_;
  }
  if (lowest) best_step_ = step, best_loss_ = loss;
  return lowest;
}

std::string EarlyStopping::reason(const std::string& unit) const {
  char text[240];
  if (best_step_ < 0) {
    std::snprintf(text, sizeof text, "no held-out evaluation was finite in %lld evaluations",
                  static_cast<long long>(since_improvement_));
  } else {
    std::snprintf(text, sizeof text,
                  "the held-out loss has not improved by more than %g for %lld evaluations (since %.4f at step "
                  "%lld); best %.4f %s at step %lld",
                  min_delta_, static_cast<long long>(since_improvement_), improved_loss_,
                  static_cast<long long>(improved_step_), best_loss_, unit.c_str(), static_cast<long long>(best_step_));
  }
  return text;
}

}  // namespace axiom::models
