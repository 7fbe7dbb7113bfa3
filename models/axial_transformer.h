// The Axial Transformer (Ho et al., 2019, section 3.2): an autoregressive model of images whose
// pixels take 256 values, in raster order, channel after channel.
//
//   h = Embed(x)                                                   [B, H, W, D]
//   u = h + PositionEmbeddings (+ the channel encoder's context)
//   u = MaskedTransformerBlock_1(TransformerBlock_2(u))  x L_upper/2      (the outer decoder)
//   z = ShiftRight(h) + ShiftDown(u) + PositionEmbeddings
//   z = MaskedTransformerBlock_2(z)  x L_row                          (the inner decoder; or one LSTM)
//   logits = Dense_256(LayerNorm(z))                               [B, H, W, 256]
//
// Masks are inclusive; the two shifts make the model strictly causal: the logits of pixel (i, j)
// see rows above i through ShiftDown(u) and pixels left of j through ShiftRight(h).
// The embedding, the channel encoder (section 3.2.2), the logits, the loss and the likelihood are
// every image model's (image_model.h); this class is the two decoders, and their steps for the
// semi-parallel sampler.
#pragma once

#include "image_model.h"

namespace axiom::models {

// What the inner decoder remembers, while sampling, of the pixels already drawn on the current row:
// a key/value cache for each masked row block, or the LSTM's state.
struct InnerRowState {
  std::vector<nn::AttentionCache> caches;  // one per inner block, room for W positions each
  nn::LSTMState lstm;                      // undefined before the first pixel (zeros)
};

// What the outer decoder remembers, while sampling, of the rows already drawn: a key/value cache
// for each masked column block, over the N * W columns of the batch.
struct OuterRowState {
  std::vector<nn::AttentionCache> caches;  // one per masked column block, room for H rows each
  int64_t rows = 0;                        // rows stepped so far
};

class AxialTransformer : public ImageModel {
 public:
  // config.attention must be "axial" (make_image_model picks the class from the config).
  AxialTransformer(const ImageModelConfig& config, Generator& gen);
  const char* name() const override { return "AxialTransformer"; }

  // Everything after the embedding: h [B, H, W, D] (and the encoder's context) -> logits [B, H, W, 256].
  Tensor decode(const Tensor& h, const Tensor& context) const override;
  // The semi-parallel sampler (section 3.2.1): the outer decoder once per row, the inner once per pixel.
  std::unique_ptr<PixelDecoder> start_decoding(const Tensor& images, int64_t channel) const override;

  // --- the pieces, for the sampler and its tests --------------------------------------------------
  Tensor outer(const Tensor& h, const Tensor& context) const;  // u before its shift
  // The inner decoder on whole rows: z [B, R, W, D], its input (ShiftRight(h) + ShiftDown(u) +
  // positions, for R rows of the image) -> logits [B, R, W, 256]. Each row is decoded on its own.
  Tensor inner(const Tensor& z) const;
  Tensor inner_position(int64_t first_row, int64_t rows) const;  // [rows, W, D]
  // The inner decoder one pixel at a time along a row, for sampling (under NoGrad): take a fresh
  // state for each row, then step j = 0, 1, ..., W-1 with z_j [B, D], pixel j's inner decoder input
  // (ShiftRight(h) + ShiftDown(u) + positions). Returns pixel j's logits [B, 256], those that
  // inner() gives for pixel j of the whole row, at O(j) cost instead of O(W^2).
  InnerRowState start_inner_row() const;
  Tensor inner_step(const Tensor& z_j, InnerRowState& state) const;
  // The outer decoder one row at a time, for sampling (under NoGrad): take a fresh state for each
  // image, then step i = 0, 1, ..., H-1 with row i of h [B, W, D] (and of the encoder's context,
  // or undefined). Returns row i of u [B, W, D], what outer() gives for row i of the whole image:
  // the row blocks see the row alone, the masked column blocks attend over the cached rows 0..i.
  // Each row costs one row's work instead of re-running the outer decoder on the whole image.
  OuterRowState start_outer_rows() const;
  Tensor outer_step(const Tensor& h_row, const Tensor& context_row, OuterRowState& state) const;

 private:
  int64_t decoder_blocks() const override;

  std::shared_ptr<nn::FactorizedPositionEmbedding> outer_position_, inner_position_;
  std::shared_ptr<nn::ModuleList<nn::TransformerBlock>> outer_, inner_;
  std::shared_ptr<nn::LSTM> inner_lstm_;
};

}  // namespace axiom::models
