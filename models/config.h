// The Axial Transformer's configuration: sizes of the data and of the network. Configs are JSON
// files (or presets); every key is checked, and an error names the bad key and value.
//
//   {"height": 28, "width": 28, "channels": 1, "features": 128, "heads": 4,
//    "upper_layers": 4, "row_layers": 4, "encoder_layers": 4, "ff_multiple": 4,
//    "inner": "transformer", "dropout": 0.0}
#pragma once

#include <cstdint>
#include <string>

namespace axiom::models {

struct AxialTransformerConfig {
  int64_t height = 28, width = 28;
  int64_t channels = 1;        // image channels, or channels x frames for video
  int64_t features = 64;       // D
  int64_t heads = 4;
  int64_t upper_layers = 2;    // L_upper: outer decoder blocks (pairs of unmasked row + masked column)
  int64_t row_layers = 2;      // L_row: inner decoder blocks (masked row)
  int64_t encoder_layers = 2;  // channel encoder blocks (unmasked row / unmasked column), when channels > 1
  int64_t ff_multiple = 4;     // feed-forward width D' = ff_multiple * D
  std::string inner = "transformer";  // or "lstm": the paper's ablation, one LSTM layer along each row
  double dropout = 0;

  void validate() const;  // throws axiom::Error("[config] ...") naming the bad key and value
  std::string to_json() const;
};

// "tiny" (D=64, 4 heads, L_upper=2, L_row=2), "small" (D=128, 4 heads, 4, 4), "medium" (D=256, 8 heads, 8, 4),
// all for 28 x 28 single-channel images with feed-forward width 4D.
AxialTransformerConfig preset(const std::string& name);
// A preset name, or a path to a JSON file; unknown keys are errors.
AxialTransformerConfig load_config(const std::string& name_or_path);
AxialTransformerConfig config_from_json(const std::string& text, const std::string& origin);

}  // namespace axiom::models
