#include "models/config.h"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json.h"

namespace axiom::models {

// The accepted ranges are far beyond any model that fits in memory (the memory budget refuses
// those with figures); they keep every product of sizes inside int64.
void AxialTransformerConfig::validate() const {
  auto in_range = [](const char* key, int64_t value, int64_t low, int64_t high) {
    if (value < low || value > high) throw Error("config", key, " must be in [", low, ", ", high, "], got ", value);
  };
  constexpr int64_t kMaxSide = 1 << 16, kMaxLayers = 100000;
  in_range("height", height, 1, kMaxSide);
  in_range("width", width, 1, kMaxSide);
  in_range("channels", channels, 1, 4096);
  in_range("features", features, 1, 1 << 20);
  in_range("heads", heads, 1, features);
  in_range("ff_multiple", ff_multiple, 1, 1024);
  if (features % heads != 0) throw Error("config", "features (", features, ") must be a multiple of heads (", heads, ")");
  in_range("upper_layers", upper_layers, 0, kMaxLayers);
  if (upper_layers % 2 != 0) throw Error("config", "upper_layers must be even (pairs of row and column blocks), got ", upper_layers);
  in_range("row_layers", row_layers, 0, kMaxLayers);
  in_range("encoder_layers", encoder_layers, 0, kMaxLayers);
  if (inner != "transformer" && inner != "lstm") throw Error("config", "inner must be \"transformer\" or \"lstm\", got \"", inner, "\"");
  if (!(dropout >= 0 && dropout < 1)) throw Error("config", "dropout must be in [0, 1), got ", dropout);
}

std::string AxialTransformerConfig::to_json() const {
  nlohmann::ordered_json j = {{"height", height},         {"width", width},       {"channels", channels},
                              {"features", features},     {"heads", heads},       {"upper_layers", upper_layers},
                              {"row_layers", row_layers}, {"encoder_layers", encoder_layers},
                              {"ff_multiple", ff_multiple}, {"inner", inner},     {"dropout", dropout}};
  return j.dump(2);
}

AxialTransformerConfig preset(const std::string& name) {
  AxialTransformerConfig c;
  if (name == "tiny") {
    c.features = 64, c.heads = 4, c.upper_layers = 2, c.row_layers = 2;
  } else if (name == "small") {
    c.features = 128, c.heads = 4, c.upper_layers = 4, c.row_layers = 4;
  } else if (name == "medium") {
    c.features = 256, c.heads = 8, c.upper_layers = 8, c.row_layers = 4;
  } else {
    throw Error("config", "unknown preset \"", name, "\" (tiny, small, medium, or a JSON file)");
  }
  return c;
}

AxialTransformerConfig config_from_json(const std::string& text, const std::string& origin) {
  const nlohmann::json j = core::parse_json(text, origin, "config");
  if (!j.is_object()) throw Error("config", origin, ": expected a JSON object");
  AxialTransformerConfig c;
  const std::set<std::string> integers = {"height", "width", "channels", "features", "heads",
                                          "upper_layers", "row_layers", "encoder_layers", "ff_multiple"};
  for (const auto& [key, value] : j.items()) {
    if (integers.count(key)) {
      if (!value.is_number_integer()) throw Error("config", origin, ": ", key, " must be an integer, got ", value.dump());
      if (value.is_number_unsigned() && value.get<uint64_t>() > uint64_t{INT64_MAX}) {  // (get<int64_t> would wrap)
        throw Error("config", origin, ": ", key, " is far beyond its range, got ", value.dump());
      }
      const int64_t v = value.get<int64_t>();
      if (key == "height") c.height = v;
      if (key == "width") c.width = v;
      if (key == "channels") c.channels = v;
      if (key == "features") c.features = v;
      if (key == "heads") c.heads = v;
      if (key == "upper_layers") c.upper_layers = v;
      if (key == "row_layers") c.row_layers = v;
      if (key == "encoder_layers") c.encoder_layers = v;
      if (key == "ff_multiple") c.ff_multiple = v;
    } else if (key == "inner") {
      if (!value.is_string()) throw Error("config", origin, ": inner must be a string, got ", value.dump());
      c.inner = value.get<std::string>();
    } else if (key == "dropout") {
      if (!value.is_number()) throw Error("config", origin, ": dropout must be a number, got ", value.dump());
      c.dropout = value.get<double>();
    } else {
      throw Error("config", origin, ": unknown key \"", key, "\"");
    }
  }
  try {
    c.validate();
  } catch (const Error& e) {
    const std::string message = e.what();  // "[config] ...": said once
    throw Error("config", origin, ": ", message.substr(message.find("] ") + 2));
  }
  return c;
}

AxialTransformerConfig load_config(const std::string& name_or_path) {
  if (name_or_path == "tiny" || name_or_path == "small" || name_or_path == "medium") return preset(name_or_path);
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(name_or_path, ec);
  if (fs::exists(status) && !fs::is_regular_file(status)) {  // a directory, a FIFO (would wait forever), /dev/zero (endless)
    throw Error("config", "'", name_or_path, "' is not a regular file (a config is a JSON file, or a preset: tiny, small, medium)");
  }
  constexpr uintmax_t kMaxConfigBytes = 1 << 20;
  if (fs::exists(status) && fs::file_size(name_or_path, ec) > kMaxConfigBytes) {
    throw Error("config", "'", name_or_path, "' has ", fs::file_size(name_or_path, ec), " bytes; a config has at most ", kMaxConfigBytes);
  }
  std::ifstream file(name_or_path);
  if (!file) throw Error("config", "\"", name_or_path, "\" is neither a preset (tiny, small, medium) nor a readable file");
  std::ostringstream text;
  text << file.rdbuf();
  return config_from_json(text.str(), name_or_path);
}

}  // namespace axiom::models
