// What a model costs, measured by the model itself: one training step run on the shape-only device
// (core/meta), where every op sizes its output and computes nothing, while core counts the bytes
// of every tensor (core::allocation_stats). No formula of the architecture: a new layer is
// measured as soon as it exists.
//
//   const double bytes = models::measured_training_cost(models::preset("small"), 32).peak_bytes();
#pragma once

#include <cstdint>

#include "../data/loader.h"
#include "model_config.h"

namespace axiom::models {

struct TrainingCost {
  double making_bytes = 0;  // the most bytes alive at once while the model is made (on the CPU: its initial draws)
  double step_bytes = 0;    // ... during a training step: parameters, gradients, Adam's moments, activations
  double peak_bytes() const { return making_bytes > step_bytes ? making_bytes : step_bytes; }
};
// What training `config` costs on `batch` rows of `examples` (only their shapes and dtypes matter),
// with the first `checkpoint_blocks` blocks recomputed in backward. The model is made on the CPU as
// a Trainer makes it, then moved to the meta device, where the step runs twice: the first makes the
// optimizer's moments, the second is measured. What the CPU allocates for the same work (a test
// holds the two within 0.1%).
TrainingCost measured_training_cost(const ModelConfig& config, const data::TensorDataset& examples, int64_t batch,
                                    int64_t checkpoint_blocks = 0, Dtype dtype = Dtype::float32);
// The same for an image model, on images of its config's shape.
TrainingCost measured_training_cost(const ImageModelConfig& config, int64_t batch, int64_t checkpoint_blocks = 0,
                                    Dtype dtype = Dtype::float32);

}  // namespace axiom::models
