// The config of any model that models::Trainer trains: an image model's (config.h) or a
// classifier's (classifiers.h). A checkpoint records it as JSON, where a classifier's config is the
// one with a "classifier" key.
#pragma once

#include <memory>
#include <string>
#include <variant>

#include "classifiers.h"
#include "config.h"
#include "image_model.h"

namespace axiom::models {

using ModelConfig = std::variant<ImageModelConfig, ClassifierConfig>;

std::string to_json(const ModelConfig& config);
// An Error names `origin` and the bad key, as each config's own reader does.
ModelConfig model_config_from_json(const std::string& text, const std::string& origin);
// The model a config describes (make_image_model or make_classifier).
std::unique_ptr<Learner> make_model(const ModelConfig& config, Generator& gen);
void validate(const ModelConfig& config);

// What the model's training loss is: "bits/dim" (an image model's) or "nats" (a classifier's
// cross-entropy); and the key of metrics files for it: "bits_per_dim" or "loss".
const char* loss_unit(const ModelConfig& config);
const char* loss_key(const ModelConfig& config);

}  // namespace axiom::models
