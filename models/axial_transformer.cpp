#include "models/axial_transformer.h"

#include <cmath>

#include "autograd/checkpoint.h"
#include "autograd/factory.h"
#include "core/error.h"

namespace axiom::models {

namespace {
constexpr int64_t kValues = 256;
constexpr int64_t kRowAxis = 2, kColumnAxis = 1;  // on [B, H, W, D]: attend along W (rows) or H (columns)
// Each example's own channel: all [B, C, H, W], channel [B] -> [B, H, W].
Tensor channel_of_each(const Tensor& all, const Tensor& channel) {
  const int64_t b = all.size(0);
  const Tensor pick = channel.reshape({b, 1, 1, 1}).expand({b, 1, all.size(2), all.size(3)}).contiguous();
  return gather(all, 1, pick).squeeze(1);
}
}  // namespace

double Likelihood::bits_per_dim() const { return nats / static_cast<double>(count) / std::log(2.0); }

AxialTransformer::AxialTransformer(const AxialTransformerConfig& config, Generator& gen) : config_(config) {
  config_.validate();
  const int64_t d = config_.features;
  const Shape grid{config_.height, config_.width};
  const bool authors = config_.init == Init::authors;  // the initial values (config.h)
  const double embedding_std = authors ? 5 / std::sqrt(static_cast<double>(d)) : 1.0;
  const double position_std = authors ? embedding_std : 0.02;
  auto positions = [&] { return std::make_shared<nn::FactorizedPositionEmbedding>(grid, d, gen, position_std); };
  nn::BlockOptions block{.heads = config_.heads, .ff_multiple = config_.ff_multiple, .output_init_scale = 0,
                         .init = authors ? nn::DenseInit::normal : nn::DenseInit::uniform,
                         .relative_distance = config_.relative};
  nn::BlockOptions masked = block;
  masked.masked = true;

  embedding_ = register_module("embedding", std::make_shared<nn::Embedding>(kValues, d, gen, embedding_std));
  if (config_.axial()) {
    outer_position_ = register_module("outer_position", positions());
    outer_ = register_module("outer", std::make_shared<nn::ModuleList<nn::TransformerBlock>>());
    for (int64_t i = 0; i < config_.upper_layers / 2; ++i) {
      outer_->push_back(std::make_shared<nn::TransformerBlock>(d, kRowAxis, gen, block));       // unmasked row
      outer_->push_back(std::make_shared<nn::TransformerBlock>(d, kColumnAxis, gen, masked));   // masked column
    }
    inner_position_ = config_.positions == Positions::shared ? outer_position_ : register_module("inner_position", positions());
    if (config_.inner == Inner::lstm) {
      inner_lstm_ = register_module("inner_lstm", std::make_shared<nn::LSTM>(d, d, gen));
    } else {
      inner_ = register_module("inner", std::make_shared<nn::ModuleList<nn::TransformerBlock>>());
      for (int64_t i = 0; i < config_.row_layers; ++i) inner_->push_back(std::make_shared<nn::TransformerBlock>(d, kRowAxis, gen, masked));
    }
  } else {
    build_raster(masked, position_std, gen);
  }
  if (config_.channels > 1) {
    channel_values_ = register_module("channel_values", std::make_shared<nn::Embedding>(config_.channels * kValues, d, gen, embedding_std));
    channel_marker_ = register_module("channel_marker", std::make_shared<nn::Embedding>(config_.channels, d, gen, embedding_std));
    encoder_position_ = register_module("encoder_position", positions());
    encoder_ = register_module("encoder", std::make_shared<nn::ModuleList<nn::TransformerBlock>>());
    for (int64_t i = 0; i < config_.encoder_layers; ++i) {
      encoder_->push_back(std::make_shared<nn::TransformerBlock>(d, i % 2 == 0 ? kRowAxis : kColumnAxis, gen, block));
    }
  }
  final_norm_ = register_module("final_norm", std::make_shared<nn::LayerNorm>(d));
  logits_ = register_module("logits", std::make_shared<nn::Dense>(d, kValues, gen, nn::DenseOptions{.init_scale = 0}));
  dropout_ = register_module("dropout", std::make_shared<nn::Dropout>(config_.dropout, gen));
}

// A raster model's decoder: its position tables, and upper_layers + row_layers masked blocks whose
// attention runs along the last axis of the grid (the raster order), whole or local (config.h).
void AxialTransformer::build_raster(nn::BlockOptions masked, double position_std, Generator& gen) {
  const int64_t d = config_.features;
  raster_position_ = register_module(
      "position", std::make_shared<nn::FactorizedPositionEmbedding>(Shape{config_.height, config_.width}, d, gen, position_std));
  if (config_.attention != Attention::full) masked.local = {.rows = config_.local_block()[0], .columns = config_.local_block()[1]};
  raster_ = register_module("blocks", std::make_shared<nn::ModuleList<nn::TransformerBlock>>());
  for (int64_t i = 0; i < config_.upper_layers + config_.row_layers; ++i) {
    raster_->push_back(std::make_shared<nn::TransformerBlock>(d, /*axis=*/-2, gen, masked));
  }
}

void AxialTransformer::check_pixel(const char* method, const char* name, const Tensor& z) const {
  if (z.dim() != 2 || z.size(1) != config_.features) {
    throw Error("AxialTransformer", method, " takes one pixel of each image, ", name, " [B, ", config_.features, "], got ", z.shape());
  }
}

void AxialTransformer::require(bool axial, const char* method) const {
  if (config_.axial() == axial) return;
  throw Error("AxialTransformer", method, " is a piece of ", axial ? "the axial decoder" : "the raster models' decoder",
              "; this model's attention is \"", name_of(config_.attention), "\"");
}

Tensor AxialTransformer::as_channels(const Tensor& images) const {
  const Shape& s = images.shape();
  const bool single = images.dim() == 3 && config_.channels == 1;
  const bool multi = images.dim() == 4 && s[1] == config_.channels;
  if (!(single || multi) || s[images.dim() - 2] != config_.height || s[images.dim() - 1] != config_.width) {
    throw Error("AxialTransformer", "images must be [B, ", config_.height, ", ", config_.width, "] or [B, ", config_.channels,
                ", ", config_.height, ", ", config_.width, "], got ", s);
  }
  if (images.dtype() != Dtype::uint8 && images.dtype() != Dtype::int64) {
    throw Error("AxialTransformer", "images must be uint8 or int64 values in [0, 255], got ", images.dtype());
  }
  const Tensor shaped = single ? images.unsqueeze(1) : images;
  if (images.dtype() == Dtype::int64 && images.numel() > 0) {  // read where the images are (uint8 needs no check)
    const double low = min(shaped).item(), high = max(shaped).item();
    if (low < 0 || high > 255) throw Error("AxialTransformer", "pixel values must be in [0, 255], got ", low, " to ", high);
  }
  return shaped.to(device()).to(Dtype::int64);
}

Device AxialTransformer::device() const { return logits_->weight.device(); }

Tensor AxialTransformer::embed(const Tensor& values) const { return embedding_->forward(values); }

// Context for generating `channel` (per example) from the channels before it:
//   sum over k < c of ChannelValues_k(x_k) + ChannelMarker(c) + positions, then the encoder blocks.
Tensor AxialTransformer::encode(const Tensor& images, const Tensor& channel) const {
  if (config_.channels == 1) return {};
  const int64_t b = images.size(0), c = config_.channels;
  const Tensor which = axiom::arange(c, images.device()).reshape({1, c, 1, 1});                 // [1, C, 1, 1]
  const Tensor values = channel_values_->forward(add(images, mul(which, kValues)));     // [B, C, H, W, D]: value + 256 k
  const Tensor earlier = lt(which.reshape({1, c}), channel.reshape({b, 1}));             // [B, C]: k < c_b
  const Tensor keep = earlier.to(values.dtype()).reshape({b, c, 1, 1, 1});
  Tensor context = sum(mul(values, keep), {1});                                       // [B, H, W, D]
  context = add(context, channel_marker_->forward(channel).reshape({b, 1, 1, config_.features}));
  context = encoder_position_->forward(context);
  context = run_blocks(*encoder_, context, 0);
  return context;
}

Tensor AxialTransformer::outer(const Tensor& h, const Tensor& context) const {
  require(true, "outer");
  Tensor u = outer_position_->forward(h);
  if (context.defined()) u = add(u, context);
  u = dropout_->forward(u);
  u = run_blocks(*outer_, u, encoder_blocks());  // forward order: the encoder's blocks come first
  return u;
}

OuterRowState AxialTransformer::start_outer_rows() const {
  require(true, "start_outer_rows");
  OuterRowState state;
  state.caches.assign(outer_->size() / 2, nn::AttentionCache(config_.height));
  return state;
}

Tensor AxialTransformer::outer_step(const Tensor& h_row, const Tensor& context_row, OuterRowState& state) const {
  require(true, "outer_step");
  const int64_t i = state.rows, d = config_.features;
  if (h_row.dim() != 3 || h_row.size(1) != config_.width || h_row.size(2) != d) {
    throw Error("AxialTransformer", "outer_step takes one row of each image, h_row [B, ", config_.width, ", ", d, "], got ", h_row.shape());
  }
  if (i >= config_.height) throw Error("AxialTransformer", "outer_step: all ", config_.height, " rows have been stepped");
  const int64_t b = h_row.size(0), w = config_.width;
  Tensor u = add(h_row, outer_position_->embeddings().select(0, i));  // [B, W, D] + [W, D]
  if (context_row.defined()) u = add(u, context_row);
  u = dropout_->forward(u);
  for (size_t k = 0; k < outer_->size(); ++k) {
    const nn::TransformerBlock& block = (*outer_)[k];
    if (k % 2 == 0) {  // unmasked row block: the row alone, as a batch of one-row images [B, 1, W, D]
      u = block.forward(u.unsqueeze(1)).squeeze(1);
    } else {           // masked column block: B * W columns, one step down each
      u = block.forward_step(u.reshape({b * w, d}), state.caches[k / 2]).reshape({b, w, d});
    }
  }
  state.rows = i + 1;
  return u;
}

// Dense_256(LayerNorm(z)) in one op that keeps z, not LayerNorm(z), for the backward pass: [..., D] -> [..., 256]
Tensor AxialTransformer::logits_of(const Tensor& z) const {
  return layer_norm_linear(z, final_norm_->weight, final_norm_->bias, final_norm_->eps, logits_->weight, logits_->bias);
}

Tensor AxialTransformer::inner_position(int64_t first_row, int64_t rows) const {
  require(true, "inner_position");
  return inner_position_->embeddings().narrow(0, first_row, rows);
}

Tensor AxialTransformer::inner(const Tensor& z_in) const {
  require(true, "inner");
  Tensor z = dropout_->forward(z_in);
  if (inner_lstm_) {  // one LSTM along every row: [B, R, W, D] -> [B*R, W, D] -> back
    const Shape shape = z.shape();
    z = inner_lstm_->forward(z.reshape({shape[0] * shape[1], shape[2], shape[3]})).first.reshape(shape);
  } else {
    z = run_blocks(*inner_, z, encoder_blocks() + static_cast<int64_t>(outer_->size()));
  }
  return logits_of(z);
}

InnerRowState AxialTransformer::start_inner_row() const {
  require(true, "start_inner_row");
  InnerRowState state;
  if (inner_) state.caches.assign(inner_->size(), nn::AttentionCache(config_.width));
  return state;
}

Tensor AxialTransformer::inner_step(const Tensor& z_j, InnerRowState& state) const {
  require(true, "inner_step");
  check_pixel("inner_step", "z_j", z_j);
  Tensor z = dropout_->forward(z_j);  // [B, D]
  if (inner_lstm_) {
    state.lstm = inner_lstm_->step(z, state.lstm);  // one LSTM step along the row
    z = state.lstm.h;
  } else {
    for (size_t k = 0; k < inner_->size(); ++k) z = (*inner_)[k].forward_step(z, state.caches[k]);
  }
  return logits_of(z);  // [B, 256]
}

Tensor AxialTransformer::logits(const Tensor& images, const Tensor& channel) const { return logits_of_values(as_channels(images), channel); }

Tensor AxialTransformer::logits_of_values(const Tensor& all, const Tensor& channel) const {
  const int64_t b = all.size(0);
  if (channel.dtype() != Dtype::int64 || channel.shape() != Shape{b}) {
    throw Error("AxialTransformer", "channel must be int64 [", b, "], got ", channel.dtype(), " ", channel.shape());
  }
  const Tensor on_device = channel.to(all.device());
  return decode(embed(channel_of_each(all, on_device)), encode(all, on_device));
}

Tensor AxialTransformer::decode(const Tensor& h, const Tensor& context) const {
  if (!config_.axial()) return decode_raster(h, context);
  const Tensor u = outer(h, context);
  const Tensor z = add(add(nn::shift_right(h), nn::shift_down(u)), inner_position(0, config_.height));
  return inner(z);
}

// A raster model: z = ShiftRaster(h) + positions (+ context), the blocks on the grid, the logits.
//   h [B, H, W, D] -> logits [B, H, W, 256]; ShiftRaster gives pixel t the embedding of pixel t - 1.
Tensor AxialTransformer::decode_raster(const Tensor& h, const Tensor& context) const {
  const int64_t b = h.size(0), d = config_.features, pixels = config_.height * config_.width;
  const auto [grid_rows, grid_columns] = config_.raster_grid();
  Tensor z = nn::shift_right(h.reshape({b, 1, pixels, d})).reshape(h.shape());  // [B, H, W, D]
  z = raster_position_->forward(z);
  if (context.defined()) z = add(z, context);
  z = dropout_->forward(z);
  z = run_blocks(*raster_, z.reshape({b, grid_rows, grid_columns, d}), encoder_blocks());  // [B, grid, D]
  return logits_of(z).reshape({b, config_.height, config_.width, kValues});
}

Tensor AxialTransformer::positions() const {
  require(false, "positions");
  return raster_position_->embeddings();
}

RasterState AxialTransformer::start_raster() const {
  require(false, "start_raster");
  RasterState state;
  state.caches.assign(raster_->size(), nn::AttentionCache(config_.height * config_.width, config_.raster_grid()[1]));
  return state;
}

Tensor AxialTransformer::raster_step(const Tensor& z_t, RasterState& state) const {
  require(false, "raster_step");
  check_pixel("raster_step", "z_t", z_t);
  Tensor z = dropout_->forward(z_t);  // [B, D]
  for (size_t k = 0; k < raster_->size(); ++k) z = (*raster_)[k].forward_step(z, state.caches[k]);
  return logits_of(z);  // [B, 256]
}

Tensor AxialTransformer::loss(const Tensor& images, Generator& gen) const {
  const Tensor all = as_channels(images);
  const int64_t b = all.size(0);
  const Tensor channel = config_.channels == 1 ? axiom::zeros({b}, Dtype::int64, all.device())
                                               : axiom::randint({b}, 0, config_.channels, gen, all.device());
  const Tensor targets = channel_of_each(all, channel);
  return div(cross_entropy(logits_of_values(all, channel), targets), std::log(2.0));  // nats -> bits
}

// --- memory ---------------------------------------------------------------------------------------

void AxialTransformer::set_checkpoint_blocks(int64_t blocks) {
  if (blocks < 0) throw Error("AxialTransformer", "checkpoint_blocks must be >= 0, got ", blocks);
  checkpoint_blocks_ = blocks;
}

int64_t AxialTransformer::encoder_blocks() const { return encoder_ ? static_cast<int64_t>(encoder_->size()) : 0; }

int64_t AxialTransformer::block_count() const {
  auto size = [](const auto& blocks) { return blocks ? static_cast<int64_t>(blocks->size()) : 0; };
  return encoder_blocks() + size(outer_) + size(inner_) + size(raster_);
}

Tensor AxialTransformer::run_blocks(const nn::ModuleList<nn::TransformerBlock>& blocks, Tensor x, int64_t first) const {
  for (size_t i = 0; i < blocks.size(); ++i) {
    const std::shared_ptr<nn::TransformerBlock>& block = blocks.at(i);
    if (first + static_cast<int64_t>(i) >= checkpoint_blocks_) {
      x = block->forward(x);
    } else {  // blocks draw no random numbers (dropout acts on the decoders' inputs, outside them): no generator
      x = checkpoint([block](const Tensor& input) { return block->forward(input); }, x, block->parameters());
    }
  }
  return x;
}

Likelihood AxialTransformer::evaluate(const Tensor& images) const {
  NoGrad no_grad;
  const Tensor all = as_channels(images);
  const int64_t b = all.size(0);
  Likelihood total;
  for (int64_t c = 0; c < config_.channels; ++c) {
    const Tensor channel = axiom::full({b}, static_cast<double>(c), Dtype::int64, all.device());
    const Tensor targets = all.select(1, c).contiguous();
    total.nats += cross_entropy(logits_of_values(all, channel), targets, {.reduction = Reduction::sum}).item();
    total.count += targets.numel();
  }
  return total;
}

}  // namespace axiom::models
