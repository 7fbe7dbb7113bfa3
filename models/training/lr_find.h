// The learning-rate range test (Smith, "Cyclical Learning Rates for Training Neural Networks",
// arXiv:1506.01186; fastai's lr_find, Lightning's Tuner.lr_find): from a fresh model, one step at
// each of `steps` rates growing exponentially from `start` to `end`, the loss of each batch
// recorded, smoothed, and a rate suggested.
//
//   const models::LrRange range = models::lr_range_test(config, options, examples, {.steps = 200});
//   std::cout << range.suggestion << " (" << range.rule << ")\n";
//
// The suggestion is the rate where the smoothed loss falls fastest against log(rate) (the
// steepest descent), over the rates past the first tenth of the test and before the loss
// diverges: a rate the model still learns fast at, short of the cliff. The test stops early when
// the smoothed loss passes `diverge` times its lowest.
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
  double suggestion = 0;                      // a rate of lrs
  int64_t suggestion_step = 0;                // its index
  bool diverged = false;                      // stopped before `steps`
  std::string rule;                           // how the suggestion was chosen, in words
};

// An Error naming the option for a range upside down, too few steps, a smoothing or a divergence
// factor out of range, before the model is made. `options` is the training run's (batch, Adam's
// betas, weight decay, seed; its lr and schedule are the test's to set).
LrRange lr_range_test(const ModelConfig& config, const TrainingOptions& options, data::TensorDataset examples,
                      const LrRangeOptions& range, const Placement& placement = {});

// The steepest descent of `smoothed` against log(lrs), past the first tenth; the index.
int64_t steepest_descent(const std::vector<double>& lrs, const std::vector<double>& smoothed);

}  // namespace axiom::models
