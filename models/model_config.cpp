#include "models/model_config.h"

#include "core/formats/json.h"

namespace axiom::models {

std::string to_json(const ModelConfig& config) {
  return std::visit([](const auto& c) { return c.to_json(); }, config);
}

ModelConfig model_config_from_json(const std::string& text, const std::string& origin) {
  const nlohmann::json j = core::parse_json(text, origin, "config");
  if (j.is_object() && j.contains("classifier")) return classifier_config_from_json(text, origin);
  if (j.is_object() && j.contains("translator")) return translator_config_from_json(text, origin);
  return config_from_json(text, origin);
}

std::unique_ptr<Learner> make_model(const ModelConfig& config, Generator& gen) {
  if (const auto* image = std::get_if<ImageModelConfig>(&config)) return make_image_model(*image, gen);
  if (const auto* classifier = std::get_if<ClassifierConfig>(&config)) return make_classifier(*classifier, gen);
  return make_translator(std::get<TranslatorConfig>(config), gen);
}

const char* loss_unit(const ModelConfig& config) {
  return std::holds_alternative<ImageModelConfig>(config) ? "bits/dim" : "nats";
}
const char* loss_key(const ModelConfig& config) {
  return std::holds_alternative<ImageModelConfig>(config) ? "bits_per_dim" : "loss";
}

}  // namespace axiom::models
