// The learning-rate range test (Smith, "Cyclical Learning Rates for Training Neural Networks",
// arXiv:1506.01186; fastai's lr_find, Lightning's Tuner.lr_find): from a fresh model, one step at
// each of `steps` rates growing exponentially from `start` to `end`, the loss of each batch
// recorded, smoothed, and a rate suggested.
//
//   const models::LrRange range = models::lr_range_test(config, options, examples, {.steps = 200});
//   std::cout << range.suggestion << " (" << range.rule << ")\n";
//
// Two common rules read the curve (fastai's "steep" and "minimum"): the rate where the smoothed
// loss falls fastest against log(rate) (the steepest descent, over the steps up to the lowest
// point, past their first tenth), and a tenth of the rate where the smoothed loss is lowest. On a small
// Axial Transformer the first is too low and the second too high (models/training/README.md has
// the figures); the suggestion is their geometric mean, the middle of the two on a log scale:
//
//   suggestion = sqrt(lrs[steepest_step] * lrs[lowest_step] / 10)
//
// The test stops early when the smoothed loss passes `diverge` times its lowest.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "training.h"

namespace axiom::models {

struct LrRangeOptions {
  double start = 1e-6, end = 1;  // the first and last rate: 0 < start < end
  int64_t steps = 200;           // at least 10
  double smoothing = 0.98;       // the loss's exponential moving average (bias-corrected), in [0, 1)
  double diverge = 4;            // stop when the smoothed loss exceeds this many times its lowest; > 1
};

struct LrRange {
  std::vector<double> lrs, losses, smoothed;  // one per step taken
  int64_t steepest_step = 0;                  // the steepest descent of the smoothed loss, before its lowest point
  int64_t lowest_step = 0;                    // the lowest smoothed loss
  double suggestion = 0;                      // sqrt(lrs[steepest_step] * lrs[lowest_step] / 10)
  bool diverged = false;                      // stopped before `steps`
  std::string rule;                           // how the suggestion was chosen, in words
};

// An Error naming the option for a range upside down, too few steps, a smoothing or a divergence
// factor out of range, before the model is made; and one when the loss diverges within 3 steps. `options` is the
// training run's (batch, Adam's betas, weight decay, seed; its lr and schedule are the test's to set).
LrRange lr_range_test(const ModelConfig& config, const TrainingOptions& options, data::TensorDataset examples,
                      const LrRangeOptions& range, const Placement& placement = {});

// The steepest descent of `smoothed` against log(lrs), past the first tenth; the index.
int64_t steepest_descent(const std::vector<double>& lrs, const std::vector<double>& smoothed);

}  // namespace axiom::models
