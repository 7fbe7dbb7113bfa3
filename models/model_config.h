// The config of any model that models::Trainer trains: an image model's (config.h), a
// classifier's (classifiers.h) or a translator's (translators.h). A checkpoint records it as JSON,
// where a classifier's config is the one with a "classifier" key and a translator's the one with
// a "translator" key.
#pragma once

#include <memory>
#include <string>
#include <variant>

#include "classifiers.h"
#include "config.h"
#include "image_model.h"
#include "translators.h"

namespace axiom::models {

using ModelConfig = std::variant<ImageModelConfig, ClassifierConfig, TranslatorConfig>;

std::string to_json(const ModelConfig& config);
// An Error names `origin` and the bad key, as each config's own reader does.
ModelConfig model_config_from_json(const std::string& text, const std::string& origin);
// The model a config describes (make_image_model, make_classifier or make_translator).
std::unique_ptr<Learner> make_model(const ModelConfig& config, Generator& gen);

// What the model's training loss is: "bits/dim" (an image model's) or "nats" (the cross-entropy
// of a classifier or a translator); and the key of metrics files for it: "bits_per_dim" or "loss".
const char* loss_unit(const ModelConfig& config);
const char* loss_key(const ModelConfig& config);

}  // namespace axiom::models
