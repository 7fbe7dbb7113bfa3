#include "models/raster_transformer.h"

#include "autograd/factory.h"
#include "core/error.h"

namespace axiom::models {

namespace {
constexpr int64_t kValues = 256;
}  // namespace

RasterTransformer::RasterTransformer(const ImageModelConfig& config, Generator& gen) : ImageModel(config, gen) {
  const ImageModelConfig& c = this->config();
  if (c.axial())
    throw Error("RasterTransformer",
                "attention must be \"full\", \"local1d\" or \"local2d\", got \"axial\" (an AxialTransformer; "
                "make_image_model picks the class)");
  nn::BlockOptions masked = block_options(true);
  if (c.attention != Attention::full) masked.local = {.rows = c.local_block()[0], .columns = c.local_block()[1]};
  position_ = register_module("position", make_positions(gen));
  blocks_ = register_module("blocks", std::make_shared<nn::ModuleList<nn::TransformerBlock>>());
  for (int64_t i = 0; i < c.upper_layers + c.row_layers; ++i) {
    blocks_->push_back(
        std::make_shared<nn::TransformerBlock>(c.features, /*axis=*/-2, gen, masked));  // along the grid's last axis
  }
  add_encoder_and_logits(gen);
}

// z = ShiftRaster(h) + positions (+ context), the blocks on the grid, the logits.
//   h [B, H, W, D] -> logits [B, H, W, 256]
Tensor RasterTransformer::decode(const Tensor& h, const Tensor& context) const {
  const ImageModelConfig& c = config();
  const int64_t b = h.size(0), d = c.features, pixels = c.height * c.width;
  const auto [grid_rows, grid_columns] = c.raster_grid();
  Tensor z = nn::shift_right(h.reshape({b, 1, pixels, d})).reshape(h.shape());  // [B, H, W, D]
  z = position_->forward(z);
  if (context.defined()) z = add(z, context);
  z = dropout(z);
  z = run_blocks(*blocks_, "blocks", z.reshape({b, grid_rows, grid_columns, d}), encoder_blocks());  // [B, grid, D]
  return logits_of(z).reshape({b, c.height, c.width, kValues});
}

Tensor RasterTransformer::positions() const { return position_->embeddings(); }

RasterState RasterTransformer::start_raster() const {
  RasterState state;
  state.caches.assign(blocks_->size(), nn::AttentionCache(config().height * config().width, config().raster_grid()[1]));
  return state;
}

Tensor RasterTransformer::raster_step(const Tensor& z_t, RasterState& state) const {
  check_pixel("raster_step", "z_t", z_t);
  Tensor z = dropout(z_t);  // [B, D]
  for (size_t k = 0; k < blocks_->size(); ++k) z = (*blocks_)[k].forward_step(z, state.caches[k]);
  return logits_of(z);  // [B, 256]
}

namespace {

// One channel of N images, pixel by pixel in raster order, each pixel through every block once
// with a key/value cache of the pixels before it. The decoder's input at pixel t = (i, j):
//   z_t = embedding of pixel t - 1 (zeros at t = 0) + positions[i][j] (+ the context at (i, j)).
class RasterPixelDecoder : public PixelDecoder {
 public:
  RasterPixelDecoder(const RasterTransformer& model, const Tensor& images, int64_t channel)
      : model_(model),
        config_(model.config()),
        values_(images.select(1, channel)),  // [N, H, W], a view: fills in as the sampler draws
        context_(model.encode_channel(images, channel)),
        positions_(model.positions()),
        state_(model.start_raster()) {}

  Tensor next() override {  // the logits [N, 256] of pixel t_ = (i, j)
    const int64_t i = t_ / config_.width, j = t_ % config_.width;
    if (i >= config_.height) throw Error(model_.name(), "start_decoding: every pixel of the channel has been decoded");
    Tensor z = positions_.select(0, i).select(0, j);  // [D]
    if (t_ > 0) {
      const int64_t before = t_ - 1;
      z = add(model_.embed(values_.select(1, before / config_.width).select(1, before % config_.width).contiguous()),
              z);
    } else {
      z = z.unsqueeze(0).expand({values_.size(0), config_.features}).contiguous();  // [N, D]
    }
    if (context_.defined()) z = add(z, context_.select(1, i).select(1, j));
    ++t_;
    return model_.raster_step(z, state_);
  }

 private:
  const RasterTransformer& model_;
  const ImageModelConfig& config_;
  Tensor values_, context_, positions_;
  RasterState state_;
  int64_t t_ = 0;  // the next pixel, i W + j
};

}  // namespace

std::unique_ptr<PixelDecoder> RasterTransformer::start_decoding(const Tensor& images, int64_t channel) const {
  return std::make_unique<RasterPixelDecoder>(*this, images, channel);
}

}  // namespace axiom::models
