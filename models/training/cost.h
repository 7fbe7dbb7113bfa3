// What a model costs, measured by the model itself: it is made on the shape-only device (core/meta;
// its parameters through nn/init.h, so nothing is drawn) and runs the work there, where every op
// checks and sizes its output and computes nothing, while core counts the bytes of every tensor
// (allocation_stats, core/storage.h) and the arithmetic of the products (meta_flops, core/meta). No formula of
// the architecture: a new layer is measured as soon as it exists.
//
//   const models::Cost step = models::measured_training_cost(models::preset("small"), 32);
//   step.peak_bytes;  // what a training step of 32 images holds at its peak, weights included
//   step.flops;       // what it computes
#pragma once

#include <cstdint>
#include <vector>

#include "../../core/meta/meta.h"

#include "../../data/loader.h"
#include "../model_config.h"

namespace axiom::models {

struct Cost {
  double peak_bytes = 0;                    // the most bytes alive at once during the work, the parameters included
  double flops = 0;                         // the work's products and attention (core/meta/meta.h counts them)
  std::vector<core::MetaProduct> products;  // the GEMMs behind those FLOPs, as the CPU runs them
};

// How the measured run is set up: the device it stands for (meta fuses attention where that
// device's backend does: MetaStandsFor, core/meta/meta.h), the parameters' dtype, and, for training, the first
// `checkpoint_blocks` blocks recomputed in backward (Learner::set_checkpoint_blocks).
struct Measuring {
  Device device = Device::cpu();
  Dtype dtype = Dtype::float32;
  int64_t checkpoint_blocks = 0;
};

// How many numbers the model holds: the model made on meta, its parameters counted.
int64_t measured_parameter_count(const ModelConfig& config);

// Examples of the shape and dtype a model's batch columns have (zeros): n images of the config's
// shape; a classifier's images and labels; a translator's sources and targets.
data::TensorDataset examples_shaped_for(const ModelConfig& config, int64_t n);

// One training step on `batch` examples: a Trainer on meta steps twice (the first step makes the
// optimizer's moments) and the second step is measured. What the CPU allocates for the same step
// (a test holds the two within 0.1%).
Cost measured_training_cost(const ModelConfig& config, int64_t batch, const Measuring& how = {});
// Scoring `batch` examples without a graph, in eval mode (Learner::batch_score).
Cost measured_evaluation_cost(const ModelConfig& config, int64_t batch, const Measuring& how = {});

enum class Sampler { fast, naive };  // models/sampler.h: sample_fast, sample_naive
// Drawing `count` images with `sampler`. Its uniforms are drawn on the CPU whatever the device:
// the peak is the meta device's plus the CPU's (a little more than one device holding both, whose
// peaks need not meet).
Cost measured_sampling_cost(const ImageModelConfig& config, int64_t count, Sampler sampler, const Measuring& how = {});

}  // namespace axiom::models
