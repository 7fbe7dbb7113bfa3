#include "models/config.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/formats/json.h"

namespace axiom::models {

namespace {
constexpr core::EnumNames<Attention, 4> kAttentionNames{{{Attention::axial, "axial"},
                                                         {Attention::full, "full"},
                                                         {Attention::local1d, "local1d"},
                                                         {Attention::local2d, "local2d"}}};
constexpr core::EnumNames<Inner, 2> kInnerNames{{{Inner::transformer, "transformer"}, {Inner::lstm, "lstm"}}};
constexpr core::EnumNames<Init, 2> kInitNames{{{Init::pytorch, "pytorch"}, {Init::authors, "authors"}}};
constexpr core::EnumNames<Positions, 2> kPositionsNames{
    {{Positions::separate, "separate"}, {Positions::shared, "shared"}}};

// The config's JSON keys, in the order to_json writes them.
using Config = ImageModelConfig;
const std::array<core::JsonField<Config>, 18> kConfigFields{{
    {"height", &Config::height},
    {"width", &Config::width},
    {"channels", &Config::channels},
    {"features", &Config::features},
    {"heads", &Config::heads},
    {"upper_layers", &Config::upper_layers},
    {"row_layers", &Config::row_layers},
    {"encoder_layers", &Config::encoder_layers},
    {"ff_multiple", &Config::ff_multiple},
    {"inner", core::enum_field<&Config::inner, kInnerNames>()},
    {"dropout", &Config::dropout},
    {"init", core::enum_field<&Config::init, kInitNames>()},
    {"positions", core::enum_field<&Config::positions, kPositionsNames>()},
    {"relative", &Config::relative},
    {"attention", core::enum_field<&Config::attention, kAttentionNames>()},
    {"local_length", &Config::local_length},
    {"local_rows", &Config::local_rows},
    {"local_columns", &Config::local_columns},
}};

const std::array<const char*, 7> kPresets{"tiny",          "small",         "medium",        "small-full",
                                          "small-local1d", "small-local2d", "small-relative"};

bool is_preset(const std::string& name) { return std::find(kPresets.begin(), kPresets.end(), name) != kPresets.end(); }

}  // namespace

const char* name_of(Attention value) { return core::name_of(kAttentionNames, value); }
const char* name_of(Inner value) { return core::name_of(kInnerNames, value); }
const char* name_of(Init value) { return core::name_of(kInitNames, value); }
const char* name_of(Positions value) { return core::name_of(kPositionsNames, value); }

std::string preset_names() {
  std::string names;
  for (const char* name : kPresets) names += std::string(names.empty() ? "" : ", ") + name;
  return names;
}

// The accepted ranges are far beyond any model that fits in memory (the memory budget refuses
// those with figures); they keep every product of sizes inside int64.
void check_in_range(const char* key, int64_t value, int64_t low, int64_t high) {
  if (value < low || value > high) throw Error("config", key, " must be in [", low, ", ", high, "], got ", value);
}

void ImageModelConfig::validate() const {
  constexpr int64_t kMaxSide = 1 << 16, kMaxLayers = 100000;
  check_in_range("height", height, 1, kMaxSide);
  check_in_range("width", width, 1, kMaxSide);
  check_in_range("channels", channels, 1, 4096);
  check_in_range("features", features, 1, 1 << 20);
  check_in_range("heads", heads, 1, features);
  check_in_range("ff_multiple", ff_multiple, 1, 1024);
  if (features % heads != 0)
    throw Error("config", "features (", features, ") must be a multiple of heads (", heads, ")");
  check_in_range("upper_layers", upper_layers, 0, kMaxLayers);
  if (upper_layers % 2 != 0)
    throw Error("config", "upper_layers must be even (pairs of row and column blocks), got ", upper_layers);
  check_in_range("row_layers", row_layers, 0, kMaxLayers);
  check_in_range("encoder_layers", encoder_layers, 0, kMaxLayers);
  check_in_range("relative", relative, 0, kMaxSide);
  if (!(dropout >= 0 && dropout < 1)) throw Error("config", "dropout must be in [0, 1), got ", dropout);
  validate_attention();
}

void ImageModelConfig::validate_attention() const {
  constexpr int64_t kMaxBlock = int64_t{1} << 32;  // a whole image of the largest sides
  if (local_length < 1 || local_length > kMaxBlock)
    throw Error("config", "local_length must be in [1, ", kMaxBlock, "], got ", local_length);
  if (local_rows < 1 || local_rows > (1 << 16))
    throw Error("config", "local_rows must be in [1, 65536], got ", local_rows);
  if (local_columns < 1 || local_columns > (1 << 16))
    throw Error("config", "local_columns must be in [1, 65536], got ", local_columns);
  if (axial()) return;
  if (inner != Inner::transformer) {
    throw Error("config", "inner \"", name_of(inner), "\" is a part of the axial decoder; attention \"",
                name_of(attention), "\" has none");
  }
  if (relative > 0) {
    throw Error("config", "relative positions are for axial attention; attention \"", name_of(attention),
                "\" has relative ", relative);
  }
}

std::array<int64_t, 2> ImageModelConfig::raster_grid() const {
  if (attention == Attention::local2d) return {height, width};
  return {1, height * width};
}

std::array<int64_t, 2> ImageModelConfig::local_block() const {
  if (attention == Attention::local2d) return {local_rows, local_columns};
  return {1, local_length};
}

std::string ImageModelConfig::to_json() const { return core::write_fields(*this, kConfigFields).dump(2); }

ImageModelConfig preset(const std::string& name) {
  ImageModelConfig c;
  if (name == "tiny") {
    c.features = 64, c.heads = 4, c.upper_layers = 2, c.row_layers = 2;
  } else if (name == "small") {
    c.features = 128, c.heads = 4, c.upper_layers = 4, c.row_layers = 4;
  } else if (name == "medium") {
    c.features = 256, c.heads = 8, c.upper_layers = 8, c.row_layers = 4;
  } else if (name.starts_with("small-") && is_preset(name)) {
    c = preset("small");
    if (name == "small-relative")
      c.relative = 16;
    else
      core::value_named(kAttentionNames, name.substr(6), c.attention);  // full, local1d, local2d
  } else {
    throw Error("config", "unknown preset \"", name, "\" (", preset_names(), ", or a JSON file)");
  }
  return c;
}

ImageModelConfig config_from_json(const std::string& text, const std::string& origin) {
  return core::read_validated(text, kConfigFields, "config", origin, "key");
}

ImageModelConfig load_config(const std::string& name_or_path) {
  if (is_preset(name_or_path)) return preset(name_or_path);
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(name_or_path, ec);
  if (fs::exists(status) &&
      !fs::is_regular_file(status)) {  // a directory, a FIFO (would wait forever), /dev/zero (endless)
    throw Error("config", "'", name_or_path,
                "' is not a regular file (a config is a JSON file, or a preset: ", preset_names(), ")");
  }
  constexpr uintmax_t kMaxConfigBytes = 1 << 20;
  if (fs::exists(status) && fs::file_size(name_or_path, ec) > kMaxConfigBytes) {
    throw Error("config", "'", name_or_path, "' has ", fs::file_size(name_or_path, ec), " bytes; a config has at most ",
                kMaxConfigBytes);
  }
  std::ifstream file(name_or_path);
  if (!file)
    throw Error("config", "\"", name_or_path, "\" is neither a preset (", preset_names(), ") nor a readable file");
  std::ostringstream text;
  text << file.rdbuf();
  return config_from_json(text.str(), name_or_path);
}

}  // namespace axiom::models
