#include "models/training/cost.h"

#include "core/factory.h"
#include "core/meta/meta.h"
#include "core/storage.h"
#include "models/sampler.h"
#include "models/training/training.h"

namespace axiom::models {

namespace {

// Bytes alive on `device` now.
double live_bytes(DeviceType device) { return static_cast<double>(core::allocation_stats(device).live_bytes); }

// What `work` costs on meta (and on the CPU beside it, where `work` draws on the CPU): the peak of
// the bytes alive, from those alive when it starts, and the arithmetic.
template <typename Work>
Cost measured(Work&& work) {
  const double cpu_before = live_bytes(DeviceType::cpu);
  core::reset_allocation_peak();
  core::reset_meta_flops();
  work();
  const double cpu_peak = static_cast<double>(core::allocation_stats(DeviceType::cpu).peak_bytes) - cpu_before;
  return {.peak_bytes = static_cast<double>(core::allocation_stats(DeviceType::meta).peak_bytes) + cpu_peak,
          .flops = core::meta_flops(),
          .products = core::meta_products()};
}

// The model `config` describes, made on meta (nothing drawn), with parameters of `dtype`.
std::unique_ptr<Learner> made_on_meta(const ModelConfig& config, Dtype dtype) {
  Generator gen(0);
  std::unique_ptr<Learner> model;
  {
    nn::init::MadeOn meta(Device::meta());
    model = make_model(config, gen);
  }
  model->to(dtype);
  return model;
}

}  // namespace

int64_t measured_parameter_count(const ModelConfig& config) {
  return made_on_meta(config, Dtype::float32)->parameter_count();
}

data::TensorDataset examples_shaped_for(const ModelConfig& config, int64_t n) {
  if (const auto* image = std::get_if<ImageModelConfig>(&config)) {
    const Shape shape = image->channels == 1 ? Shape{n, image->height, image->width}
                                             : Shape{n, image->channels, image->height, image->width};
    return {{Tensor(core::zeros(shape, Dtype::uint8))}};
  }
  if (const auto* classifier = std::get_if<ClassifierConfig>(&config)) {
    return {{Tensor(core::zeros({n, classifier->height, classifier->width}, Dtype::uint8)),
             Tensor(core::zeros({n}, Dtype::int64))}};
  }
  const auto& translator = std::get<TranslatorConfig>(config);
  return {{Tensor(core::zeros({n, translator.source_length}, Dtype::int64)),
           Tensor(core::zeros({n, translator.target_length}, Dtype::int64))}};
}

Cost measured_training_cost(const ModelConfig& config, int64_t batch, const Measuring& how) {
  const core::MetaStandsFor stand_in(how.device);
  TrainingOptions options;
  options.data = "shape only", options.batch_size = batch, options.warmup_steps = 0;
  Trainer trainer(config, options, examples_shaped_for(config, batch),
                  {.device = Device::meta(), .dtype = how.dtype, .checkpoint_blocks = how.checkpoint_blocks});
  trainer.step();  // Adam's moments are made at the first step
  return measured([&] { trainer.step(); });
}

Cost measured_evaluation_cost(const ModelConfig& config, int64_t batch, const Measuring& how) {
  const core::MetaStandsFor stand_in(how.device);
  const std::unique_ptr<Learner> model = made_on_meta(config, how.dtype);
  model->eval();
  const data::TensorDataset examples = examples_shaped_for(config, batch);
  return measured([&] { (void)model->batch_score(examples.columns); });
}

Cost measured_sampling_cost(const ImageModelConfig& config, int64_t count, Sampler sampler, const Measuring& how) {
  const core::MetaStandsFor stand_in(how.device);
  const std::unique_ptr<Learner> learner = made_on_meta(config, how.dtype);
  const auto& model = dynamic_cast<const ImageModel&>(*learner);
  const SampleOptions options{.count = count};
  return measured(
      [&] { (void)(sampler == Sampler::fast ? sample_fast(model, options) : sample_naive(model, options)); });
}

}  // namespace axiom::models
