// The decoder-only Transformers over the pixels in raster order that the Axial Transformer paper
// compares with (config.h, "attention" full, local1d or local2d):
//
//   h = Embed(x)                                                    [B, H, W, D]
//   z = ShiftRaster(h) + PositionEmbeddings (+ the channel encoder's context)
//   z = MaskedTransformerBlock(z)  x (upper_layers + row_layers)    (the same depth as the axial model)
//   logits = Dense_256(LayerNorm(z))                                [B, H, W, 256]
//
// ShiftRaster gives pixel t = i W + j the embedding of pixel t - 1 (zeros at t = 0), which makes
// the model strictly causal with inclusive masks. Each block's masked attention runs on a grid in
// raster order (ImageModelConfig::raster_grid): over every pixel before it ("full"), or over local
// blocks ("local1d", "local2d"; nn/local.h).
//
// The embedding, the channel encoder, the logits, the loss and the likelihood are every image
// model's (image_model.h); this class is the decoder, and its step for the fast sampler.
#pragma once

#include "image_model.h"

namespace axiom::models {

// What a raster model remembers, while sampling, of the pixels already drawn: a key/value cache for
// each block, over the H W pixels in raster order.
struct RasterState {
  std::vector<nn::AttentionCache> caches;
};

class RasterTransformer : public ImageModel {
 public:
  // config.attention must be "full", "local1d" or "local2d" (make_image_model picks the class).
  RasterTransformer(const ImageModelConfig& config, Generator& gen);
  const char* name() const override { return "RasterTransformer"; }

  // h [B, H, W, D] (and the encoder's context) -> logits [B, H, W, 256].
  Tensor decode(const Tensor& h, const Tensor& context) const override;
  // Each pixel through every block once, with a key/value cache of the pixels before it.
  std::unique_ptr<PixelDecoder> start_decoding(const Tensor& images, int64_t channel) const override;

  // --- the pieces, for the sampler and its tests --------------------------------------------------
  Tensor positions() const;  // [H, W, D]: what the decoder adds at each pixel
  // The decoder one pixel at a time in raster order (under NoGrad): take a fresh state for each
  // image, then step t = i W + j = 0, 1, ... with z_t [B, D], the decoder's input at pixel (i, j):
  // the embedding of pixel t - 1 (zeros at t = 0) + positions()[i][j] (+ the context there).
  // Returns pixel t's logits [B, 256], what decode() gives there, attending over cached pixels.
  RasterState start_raster() const;
  Tensor raster_step(const Tensor& z_t, RasterState& state) const;

 private:
  int64_t decoder_blocks() const override { return static_cast<int64_t>(blocks_->size()); }

  std::shared_ptr<nn::FactorizedPositionEmbedding> position_;
  std::shared_ptr<nn::ModuleList<nn::TransformerBlock>> blocks_;
};

}  // namespace axiom::models
