// The learning-rate range test (lr_find.h).
#include "models/training/lr_find.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace axiom::models {

namespace {

void check(const LrRangeOptions& r) {
  if (!(r.start > 0) || !std::isfinite(r.start) || !(r.end > r.start) || !std::isfinite(r.end)) {
    throw Error("lr-find", "the rates run from start to end, 0 < start < end; got start ", r.start, ", end ", r.end);
  }
  if (r.steps < 10) throw Error("lr-find", "steps must be at least 10, got ", r.steps);
  if (!(r.smoothing >= 0 && r.smoothing < 1)) throw Error("lr-find", "smoothing must be in [0, 1), got ", r.smoothing);
  if (!(r.diverge > 1) || !std::isfinite(r.diverge)) throw Error("lr-find", "diverge must be > 1, got ", r.diverge);
}

// Rate i of n: start * (end / start)^(i / (n - 1)).
double rate(const LrRangeOptions& r, int64_t i) {
  return r.start * std::pow(r.end / r.start, static_cast<double>(i) / static_cast<double>(r.steps - 1));
}

}  // namespace

int64_t steepest_descent(const std::vector<double>& lrs, const std::vector<double>& smoothed) {
  const auto n = static_cast<int64_t>(smoothed.size());
  if (n < 3) throw Error("lr-find", "a suggestion needs at least 3 steps, got ", n);
  int64_t best = std::max<int64_t>(1, n / 10);
  double steepest = INFINITY;
  for (int64_t i = std::max<int64_t>(1, n / 10); i + 1 < n; ++i) {
    const double slope = (smoothed[i + 1] - smoothed[i - 1]) / (std::log(lrs[i + 1]) - std::log(lrs[i - 1]));
    if (slope < steepest) steepest = slope, best = i;
  }
  return best;
}

LrRange lr_range_test(const ModelConfig& config, const TrainingOptions& options, data::TensorDataset examples,
                      const LrRangeOptions& range, const Placement& placement) {
  check(range);
  TrainingOptions o = options;
  o.lr = range.start, o.warmup_steps = 0, o.schedule = LrSchedule::constant, o.steps = 0;
  Trainer trainer(config, o, std::move(examples), placement);
  LrRange result;
  double average = 0, lowest = INFINITY;
  for (int64_t i = 0; i < range.steps; ++i) {
    const double lr = rate(range, i);
    const double loss = trainer.step_with_lr(lr);
    average = range.smoothing * average + (1 - range.smoothing) * loss;
    const double smoothed = average / (1 - std::pow(range.smoothing, static_cast<double>(i + 1)));
    result.lrs.push_back(lr), result.losses.push_back(loss), result.smoothed.push_back(smoothed);
    lowest = std::min(lowest, smoothed);
    if (i >= range.steps / 10 && smoothed > range.diverge * lowest) {
      result.diverged = true;
      break;
    }
  }
  if (result.lrs.size() < 3) {
    throw Error("lr-find", "the loss diverged after ", result.lrs.size(), " steps (at rate ", result.lrs.back(),
                "): no curve to read; start lower (--start) or take more steps");
  }
  // The steepest descent is looked for before the lowest point (and so before any divergence).
  const auto lowest_at = std::min_element(result.smoothed.begin(), result.smoothed.end()) - result.smoothed.begin();
  const std::vector<double> lrs(result.lrs.begin(), result.lrs.begin() + std::max<int64_t>(lowest_at + 1, 3));
  const std::vector<double> smoothed(result.smoothed.begin(),
                                     result.smoothed.begin() + static_cast<int64_t>(lrs.size()));
  result.steepest_step = steepest_descent(lrs, smoothed), result.lowest_step = lowest_at;
  result.suggestion = std::sqrt(result.lrs[static_cast<size_t>(result.steepest_step)] *
                                result.lrs[static_cast<size_t>(result.lowest_step)] / 10);
  result.rule = "the geometric mean of the steepest descent's rate and a tenth of the lowest loss's rate";
  return result;
}

}  // namespace axiom::models
