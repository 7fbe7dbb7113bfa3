#include "models/cost.h"

#include "core/factory.h"
#include "core/storage.h"
#include "models/training.h"

namespace axiom::models {

TrainingCost measured_training_cost(const ModelConfig& config, const data::TensorDataset& examples, int64_t batch,
                                    int64_t checkpoint_blocks, Dtype dtype) {
  TrainingOptions options;
  options.data = "shape only", options.batch_size = batch, options.warmup_steps = 0;
  const int64_t before = core::allocation_stats(DeviceType::cpu).live_bytes;
  core::reset_allocation_peak();
  Trainer trainer(config, options, examples, {.device = Device::meta(), .dtype = dtype, .checkpoint_blocks = checkpoint_blocks});
  TrainingCost cost{.making_bytes = static_cast<double>(core::allocation_stats(DeviceType::cpu).peak_bytes - before)};
  trainer.step();  // Adam's moments are made at the first step
  core::reset_allocation_peak();
  trainer.step();
  cost.step_bytes = static_cast<double>(core::allocation_stats(DeviceType::meta).peak_bytes);
  return cost;
}

TrainingCost measured_training_cost(const ImageModelConfig& config, int64_t batch, int64_t checkpoint_blocks, Dtype dtype) {
  const Shape shape = config.channels == 1 ? Shape{batch, config.height, config.width}
                                           : Shape{batch, config.channels, config.height, config.width};
  const data::TensorDataset images{{Tensor(core::zeros(shape, Dtype::uint8))}};
  return measured_training_cost(ModelConfig(config), images, batch, checkpoint_blocks, dtype);
}

}  // namespace axiom::models
