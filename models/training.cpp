#include "models/training.h"

#include <cmath>
#include <set>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace axiom::models {

namespace {

// The loader's shuffles use a seed of their own, so that its random words are not the ones the
// generator draws for the weights from the same seed.
constexpr uint64_t kLoaderSeedOffset = 0x9E3779B97F4A7C15ull;

// images must be the config's shape: [N, H, W] for one channel, [N, C, H, W] for more.
core::Tensor checked_images(const AxialTransformerConfig& c, core::Tensor images) {
  const Shape want = c.channels == 1 ? Shape{c.height, c.width} : Shape{c.channels, c.height, c.width};
  const bool shape_ok = images.dim() == static_cast<int64_t>(want.size()) + 1 &&
                        Shape(images.shape().begin() + 1, images.shape().end()) == want;
  if (images.dtype() != Dtype::uint8 || !shape_ok || images.size(0) == 0) {
    throw Error("train", "the images are ", images.dtype(), " ", images.shape(), " but the config wants uint8 [N, ",
                c.channels == 1 ? "" : std::to_string(c.channels) + ", ", c.height, ", ", c.width, "] with N > 0");
  }
  return images;
}

const TrainingOptions& validated(const TrainingOptions& options) {
  options.validate();
  return options;
}

template <typename T>
T number(const nlohmann::json& value, const std::string& key, const std::string& origin) {
  const bool ok = std::is_integral_v<T> ? value.is_number_integer() && (std::is_signed_v<T> || value.is_number_unsigned() ||
                                                                         value.get<int64_t>() >= 0)
                                        : value.is_number();
  if (!ok) throw Error("train", origin, ": ", key, " must be a", std::is_integral_v<T> ? "n integer" : " number", ", got ", value.dump());
  return value.get<T>();
}

}  // namespace

void TrainingOptions::validate() const {
  if (data.empty()) throw Error("train", "data must name a dataset");
  if (batch_size <= 0) throw Error("train", "batch_size must be positive, got ", batch_size);
  if (!(lr > 0) || !std::isfinite(lr)) throw Error("train", "lr must be positive, got ", lr);
  if (!(beta1 >= 0 && beta1 < 1)) throw Error("train", "beta1 must be in [0, 1), got ", beta1);
  if (!(beta2 >= 0 && beta2 < 1)) throw Error("train", "beta2 must be in [0, 1), got ", beta2);
  if (warmup_steps < 0) throw Error("train", "warmup_steps must be >= 0, got ", warmup_steps);
  if (!(max_grad_norm >= 0) || !std::isfinite(max_grad_norm)) throw Error("train", "max_grad_norm must be >= 0, got ", max_grad_norm);
}

std::string TrainingOptions::to_json() const {
  const nlohmann::ordered_json j = {{"data", data},   {"data_dir", data_dir},         {"batch_size", batch_size},
                                    {"lr", lr},       {"beta1", beta1},               {"beta2", beta2},
                                    {"warmup_steps", warmup_steps}, {"max_grad_norm", max_grad_norm}, {"seed", seed}};
  return j.dump(2);
}

TrainingOptions training_options_from_json(const std::string& text, const std::string& origin) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error("train", origin, ": not valid JSON: ", e.what());
  }
  if (!j.is_object()) throw Error("train", origin, ": the training options must be a JSON object");
  TrainingOptions o;
  for (const auto& [key, value] : j.items()) {
    if (key == "data" || key == "data_dir") {
      if (!value.is_string()) throw Error("train", origin, ": ", key, " must be a string, got ", value.dump());
      (key == "data" ? o.data : o.data_dir) = value.get<std::string>();
    } else if (key == "batch_size") {
      o.batch_size = number<int64_t>(value, key, origin);
    } else if (key == "lr") {
      o.lr = number<double>(value, key, origin);
    } else if (key == "beta1") {
      o.beta1 = number<double>(value, key, origin);
    } else if (key == "beta2") {
      o.beta2 = number<double>(value, key, origin);
    } else if (key == "warmup_steps") {
      o.warmup_steps = number<int64_t>(value, key, origin);
    } else if (key == "max_grad_norm") {
      o.max_grad_norm = number<double>(value, key, origin);
    } else if (key == "seed") {
      o.seed = number<uint64_t>(value, key, origin);
    } else {
      throw Error("train", origin, ": unknown training option \"", key, "\"");
    }
  }
  o.validate();
  return o;
}

// --- Trainer ----------------------------------------------------------------------------------------

Trainer::Trainer(const AxialTransformerConfig& config, const TrainingOptions& options, core::Tensor images, Device device)
    : config_(config),
      options_(validated(options)),
      gen_(options_.seed),
      schedule_(optim::Schedule::constant(options_.lr, {.steps = options_.warmup_steps})),
      loader_(data::TensorDataset{{checked_images(config_, std::move(images))}},
              {.batch_size = options_.batch_size, .shuffle = true, .drop_last = true,
               .seed = options_.seed + kLoaderSeedOffset, .prefetch = false}) {
  if (loader_.size() == 0) {
    throw Error("train", "a batch of ", options_.batch_size, " needs at least that many images, got ", loader_.examples());
  }
  model_ = std::make_unique<AxialTransformer>(config_, gen_);
  model_->to(device);
  optimizer_ = std::make_unique<optim::Adam>(
      model_->named_parameters(), optim::AdamOptions{.lr = options_.lr, .betas = {options_.beta1, options_.beta2}});
}

Trainer::Trainer(const Checkpoint& checkpoint, core::Tensor images, Device device)
    : Trainer(checkpoint.config, checkpoint.options, std::move(images), device) {
  model_->load(checkpoint.model_file);
  optimizer_->load(checkpoint.optimizer_file);
  gen_.set_state(checkpoint.rng_seed, checkpoint.rng_offset);
  step_ = checkpoint.step;
}

double Trainer::step() {
  const int64_t batches = loader_.size();
  const core::Tensor images = loader_.batch(step_ / batches, step_ % batches)[0];  // uint8 [B, (C,) H, W]
  model_->train();
  schedule_.apply(*optimizer_, step_);
  optimizer_->zero_grad();
  const Tensor loss = model_->loss(images, gen_);  // bits/dim
  const double bits = loss.item();
  if (!std::isfinite(bits)) {
    throw Error("train", "the loss is ", bits, " at step ", step_, " (lr ", optimizer_->lr(),
                "); try a smaller --lr or --clip, and resume from the last checkpoint");
  }
  loss.backward();
  if (options_.max_grad_norm > 0) optim::clip_grad_norm(optimizer_->parameters(), options_.max_grad_norm);
  optimizer_->step();
  ++step_;
  return bits;
}

Likelihood evaluate_images(AxialTransformer& model, const core::Tensor& images, int64_t batch_size,
                           const std::function<void(int64_t, int64_t)>& progress) {
  if (batch_size <= 0) throw Error("evaluate", "batch_size must be positive, got ", batch_size);
  const bool was_training = model.is_training();
  model.eval();
  Likelihood total;
  const int64_t n = images.size(0);
  for (int64_t first = 0; first < n; first += batch_size) {
    const Likelihood part = model.evaluate(images.narrow(0, first, std::min(batch_size, n - first)));
    total.nats += part.nats;
    total.count += part.count;
    if (progress) progress(std::min(first + batch_size, n), n);
  }
  model.train(was_training);
  return total;
}

}  // namespace axiom::models
