// An image model's configuration: which model, and the sizes of the data and of the network.
// Configs are JSON files (or presets); every key is checked, and an error names the bad key and value.
//
//   {"height": 28, "width": 28, "channels": 1, "features": 128, "heads": 4,
//    "upper_layers": 4, "row_layers": 4, "encoder_layers": 4, "ff_multiple": 4,
//    "inner": "transformer", "dropout": 0.0, "init": "pytorch", "positions": "separate", "relative": 0,
//    "attention": "axial", "local_length": 112, "local_rows": 7, "local_columns": 7}
//
// A key a file leaves out keeps the value below; a checkpoint's config names them all.
//
// "attention" picks the model (make_image_model, image_model.h). "axial" is the Axial Transformer
// (axial_transformer.h). The others are the models the paper compares it with, decoder-only
// Transformers over the pixels in raster order (RasterTransformer; its equations are in
// raster_transformer.h), upper_layers + row_layers masked blocks deep, where each block's masked
// attention is
//   "full":    over every pixel before it (the whole image, [HW, HW] weights per head);
//   "local1d": the Image Transformer's 1-D local attention, blocks of local_length pixels in raster
//              order, each attending to itself and the block before it;
//   "local2d": its 2-D local attention, blocks of local_rows x local_columns pixels, each attending
//              to itself and its neighbours left, right and above (nn/local.h).
#pragma once

#include <array>
#include <cstdint>
#include <ostream>
#include <string>
#include <type_traits>

namespace axiom::models {

// The choices of a config, each written by its name in a config file and in messages (name_of):
enum class Attention { axial, full, local1d, local2d };  // the decoder (above)
enum class Inner { transformer, lstm };     // the inner decoder: masked row blocks, or one LSTM layer along each row
enum class Init { pytorch, authors };       // how the weights start (below)
enum class Positions { separate, shared };  // the decoders' position tables (below)
const char* name_of(Attention value);
const char* name_of(Inner value);
const char* name_of(Init value);
const char* name_of(Positions value);
template <typename Choice>
requires std::is_same_v<Choice, Attention> || std::is_same_v<Choice, Inner> || std::is_same_v<Choice, Init> ||
    std::is_same_v<Choice, Positions>
        std::ostream& operator<<(std::ostream& out, Choice value) {
  return out << name_of(value);
}

struct ImageModelConfig {
  int64_t height = 28, width = 28;
  int64_t channels = 1;   // image channels, or channels x frames for video
  int64_t features = 64;  // D
  int64_t heads = 4;
  int64_t upper_layers = 2;          // L_upper: outer decoder blocks (pairs of unmasked row + masked column)
  int64_t row_layers = 2;            // L_row: inner decoder blocks (masked row)
  int64_t encoder_layers = 2;        // channel encoder blocks (unmasked row / unmasked column), when channels > 1
  int64_t ff_multiple = 4;           // feed-forward width D' = ff_multiple * D
  Inner inner = Inner::transformer;  // or lstm: the paper's ablation, one LSTM layer along each row
  double dropout = 0;
  // How the weights start (the trained model is the same kind of function either way):
  //   pytorch:   value embeddings N(0, 1), position tables N(0, 0.02^2), Dense layers uniform in
  //              +-1/sqrt(fan_in), biases too (PyTorch's defaults for Embedding and Linear)
  //   authors:   value embeddings and position tables N(0, (5/sqrt(D))^2), Dense weights
  //              N(0, 1/fan_in) and zero biases (the paper's released code)
  // Either way the residual branches' output projections and the logits layer start at zero.
  Init init = Init::pytorch;
  // separate: the outer and inner decoders each add their own position tables; shared: both add
  // the same ones (the paper's released code). The channel encoder keeps its own.
  Positions positions = Positions::separate;
  // > 0: every attention layer also scores each query against a learned embedding of its distance
  // to the key along the line, clipped at this many positions (Shaw et al.; nn/relative.h), on top
  // of the position tables. 0: the position tables alone.
  int64_t relative = 0;
  Attention attention = Attention::axial;     // or full, local1d, local2d (above)
  int64_t local_length = 112;                 // local1d: pixels in a block (112: four rows of 28)
  int64_t local_rows = 7, local_columns = 7;  // local2d: a block's rows and columns

  bool axial() const { return attention == Attention::axial; }
  // A raster model's blocks run on a grid of [rows, columns] in raster order: [1, H W] (full,
  // local1d) or [H, W] (local2d); local attention's query blocks on it are [rows, columns]:
  // [1, local_length] or [local_rows, local_columns].
  std::array<int64_t, 2> raster_grid() const;
  std::array<int64_t, 2> local_block() const;
  void validate() const;            // throws axiom::Error("[config] ...") naming the bad key and value
  void validate_attention() const;  // the keys of the decoder's attention, and what they rule out
  std::string to_json() const;
};

// The configs' range check: an Error("config", "<key> must be in [low, high], got <value>") unless
// low <= value <= high (every model's config uses it).
void check_in_range(const char* key, int64_t value, int64_t low, int64_t high);

// "tiny" (D=64, 4 heads, L_upper=2, L_row=2), "small" (D=128, 4 heads, 4, 4), "medium" (D=256, 8 heads, 8, 4),
// all for 28 x 28 single-channel images with feed-forward width 4D; and small's size with the
// other decoders, for the comparison in the README: "small-full", "small-local1d", "small-local2d"
// (8 masked blocks each), and "small-relative" (relative positions clipped at 16).
ImageModelConfig preset(const std::string& name);
// The presets' names, for messages and help texts: "tiny, small, medium, ..." (one table, config.cpp).
std::string preset_names();
// A preset name, or a path to a JSON file; unknown keys are errors.
ImageModelConfig load_config(const std::string& name_or_path);
ImageModelConfig config_from_json(const std::string& text, const std::string& origin);

}  // namespace axiom::models
